// This machine's memory and processors; see machine_memory.h.
#include "core/machine_memory.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace tw {
namespace {

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    if (!in) return "";
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
}

// The first number of `text` (a cgroup file's value), nullopt when there is none.
std::optional<int64_t> leading_number(const std::string& text) {
    const size_t at = text.find_first_not_of(" \t\n");
    if (at == std::string::npos || text[at] < '0' || text[at] > '9') return std::nullopt;
    try {
        return static_cast<int64_t>(std::stoull(text.substr(at)));
    } catch (...) {
        return std::nullopt;  // beyond 64 bits: no limit anyone sets
    }
}

// The value of `key` in a "key value" listing (memory.stat), 0 when absent.
int64_t stat_value(const std::string& stat, const std::string& key) {
    std::istringstream in(stat);
    std::string k;
    int64_t v = 0;
    while (in >> k >> v)
        if (k == key) return v;
    return 0;
}

// The smallest room among the cgroup folders from `leaf` up to `root` that exist and set a limit.
std::optional<int64_t> smallest_room(const std::string& root, const std::string& leaf, const char* limit_file,
                                     const char* usage_file) {
    std::optional<int64_t> best;
    std::string dir = root + leaf;
    while (true) {
        const std::string limit = read_text(dir + "/" + limit_file);
        if (!limit.empty()) {
            const auto room = cgroup_room(limit, read_text(dir + "/" + usage_file), read_text(dir + "/memory.stat"));
            if (room && (!best || *room < *best)) best = room;
        }
        if (dir.size() <= root.size()) break;
        dir = dir.substr(0, dir.find_last_of('/'));
        if (dir.size() < root.size()) dir = root;
    }
    return best;
}

}  // namespace

Result<int64_t> parse_mem_available(const std::string& meminfo) {
    std::istringstream in(meminfo);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("MemAvailable:", 0) != 0) continue;
        std::istringstream fields(line.substr(13));
        int64_t kib = -1;
        std::string unit;
        if (!(fields >> kib >> unit) || kib < 0 || unit != "kB")
            return Result<int64_t>::error("/proc/meminfo: cannot read \"" + line + "\"");
        return kib * 1024;
    }
    return Result<int64_t>::error("/proc/meminfo has no MemAvailable line (Linux 3.14 or later has one)");
}

std::optional<int64_t> cgroup_room(const std::string& limit, const std::string& usage, const std::string& stat) {
    const auto lim = leading_number(limit);
    if (!lim || *lim >= (int64_t{1} << 60)) return std::nullopt;  // "max", or v1's page-rounded 2^63
    const int64_t used = leading_number(usage).value_or(0);
    const int64_t reclaimable = std::max(stat_value(stat, "inactive_file"), stat_value(stat, "total_inactive_file"));
    return std::max<int64_t>(0, *lim - std::max<int64_t>(0, used - reclaimable));
}

std::string cgroup_path(const std::string& proc_self_cgroup, bool v2) {
    std::istringstream in(proc_self_cgroup);
    std::string line;
    while (std::getline(in, line)) {
        const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
        if (b == std::string::npos) continue;
        const std::string controllers = line.substr(a + 1, b - a - 1);
        bool match = v2 ? (line.substr(0, a) == "0" && controllers.empty()) : false;
        if (!v2) {
            std::istringstream names(controllers);
            std::string c;
            while (std::getline(names, c, ','))
                if (c == "memory") match = true;
        }
        if (match) {
            std::string path = line.substr(b + 1);
            while (path.size() > 1 && path.back() == '/') path.pop_back();
            return path == "/" ? "" : path;
        }
    }
    return "";
}

Result<MachineMemory> read_machine_memory() {
    auto avail = parse_mem_available(read_text("/proc/meminfo"));
    if (!avail) return avail.status();
    MachineMemory m;
    m.available_bytes = *avail;
    m.source = "MemAvailable";
    m.logical_cpus = std::max<int64_t>(1, static_cast<int64_t>(sysconf(_SC_NPROCESSORS_ONLN)));
    // Inside a container the cgroup's own folder is usually mounted as the root, and the path in
    // /proc/self/cgroup (the host's) does not exist: the walk up to the root finds it anyway.
    const std::string self = read_text("/proc/self/cgroup");
    const auto v2 = smallest_room("/sys/fs/cgroup", cgroup_path(self, true), "memory.max", "memory.current");
    const auto v1 = smallest_room("/sys/fs/cgroup/memory", cgroup_path(self, false), "memory.limit_in_bytes",
                                  "memory.usage_in_bytes");
    if (v2 && *v2 < m.available_bytes) {
        m.available_bytes = *v2;
        m.source = "cgroup memory.max";
    }
    if (v1 && *v1 < m.available_bytes) {
        m.available_bytes = *v1;
        m.source = "cgroup memory.limit_in_bytes";
    }
    return m;
}

}  // namespace tw
