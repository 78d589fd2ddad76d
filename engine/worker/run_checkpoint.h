// Run-scoped checkpoints of a node of a coordinated run (train.ckpt_every; docs/checkpoints.md):
// each node writes its own file, <data.cache_dir>/checkpoints/<role.checkpoint_run>/<node>.step-N.ckpt
// under its data root, at the first round boundary at or after every multiple of ckpt_every steps
// (and where a clean stop leaves it), and `thinwire run --resume` has every node load the file of
// the latest step all of them wrote (role.resume_step).
//
// A file holds what the node needs to go on as if never interrupted: weights and the inner
// optimizer (AdamW) as engine/train/checkpoint.h writes them (with the RNG), the step (the data
// position: WindowLoader::batch(step) is a pure function of it), the outer algorithm's state
// (OuterAlgorithm::save_state, by name), the simulated clock, the cumulative byte counters, the
// outer round counter and the last losses. The schedule of due steps depends on the step alone,
// so a resumed node checkpoints at the same steps an uninterrupted one does.
//
// Ownership: a RunCheckpoints belongs to one worker; not thread-safe. Files are written atomically
// (write PATH.tmp, rename); each node keeps its kKeep most recent files and deletes older ones.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>

#include "core/collective.h"
#include "core/config.h"
#include "core/role.h"
#include "core/sim_clock.h"
#include "core/status.h"
#include "core/worker.h"
#include "engine/train/checkpoint.h"

namespace tw {

// A node's progress beside its tensors.
struct NodeProgress {
    int64_t step = 0;         // completed optimizer steps
    int64_t outer_step = -1;  // outer rounds completed - 1 (the worker's outer_step_)
    SimClockState clock;
    ByteCounters bytes;       // cumulative over the run, every link class
    double last_loss = NAN, last_val = NAN;
    // bytes.outer.recovery.sent / .recv so far (a [faults] run's joiners and spares); absent from
    // older files, which count from 0.
    uint64_t recovery_sent = 0, recovery_recv = 0;
};

// A resumed node's counters: those at its checkpoint plus what its transport counted since.
inline ByteCounters counters_since(const ByteCounters& at_checkpoint, const ByteCounters& now) {
    ByteCounters total = at_checkpoint;
    total += now;
    return total;
}

class RunCheckpoints {
public:
    // The most recent files a node keeps. More than one, because the step every node wrote (the
    // resume point) can lag a node's newest file: a node may write another before its peers, or
    // before the store has its last rows.
    static constexpr int kKeep = 3;

    RunCheckpoints() = default;  // disabled
    // From train.ckpt_every and the role's checkpoint_run / resume_step; `cfg.data.cache_dir` is the
    // node's own (resolved under its data root). Disabled when either is unset.
    RunCheckpoints(const RunConfig& cfg, const NodeRole& role);

    bool enabled() const { return every_ > 0 && !dir_.empty(); }
    bool resuming() const { return resume_step_ >= 0; }
    int64_t resume_step() const { return resume_step_; }
    // Whether the node checkpoints after step `step`: the first step at or after the next multiple
    // of ckpt_every that is a round boundary (`boundary`: the worker's answer for this step).
    bool due(int64_t step, bool boundary) const { return enabled() && boundary && step >= next_due_; }
    // Whether step `step` already has this node's checkpoint (one written or loaded there).
    bool holds(int64_t step) const { return step == last_step_; }
    // Whether a stop after step `step` is checkpointed: a stop between steps leaves a consistent
    // state, worth keeping unless that step's checkpoint exists already (or nothing was trained).
    bool due_on_stop(int64_t step) const { return enabled() && !holds(step) && step > 0; }

    struct Written {
        std::string path;
        int64_t bytes = 0;
        double write_s = 0;  // wall seconds to serialise and write
    };
    // Writes the checkpoint of `p.step` and schedules the next; then deletes this node's files
    // older than its kKeep newest.
    Result<Written> save(const NodeProgress& p, torch::nn::Module& model, torch::optim::Optimizer& optim,
                         const NamedTensors& outer_state, const std::string& config_hash);

    struct Loaded {
        NodeProgress progress;
        NamedTensors outer_state;  // as save() got it
        std::string path;
    };
    // Loads the file of resume_step() into `model` and `optim`; errors name the file.
    Result<Loaded> load(torch::nn::Module& model, torch::optim::Optimizer& optim);

    std::string path_of(int64_t step) const;
    const std::string& dir() const { return dir_; }

private:
    void schedule_after(int64_t step) { next_due_ = (step / every_ + 1) * every_; }
    void prune() const;

    std::string dir_, node_;
    int64_t every_ = 0, resume_step_ = -1;
    int64_t next_due_ = 0, last_step_ = -1;
};

// What every worker does to checkpoint: `ckpts.save`, then the report of what it wrote — the
// ckpt.bytes and ckpt.write_s rows of step p.step through `record` (call it after the step's
// other rows: a ckpt.bytes row in the store means the file and every earlier row exist) and a
// "checkpoint" event of node `node` at `at_s` seconds naming the file. The error names the node.
Status save_and_report_checkpoint(RunCheckpoints& ckpts, const NodeProgress& p, torch::nn::Module& model,
                                  torch::optim::Optimizer& optim, const NamedTensors& outer_state,
                                  const std::string& config_hash, const std::string& node, double at_s,
                                  const std::function<void(int64_t, const std::string&, double)>& record,
                                  MetricSink& sink);

}  // namespace tw
