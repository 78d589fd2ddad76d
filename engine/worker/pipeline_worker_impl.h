// The pipeline worker (pipeline_worker.h) as a class, shared by the source files that hold its parts:
// the training loop, its schedule and its rounds (pipeline_worker.cpp), and the scheduled faults
// and rejoins of a pipeline replica's stage node (pipeline_recovery.cpp). Internal to
// engine/worker: nothing outside those two files includes it.
//
// Thread-safety: one worker thread; the abort predicate it installs is read by the transport.
#pragma once

#include <chrono>
#include <cmath>
#include <cstring>

#include <torch/optim/adamw.h>

#include "core/algorithm.h"
#include "core/compute_model.h"
#include "core/config_io.h"
#include "core/fault_schedule.h"
#include "core/layout.h"
#include "core/metric_names.h"
#include "core/network.h"
#include "core/pipeline_program.h"
#include "core/pipeline_schedule.h"
#include "core/round_clock.h"
#include "core/routing.h"
#include "core/sim_clock.h"
#include "engine/algo/outer.h"
#include "engine/algo/state_hash.h"
#include "engine/data/dataset.h"
#include "engine/data/loader.h"
#include "engine/data/stream_check.h"
#include "engine/pipeline/activation_codec_registry.h"
#include "engine/pipeline/hetero.h"
#include "engine/pipeline/reparam.h"
#include "engine/pipeline/stage.h"
#include "engine/pipeline/subspace.h"
#include "engine/runtime/threads.h"
#include "engine/train/inner_step.h"
#include "engine/worker/final_model_sender.h"
#include "engine/worker/node_data.h"
#include "engine/worker/pipeline_worker.h"
#include "engine/worker/node_summary.h"
#include "engine/worker/node_worker.h"
#include "engine/worker/run_checkpoint.h"
#include "engine/worker/scheduled_faults.h"
#include "engine/worker/stage_executor.h"
#include "engine/worker/stage_recovery.h"
#include "engine/worker/stage_round_step.h"
#include "engine/worker/stage_rounds.h"
#include "engine/worker/stage_state.h"
#include "engine/worker/worker_recorder.h"

namespace tw::pipeline_impl {

inline std::vector<uint8_t> tensor_bytes(const torch::Tensor& t) {
    auto c = t.detach().contiguous();
    const auto* p = static_cast<const uint8_t*>(c.data_ptr());
    return std::vector<uint8_t>(p, p + c.numel() * c.element_size());
}

class PipelineWorker : public NodeWorker {
public:
    explicit PipelineWorker(NodeParts parts) : NodeWorker(std::move(parts)) {}

    Result<WorkerSummary> run(WorkerControl& ctl, MetricSink& sink) override;

private:
    int64_t S() const { return cfg_.cluster.stages; }
    int peer(int replica, int64_t stage) const { return pipeline_mesh_rank(cfg_, replica, static_cast<int>(stage)); }
    Status setup(WorkerControl& ctl, MetricSink& sink);
    Status build_rounds();
    Status broadcast_frozen_embedding(int64_t step);
    Status build_embedding_shadow(const torch::Tensor& u0);
    bool ad2_active() const {
        return t_fixed_.defined() && cfg_.pipeline.has("ad2") && run_constraint_rank(cfg_, 0) > 0;
    }
    Status outer_rounds(int64_t step);
    // The global model's validation loss through the stages; `val` NaN (and ok) when `stop` cut it
    // short: every stage sees the same stop and leaves its loop, or its wait aborts on it.
    Status evaluate(double& val, const std::atomic<bool>& stop);
    StageSlice& slice() { return rounds_->slices().front(); }  // the one stage this node holds
    // Point to point on the stage link with this node's clock: the message's size is recorded
    // at `step` (clock.send_bytes) so re-timing can replay it.
    Status send(int64_t step, int to, const std::vector<uint8_t>& payload);
    Result<std::vector<uint8_t>> recv(int from);
    // A compute segment of `s` seconds at `step`: the clock advances, and re-timing gets the row.
    void clock_compute(int64_t step, double s) {
        clock_.compute(s);
        rec_.record(step, metric::kClockComputeS, s);
    }
    WorkerSummary summarise() const;
    // Run-scoped checkpoints (run_checkpoint.h): the one of step `step`, its rows last among the
    // step's; resuming, the load of role.resume_step's after setup's start-up checks.
    Status save_run_checkpoint(int64_t step, MetricSink& sink);
    Status resume_run_checkpoint(MetricSink& sink);
    StageStateParts stage_parts();  // what the node keeps beside model and optimizer (stage_state.h)
    ByteCounters total_bytes() const;  // the mesh's counters plus a resumed node's at its checkpoint
    // A pipeline replica leaves the run as a whole when one of its nodes is lost (docs/faults.md):
    // in a run whose rounds go on among survivors, a failed step or round of this node whose replica
    // is out of the rounds (stage_rounds.h left_out: a node of it lost, or counted out by a peer)
    // stores a `leave` event and returns true; the worker then ends cleanly, and its end (the
    // transport's bye) tells its mesh peers at once. Any other failure is the run's.
    bool leave_if_lost(const Status& why) {
        if (!out_of_rounds()) return false;
        rec_.warn("leave", "replica " + std::to_string(role_.replica) +
                               " leaves the run as a whole: " + rounds_->out_reason() + " (" + why.message() + ")");
        return true;
    }
    // A restarted process is out of the rounds until it is admitted (it counts its own replica lost
    // meanwhile); its waits end on the stop alone.
    bool out_of_rounds() const { return !joining_live_ && rounds_ && rounds_->survives_loss() && rounds_->left_out(); }

