// Single-replica trainer: AdamW, warm-up + cosine, gradient clipping, periodic validation,
// atomic checkpoints and resume. Later algorithms (DiLoCo, SparseLoCo, ...) drive step() and
// the model's parameters between steps; the trainer knows nothing of other replicas.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/config.h"
#include "core/status.h"
#include "engine/data/loader.h"
#include "engine/model/llama.h"
#include "engine/train/inner_step.h"


namespace tw {

struct StepReport {
    int64_t step = 0;          // completed steps after this one (1-based)
    double loss = 0;           // training loss of the batch, nats/token
    double lr = 0;
    double grad_norm = 0;      // global norm before clipping
    int64_t tokens = 0;        // tokens consumed so far (B·T per step)
    double compute_s = 0;      // forward + backward + optimizer seconds of this step (no sync_s)
    double forward_s = 0;      // parts of compute_s: forward incl. loss,
    double backward_s = 0;     //   backward,
    double optim_s = 0;        //   clipping and AdamW
    double sync_s = 0;         // wall seconds in the grad-sync hook (communication; 0 without one)
};

struct TrainHooks {
    std::function<void(const StepReport&)> on_step;
    std::function<void(int64_t step, double val_loss)> on_eval;
    std::function<void(const std::string& kind, const std::string& text)> on_event;
    std::function<bool()> should_stop;  // polled between steps (Ctrl-C)
    // Runs after each step's on_step and before that step's evaluation: the outer algorithm's
    // round (DiLoCo syncs every H steps here). An error ends the run with it.
    std::function<Status(int64_t step)> after_step;
};

// AdamW with decoupled weight decay on matrices only (norm gains are not decayed) over a whole
// model: inner_step.h's make_adamw, kept for SkipPipe's one-process loop.
std::unique_ptr<torch::optim::AdamW> make_adamw(Llama& model, const TrainConfig& t);

class Trainer {
public:
    // Applies the compute-thread policy (engine/runtime/threads.h) with cfg.run.threads.
    Trainer(const RunConfig& cfg, WindowLoader train, WindowLoader val);
    ~Trainer();

    // One optimizer step on batch(step_index()). If the grad-sync hook fails, the step is abandoned
    // before clipping (no optimizer update, step_index() unchanged) and sync_status() holds the error.
    StepReport step();
    // Called in step() after backward and before clipping and AdamW, so clipping sees what it
    // leaves in the gradients (DDP averages them over replicas here). Its time is StepReport::sync_s.
    void set_grad_sync(std::function<Status()> fn) { grad_sync_ = std::move(fn); }
    // The last step's grad-sync outcome; run() returns it when it is an error.
    const Status& sync_status() const { return sync_status_; }
    // Mean loss over cfg.train.eval_batches fixed validation batches, without gradients. NaN when
    // the stop check became true between two batches: a mean cut short is not the run's
    // validation loss, and callers record nothing then (a stop is honoured within one batch).
    double evaluate();
    // Polled between evaluation batches; run() uses TrainHooks::should_stop when none is set.
    void set_stop_check(std::function<bool()> stop) { stop_check_ = std::move(stop); }

    // Restores model, optimizer, step and RNG. The loader needs no state (batch is a function of step).
    Status load(const std::string& path);
    Status save(const std::string& path) const;
    // train.resume with an existing train.ckpt_path: loads it. Returns the event text ("resumed
    // from PATH at step N"), or "" when there was nothing to resume.
    Result<std::string> resume_if_asked();
    // With train.ckpt_path set: saves when `final` or the step is a multiple of train.ckpt_every.
    // Returns the event text ("step N -> PATH"), or "" when nothing was written.
    Result<std::string> checkpoint_if_due(bool final);

    // Runs to cfg.train.steps: resumes if asked, evaluates every eval_every steps and at the end,
    // checkpoints every ckpt_every steps and at the end. Returns ok, or the first error (a failed
    // grad sync included: it ends the run without checkpointing the abandoned step).
    // A stop request ends the loop early (after a checkpoint, if configured) with ok.
    Status run(const TrainHooks& hooks);

    int64_t step_index() const { return step_; }
    // A replica that joins a run in progress starts at the survivors' step (docs/faults.md): the
    // data position and the learning-rate schedule follow from it (batch(step) is a pure function).
    void set_step_index(int64_t step) { step_ = step; }
    bool stopped_early() const { return stopped_; }
    Llama& model() { return model_; }
    torch::optim::AdamW& optimizer() { return optim_->adamw(); }
    // A fresh inner optimizer over the same parameters (a replica killed and rejoining: its AdamW
    // moments are gone).
    void reset_optimizer();

private:
    RunConfig cfg_;
    Llama model_;
    std::unique_ptr<InnerOptimizer> optim_;  // the shared inner step (inner_step.h)
    WindowLoader train_, val_;
    int64_t step_ = 0;
    bool stopped_ = false;
    std::function<Status()> grad_sync_;
    std::function<bool()> stop_check_;
    Status sync_status_;
};

}  // namespace tw
