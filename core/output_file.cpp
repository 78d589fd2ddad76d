// core/output_file.h: a temporary file beside the target, moved into place when complete; never the run store.
#include "core/output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <vector>

namespace tw {
namespace {

// The files SQLite keeps for a database, as suffixes of its path (sqlite.org/tempfiles.html): the
// write-ahead log and its shared-memory index in WAL mode, the rollback journal otherwise.
constexpr const char* kSqliteSuffixes[] = {"", "-wal", "-shm", "-journal"};
constexpr int kMaxLinks = 40;  // symlink hops, as Linux allows before ELOOP

struct Identity {
    dev_t dev = 0;
    ino_t ino = 0;
    bool operator==(const Identity& o) const { return dev == o.dev && ino == o.ino; }
};

// Device and inode of the file `p` names (symlinks followed); none when it does not exist.
std::optional<Identity> identity(const std::string& p) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return std::nullopt;
    return Identity{st.st_dev, st.st_ino};
}

std::string without_trailing_slashes(std::string p) {
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    return p;
}

std::string folder_of(const std::string& p) {
    const size_t slash = p.find_last_of('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : p.substr(0, slash);
}

std::string name_of(const std::string& p) {
    const size_t slash = p.find_last_of('/');
    return slash == std::string::npos ? p : p.substr(slash + 1);
}

// Follows `p` while it is a symlink, so a dangling link names the place where writing through it
// would create its target.
std::string follow_links(std::string p) {
    for (int hop = 0; hop < kMaxLinks; ++hop) {
        struct stat st {};
        if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
        std::vector<char> buf(PATH_MAX + 1);
        const ssize_t n = ::readlink(p.c_str(), buf.data(), buf.size() - 1);
        if (n <= 0) return p;
        std::string to(buf.data(), static_cast<size_t>(n));
        p = to.front() == '/' ? to : folder_of(p) + "/" + to;
    }
    return p;
}

// Where a path leads whether or not the file exists: its folder's identity and its name.
struct Place {
    Identity folder;
    std::string name;
    bool operator==(const Place& o) const { return folder == o.folder && name == o.name; }
};

std::optional<Place> place_of(const std::string& path) {
    const std::string p = follow_links(without_trailing_slashes(path));
    const std::string name = name_of(p);
    if (name.empty() || name == "." || name == "..") return std::nullopt;  // a folder: identity() decides
    auto folder = identity(folder_of(p));
    if (!folder) return std::nullopt;
    return Place{*folder, name};
}

// The database and the files SQLite keeps beside it, under the path given and under the real path
// (SQLite resolves a symlinked database and puts its -wal beside the file the link points to).
std::vector<std::string> store_files(const std::string& store_path) {
    std::vector<std::string> bases{store_path};
    if (char* real = ::realpath(store_path.c_str(), nullptr)) {
        if (store_path != real) bases.emplace_back(real);
        std::free(real);
    }
    std::vector<std::string> files;
    for (const std::string& base : bases)
        for (const char* suffix : kSqliteSuffixes) files.push_back(base + suffix);
    return files;
}

}  // namespace

Status check_output_target(const std::string& target, const std::string& store_path) {
    if (store_path.empty() || store_path == ":memory:" || target.empty()) return Status::ok();
    const std::optional<Identity> target_id = identity(target);
    const std::optional<Place> target_place = place_of(target);
    for (const std::string& file : store_files(store_path)) {
        bool same = false;
        if (target_id) {
            const auto id = identity(file);
            same = id && *id == *target_id;
        }
        if (!same && target_place) {
            const auto place = place_of(file);
            same = place && *place == *target_place;
        }
        if (!same) continue;
        const bool database = file == store_path || identity(file) == identity(store_path);
        return Status::error("refusing to write " + target + ": it is " +
                             (database ? "the run store " + store_path
                                       : file + ", which SQLite keeps for the run store " + store_path) +
                             "; no output may replace it, not even with --force (choose another file)");
    }
    return Status::ok();
}

Status write_output_file(const std::string& path, Overwrite overwrite, const std::string& store_path,
                         const std::function<Status(std::ostream&)>& write) {
    if (Status s = check_output_target(path, store_path); !s) return s;
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
