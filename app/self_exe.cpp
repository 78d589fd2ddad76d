// Where this process's executable lies; see self_exe.h.
#include "app/self_exe.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tw::cli {

Result<std::string> this_executable() {
    char buf[4096] = {};
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return Result<std::string>::error(std::string("cannot find this executable's path: ") + std::strerror(errno));
    return std::string(buf, static_cast<size_t>(n));
}

Result<std::string> beside_this_executable(const std::string& name) {
    auto self = this_executable();
    if (!self) return self;
    return self->substr(0, self->find_last_of('/') + 1) + name;
}

}  // namespace tw::cli
