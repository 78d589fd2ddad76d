// Data root resolution; see data_root.h.
#include "core/data_root.h"

#include <filesystem>
#include <system_error>

namespace tw {

namespace fs = std::filesystem;

Result<std::string> resolve_node_data_root(const std::string& given) {
    using R = Result<std::string>;
    const fs::path p = given.empty() ? fs::path(kDefaultDataRoot) : fs::path(given);
    std::error_code ec;
    fs::create_directories(p, ec);
    if (ec) return R::error("data root " + p.string() + ": cannot create it (" + ec.message() + ")");
    const fs::path canon = fs::canonical(p, ec);
    if (ec) return R::error("data root " + p.string() + ": " + ec.message());
    if (!fs::is_directory(canon)) return R::error("data root " + canon.string() + " is not a directory");
    return canon.string();
}

}  // namespace tw
