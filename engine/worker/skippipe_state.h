// What a SkipPipe node (engine/worker/skippipe_worker.h) carries from step to step beside its stage's
// weights, its AdamW and the RNG, as named fp64 tensors for its run-scoped checkpoint
// (run_checkpoint.h; docs/checkpoints.md): the sums its summary reports, the stage times every node
// schedules with (a resumed node schedules with these, never with times measured again) and the
// last evaluation's partial-model losses. Its simulated clock and compute sum travel as the node's
// progress (NodeProgress::clock's now_s and compute_s); its schedules are functions of the seed and
// the step. A file is untrusted: loading names what is missing, malformed or not this run's.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/skippipe.h"
#include "core/status.h"
#include "engine/train/checkpoint.h"

namespace tw {

struct SkipPipeNodeState {
    double busy_s = 0, iter_sum_s = 0, skip_iter_sum_s = 0;  // the schedule's busy time, makespans trained on and SkipPipe's
    FwdBwd block, head;                                       // stage times (finite, ≥ 0)
    std::map<std::string, double> paths;                      // val.loss.path_* of the last evaluation
};

NamedTensors save_skippipe_state(const SkipPipeNodeState& s);
// `path_metrics`: the run's val.loss.path_* names (skippipe.eval_paths); any other path is an error.
Result<SkipPipeNodeState> load_skippipe_state(const NamedTensors& saved, const std::vector<std::string>& path_metrics);

}  // namespace tw