    NetworkProfile net_;
    std::shared_ptr<PreparedData> data_;
    std::unique_ptr<WindowLoader> val_;
    std::unique_ptr<PipelineStage> stage_;
    std::unique_ptr<InnerOptimizer> optim_;  // the shared inner step (reparam's Z added)
    torch::Tensor t_fixed_;                   // [V, d] when the run compresses anything
    std::unique_ptr<StageRounds> rounds_;     // this stage's slice and its outer rounds
    // AD2 on a pipeline's later stages under SparseLoCo: a copy of θ_global's trainable embedding,
    // kept bit-identical by replaying stage 0's round payloads, so T_fixed follows without sending it.
    torch::Tensor shadow_emb_;
    std::unique_ptr<OuterAlgorithm> shadow_;
    // `reparam` (docs/methods.md §6): the constrained writers held as U·Z, Z stepped by the inner optimizer.
    std::vector<ReparamWriter> reparam_;
    std::unique_ptr<StageExecutor> exec_;  // the schedule's iteration (GPipe / 1F1B)
    SimClock clock_;  // this node's simulated clock (core/sim_clock.h)
    ComputeTime compute_;  // measured or modelled seconds of each segment (core/compute_model.h)
    double round_compute_s_ = 0;
    int64_t outer_step_ = -1, step_ = 0;
    double last_loss_ = NAN, last_val_ = NAN;
    RunCheckpoints run_ckpt_;
    ByteCounters bytes_before_;
    // [faults] (core/fault_schedule.h): slow and pause act on this node's clock; a kill ends every
    // node of the pipeline after the step, and the rounds drop it by the schedule. With a rejoin the
    // node's state is gone and it takes replica 0's after the round it rejoins at (stage_recovery.h).
    FaultSchedule faults_;
    uint64_t recovery_sent_ = 0, recovery_recv_ = 0;  // bytes.outer.recovery.*
    RecoveryBytes recovery() const { return {recovery_sent_, recovery_recv_}; }
    int64_t tokens_done_ = 0;  // this replica's own tokens: steps it was down for are not counted
    // The schedule's events for this replica after step `step` (its compute `step_compute_s`);
    // `left` when the pipeline is killed for good.
    Status apply_faults(int64_t step, double step_compute_s, WorkerControl& ctl, bool& left);
    // After a kill with a rejoin: a fresh inner optimizer, then replica 0's state after the round at
    // `back`; training goes on from step `back`.
    Status rejoin(int64_t back, WorkerControl& ctl);
    // Replica 0's state after the round at `step` in place of this node's (stage_recovery.h); a
    // restarted process passes −1 and live_from (receive_stage_states), and goes on from that round.
    Status take_stage_states(int64_t step, int64_t live_from = -1);
    // A fresh process after a scheduled kill (coordinator/scheduled_kills.h, role.rejoin_step):
    // takes replica 0's state after the round it rejoins at, as a worker rebuilt in-process does,
    // with the tokens and round count the killed process had.
    Status rejoin_fresh(WorkerControl& ctl);
    // A fresh process after a real loss (cluster.restart_lost, role.rejoin_live_from): says it is up
    // and takes replica 0's state after the round its peers admit it at (stage_recovery.h), with
    // the tokens its replica had. `joined` false: every peer that could admit it had left.
    Status rejoin_live(WorkerControl& ctl, bool& joined);
    bool joining_live_ = false;  // rejoin_live() is waiting for the state
    int64_t down_until_ = -1;  // disconnected: away through the round at this step; −1 = present
    // A fresh inner optimizer (reparam's Z stepped with the stage) and the executor stepping it.
    void build_inner();
    StageRecoveryParts recovery_parts() { return {rounds_.get(), t_fixed_, shadow_emb_, shadow_.get()}; }
};

}  // namespace tw::pipeline_impl
