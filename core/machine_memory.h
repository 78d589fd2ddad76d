// What this machine can give a run that is about to start: the memory new processes or threads can
// take without swapping or being killed, and its processors. Read from /proc and the memory cgroup
// just before a run's nodes are brought up (coordinator/launch_limits.h). Linux only; the parsers
// are pure and tested on fixed texts, read_machine_memory does the I/O. Thread-safe (reads files only).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"

namespace tw {

struct MachineMemory {
    int64_t available_bytes = 0;  // what a launch may take: MemAvailable, or less when a cgroup limits us
    // Where available_bytes comes from, for messages: "MemAvailable" or "cgroup memory.max" /
    // "cgroup memory.limit_in_bytes".
    std::string source;
    int64_t logical_cpus = 0;     // processors online
};

// MemAvailable of a /proc/meminfo text, in bytes (the file says kB, meaning KiB). An error when the
// line is missing (a kernel older than 3.14) or malformed.
Result<int64_t> parse_mem_available(const std::string& meminfo);

// A memory cgroup's room in bytes: limit − (usage − inactive file pages), the file pages being
// reclaimable (docker stats counts the same way). nullopt when there is no limit: "max" (v2), or a
// value of 2^60 bytes or more (v1's "unlimited" is 2^63 rounded down to a page). `stat` is the
// cgroup's memory.stat text (its "inactive_file" or v1's "total_inactive_file" line, 0 when absent).
std::optional<int64_t> cgroup_room(const std::string& limit, const std::string& usage, const std::string& stat);

// The cgroup v2 path ("0::/a/b") or v1 memory controller's path ("N:memory:/a/b") of a
// /proc/self/cgroup text; "" when absent.
std::string cgroup_path(const std::string& proc_self_cgroup, bool v2);

// This machine now: MemAvailable, lowered to the memory cgroup's room (v2 or v1, this process's
// cgroup and its ancestors as far as they are visible) when that is smaller.
Result<MachineMemory> read_machine_memory();

}  // namespace tw
