// Limits a run must pass before its nodes are brought up on this machine (cluster.mode = "local"
// or "threads"; remote nodes run elsewhere and are not checked). Without them a layout of 1,024
// child processes forks LibTorch runtimes until the machine runs out of memory. Two checks,
// reported together (docs/launch_limits.md):
//
//  * cluster.max_local_processes: child processes in one run at most (default 64); more is refused
//    naming the key, whatever the memory says.
//  * cluster.memory_check: the launch's memory estimated from the config (core/memory_estimate.h)
//    against what this machine has available (core/machine_memory.h). "refuse" (default): above
//    the available memory the run is refused with the figures; above kWarnFraction of it, a
//    warning. "warn": both are warnings. "off": no memory check.
//
// check_launch_limits is pure (config and machine figures in, verdict out); launch_limits_here
// reads this machine and is what the coordinator's Session calls, once, before bring-up.
// Thread-safe: no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/machine_memory.h"
#include "core/memory_estimate.h"
#include "core/status.h"

namespace tw {

// Above this share of the available memory a run that fits is still warned about: the estimate is
// an estimate, and the machine has other tenants.
inline constexpr double kWarnFraction = 0.8;

struct LaunchVerdict {
    // Empty when the run may start; otherwise every reason it may not, one per line, each naming
    // its figures and the key that changes it.
    std::vector<std::string> refusals;
    std::vector<std::string> warnings;  // the run starts; these are printed and stored with it
    std::string summary;                // the estimate against the machine, one line ("" when not checked)
    std::string detail;                 // the estimate per node by part, one line ("" when not checked)
    LaunchMemoryEstimate estimate;
    bool ok() const { return refusals.empty(); }
};

// The verdict for starting `nodes` nodes of `cfg` on a machine with `machine`.
LaunchVerdict check_launch_limits(const RunConfig& cfg, int64_t nodes, const MachineMemory& machine);

// check_launch_limits on this machine: the warnings and summary when the run may start, an error
// holding every refusal otherwise. Remote layouts pass unchecked. A machine whose memory cannot be
// read (no /proc/meminfo) is a warning, not a refusal, unless the process cap alone refuses.
Result<LaunchVerdict> launch_limits_here(const RunConfig& cfg, int64_t nodes);

// Bytes as people read them: "310 MiB", "19.4 GiB" (binary units, 3 significant figures).
std::string human_bytes(int64_t bytes);

}  // namespace tw
