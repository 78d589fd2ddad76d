// core/output_file.h: a temporary file beside the target, moved into place when complete.
#include "core/output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace tw {

Status write_output_file(const std::string& path, Overwrite overwrite,
                         const std::function<Status(std::ostream&)>& write) {
    struct stat info {};
    const bool exists = ::stat(path.c_str(), &info) == 0;
    if (exists && S_ISDIR(info.st_mode)) return Status::error(path + " is a directory");
    if (exists && overwrite == Overwrite::kRefuse)
        return Status::error(path + " exists; --force replaces it");
    static std::atomic<unsigned> serial{0};
    const std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
    Status result = Status::ok();
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) return Status::error("cannot write " + path + ": " + std::strerror(errno));
        result = write(out);
        out.flush();
        if (result && !out) result = Status::error("cannot write " + path + ": the write failed (disk full?)");
    }
    if (result) {
        if (overwrite == Overwrite::kReplace) {
            if (std::rename(tmp.c_str(), path.c_str()) != 0)
                result = Status::error("cannot write " + path + ": " + std::strerror(errno));
        } else if (::link(tmp.c_str(), path.c_str()) != 0) {  // fails rather than replace a file
            result = Status::error(errno == EEXIST ? path + " exists; --force replaces it"
                                                   : "cannot write " + path + ": " + std::strerror(errno));
        }
    }
    ::unlink(tmp.c_str());  // after link() the target keeps the content; after rename() it is gone
    return result;
}

}  // namespace tw
