#include "storage/run_folder.h"

#include <filesystem>

namespace tw {

std::string run_folder(const std::string& store_path, int64_t run_id) {
    if (store_path.empty() || store_path == ":memory:" || store_path.rfind("file:", 0) == 0) return "";
    std::error_code ec;
    const auto abs = std::filesystem::absolute(store_path, ec);
    return (ec ? store_path : abs.lexically_normal().string()) + ".d/run-" + std::to_string(run_id);
}

bool run_has_model(const std::string& store_path, int64_t run_id) {
    const std::string dir = run_folder(store_path, run_id);
    std::error_code ec;
    return !dir.empty() && std::filesystem::is_regular_file(dir + "/" + kRunModelFile, ec);
}

}  // namespace tw
