// Telling a live coordinator from a dead one: a running run whose coordinator process is
// gone on this host, or whose heartbeat is older than kCoordinatorStaleS (any host), is not
// running but interrupted. Readers (`runs list | show`, the workbench's History, `run --resume`)
// call mark_lost_runs() when they open the store, which records that status with the reason, so
// every later reader sees the same thing.
//
// Units: seconds (Unix time for heartbeats). Thread-safety: as RunStore's.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "storage/run_store.h"

namespace tw {

// A coordinator writes its heartbeat every kCoordinatorHeartbeatS; a heartbeat older than
// kCoordinatorStaleS means it is gone even where its pid cannot be checked (another host). The
// margin covers a coordinator blocked in a node's reply timeout (20 s) and clock skew between hosts.
inline constexpr double kCoordinatorHeartbeatS = 2;
inline constexpr double kCoordinatorStaleS = 60;

// What a reader knows of the world: its own host name, the time, and whether a pid of this host
// runs. Injected so the rule is testable without killing processes.
struct LivenessProbe {
    std::string this_host;
    double now_s = 0;                           // Unix seconds
    std::function<bool(int64_t pid)> pid_alive;
    double stale_s = kCoordinatorStaleS;
};

// The probe of this process: gethostname, the system clock, kill(pid, 0).
LivenessProbe local_probe();

// Why the coordinator of running run `r` is gone ("" = it may be alive, or `r` is not running).
// On the coordinator's own host its process decides (alive: not gone, however old the heartbeat);
// elsewhere a heartbeat older than stale_s. A run without a recorded coordinator (older builds)
// counts as gone once it is stale_s old.
std::string coordinator_gone(const RunSummary& r, const LivenessProbe& probe);

// Marks every running run whose coordinator is gone as interrupted, reason included; returns their ids.
Result<std::vector<int64_t>> mark_lost_runs(RunStore& store, const LivenessProbe& probe = local_probe());

// This machine's host name ("" when it cannot be read).
std::string this_host_name();

}  // namespace tw
