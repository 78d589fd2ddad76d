// `thinwire run --resume RUN` before any node starts (docs/checkpoints.md): which config the
// resumed run runs, refused when it differs from the one the run was launched with unless forced,
// and where it goes on from. Torch-free; reads the run store (storage/run_store.h).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/status.h"
#include "storage/run_store.h"

namespace tw {

struct ResumePlan {
    RunSummary run;                    // the run as stored (status interrupted or failed)
    RunConfig cfg;                     // what the resumed run runs: the launch config, or the given one with force
    std::vector<std::string> changed;  // "key: stored → given", one per key that differs (empty: the same config)
};

// Plans the resume of run `id`: marks runs whose coordinator is gone as interrupted first
// (storage/run_liveness.h), then refuses a run that is still running or finished, or that an
// older build started (no launch config). The config is the stored launch config; `file` (its
// variant named like the run, or its only run) and `sets` (--set overrides, applied to the file or
// else to the stored config) give another one, whose paths are made relative to `data_root` as
// the session's are. A config that differs in any key is refused naming every such key, unless
// `force`.
Result<ResumePlan> plan_resume(RunStore& store, int64_t id, const std::string& file, const std::vector<std::string>& sets,
                               const std::string& data_root, bool force);

// Where the session of a resumed run goes on from: the latest step at which every node of the run
// stored its checkpoint row (core/metric_names.h kCkptBytes), and the run's uid (its checkpoint
// folder's name). `nodes` are the role names of the new cluster, which must be the stored ones.
// Two kinds of run have no step common to all nodes, and the nodes go on from steps of their own
// (`node_steps`; `step` is then the earliest of them):
//  * independent nodes (HDEE experts, which never exchange anything and train different step
//    counts): each from its own latest checkpoint; a node that wrote none starts over (absent from
//    node_steps, and `step` is 0);
//  * `round_steps` given (time-budgeted rounds: node → its steps per round): the latest round
//    after which every node wrote a checkpoint at that round's end (the row's outer step, a step
//    that is a multiple of the node's round), each node at its own step of it.
struct ResumePoint {
    int64_t step = 0;
    std::string uid;
    std::map<std::string, int64_t> node_steps;  // independent nodes and time-budgeted rounds only
};
// `spares` (cluster.spares' nodes): the common step is the latest one every other node wrote and no
// spare did, i.e. before any spare took a place (the replica it replaced writes no more); the spares
// start standing by again, as at the run's start, and the run's losses replay from there.
struct ResumeRule {
    bool independent = false;
    std::map<std::string, int64_t> round_steps;
    std::set<std::string> spares;
};
Result<ResumePoint> resume_point(RunStore& store, int64_t id, const std::vector<std::string>& nodes,
                                 const ResumeRule& rule = {});

}  // namespace tw
