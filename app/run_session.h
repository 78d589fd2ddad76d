// One run through the coordinator, as `thinwire run` and `thinwire train` (with replicas) do it:
// bring up the cluster the layout names, assign roles, stream metrics into the run store, show
// progress, and end the run as finished, failed or interrupted.
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/metrics.h"
#include "core/timeline.h"
#include "core/worker.h"

namespace tw {
class RunStore;
}

namespace tw::cli {

struct SessionResult {
    int64_t run_id = 0;
    RunStatus status = RunStatus::kFinished;
    std::string reason;
    double wall_s = 0;
    double unigram = 0;
    std::vector<std::string> nodes;               // role names, node order
    std::map<std::string, WorkerSummary> summary;  // by role name
    std::map<std::string, ReplicaTrace> traces;    // per-step compute and per-round bytes, for re-timing
};

// Runs `cfg` (resolved, data already prepared in this process's cache for threads/local) to its
// end. `group` labels runs started together. `exe` is this binary (for local child processes).
// Ctrl-C (the flag) stops the run cleanly and marks it interrupted.
SessionResult run_session(RunConfig cfg, RunStore& store, const std::string& group, const std::string& exe,
                          const std::atomic<bool>& interrupt);

}  // namespace tw::cli
