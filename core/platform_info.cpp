// core/platform_info.h.
#include "core/platform_info.h"

#include <unistd.h>

#include <fstream>
#include <string>

namespace tw {
namespace {

// "folder/file" of a mapped library path: "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"
// → file "libblas.so.3", folder "openblas-pthread".
void split_path(const std::string& path, std::string& file, std::string& folder) {
    const size_t slash = path.find_last_of('/');
    file = slash == std::string::npos ? path : path.substr(slash + 1);
    folder.clear();
    if (slash != std::string::npos && slash > 0) {
        const size_t prev = path.find_last_of('/', slash - 1);
        folder = path.substr(prev == std::string::npos ? 0 : prev + 1, slash - (prev == std::string::npos ? 0 : prev + 1));
    }
}

}  // namespace

std::string blas_from_maps(std::istream& maps) {
    std::string line, generic, specific;
    while (std::getline(maps, line)) {
        const size_t at = line.find('/');
        if (at == std::string::npos) continue;
        const std::string path = line.substr(at);
        std::string file, folder;
        split_path(path, file, folder);
        const bool impl = file.find("openblas") != std::string::npos || file.find("mkl_core") != std::string::npos ||
                          file.find("libblis") != std::string::npos || file.find("atlas") != std::string::npos;
        if (impl && specific.empty()) specific = file + " (" + folder + ")";
        if (!impl && generic.empty() && file.rfind("libblas.so", 0) == 0) generic = file + " (" + folder + ")";
    }
    return specific.empty() ? generic : specific;
}

PlatformInfo this_platform() {
    PlatformInfo p;
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
        if (line.rfind("model name", 0) != 0) continue;
        const size_t colon = line.find(':');
        if (colon != std::string::npos) p.cpu = line.substr(line.find_first_not_of(" \t", colon + 1));
        break;
    }
    p.logical_cpus = static_cast<int64_t>(sysconf(_SC_NPROCESSORS_ONLN));
    std::ifstream maps("/proc/self/maps");
    p.blas = blas_from_maps(maps);
    return p;
}

std::string printable_label(const std::string& text, size_t max) {
    std::string out = text.substr(0, max);
    for (char& c : out)
        if (c < 0x20 || c > 0x7e) c = '?';
    return out;
}

}  // namespace tw
