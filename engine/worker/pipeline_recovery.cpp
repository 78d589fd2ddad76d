// A pipeline replica's stage node through scheduled faults and rejoins (docs/faults.md); see
// pipeline_worker_impl.h.
#include "engine/worker/pipeline_worker_impl.h"

namespace tw::pipeline_impl {

Status PipelineWorker::apply_faults(int64_t step, double step_compute_s, WorkerControl& ctl, bool& left) {
    left = false;
    for (const FaultEvent* e : faults_.starting(role_.replica, step)) {
        switch (e->kind) {
            case FaultKind::kPause: {
                const double stall = static_cast<double>(e->until_step - e->at_step) * step_compute_s;
                clock_.wait_until(clock_.now_s() + stall);
                if (sink_)
                    sink_->event({since_s(t0_), role_.name, EventLevel::kWarning, "fault",
                                  e->stall_text(stall)});
                break;
            }
            case FaultKind::kSlow:
                if (sink_)
                    sink_->event({since_s(t0_), role_.name, EventLevel::kWarning, "fault",
                                  e->slow_text()});
                break;
            case FaultKind::kKill: {
                const int64_t back = faults_.rejoin_round(*e);
                const std::string entry = e->text() + (e->churn ? " (churn)" : "");
                // The pipeline's nodes end together, once each has finished the step: a node that
                // ended first would make a peer still inside the step (its last messages, the
                // gradient norm) take it for lost. Framing only; a failure changes nothing here.
                std::vector<int> pipeline;
                for (int64_t st = 0; st < S(); ++st) pipeline.push_back(peer(role_.replica, st));
                (void)mesh_->agree(pipeline, 0);
                if (cfg_.cluster.mode == "local") {
                    // A child process: its coordinator kills it for real on this report (coordinator/
                    // scheduled_kills.h) and, with a rejoin, starts a fresh one (run()'s rejoin_step).
                    // The data port closes first, so what the peers send from now on waits for the
                    // fresh process; the rows so far go before the report.
                    mesh_->membership().go_quiet();
                    if (sink_) {
                        sink_->metrics(std::exchange(rows_, {}));
                        sink_->event({since_s(t0_), role_.name, EventLevel::kWarning, "fault",
                                      entry + ": the node process is killed" +
                                          (back < 0 ? std::string("; its pipeline leaves the run for good")
                                                    : "; a fresh one takes replica 0's state after the round at step " +
                                                          std::to_string(back))});
                        sink_->event({since_s(t0_), role_.name, EventLevel::kInfo, kProcessKillEvent,
                                      std::to_string(faults_.index_of(*e))});
                    }
                    while (!ctl.stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
                    left = true;
                    return Status::ok();
                }
                if (sink_)
                    sink_->event({since_s(t0_), role_.name, EventLevel::kWarning, "fault",
                                  entry + (back < 0 ? ": the stage node stops; its pipeline leaves the run for good"
                                                    : ": the stage node's weights, optimizer and outer state are gone; "
                                                      "its pipeline takes replica 0's state after the round at step " +
                                                          std::to_string(back))});
                if (back >= 0) return rejoin(back, ctl);
                left = true;
                return Status::ok();
            }
            case FaultKind::kDisconnect: {
                // Cut off from the rounds: the pipeline trains on alone (its stages still talk to
                // each other) and takes replica 0's state after the round it rejoins at.
                const int64_t back = faults_.rejoin_round(*e);
                down_until_ = back < 0 ? cfg_.train.steps + 1 : back;
                if (sink_)
                    sink_->event({since_s(t0_), role_.name, EventLevel::kWarning, "fault",
                                  e->text() + ": cut off; the pipeline trains on alone" +
                                      (back < 0 ? std::string(" to the end")
                                                : ", and takes replica 0's state after the round at step " +
                                                      std::to_string(back))});
                break;
            }
        }
    }
    return Status::ok();
}

void PipelineWorker::build_inner() {
    optim_ = std::make_unique<InnerOptimizer>(stage_->model()->parameters(), cfg_.train);
    std::vector<torch::Tensor> zs;
    for (auto& r : reparam_) zs.push_back(r.z);
    optim_->add_params(zs);  // Z steps with the stage; W, whose gradient moves to Z, does not
    exec_ = std::make_unique<StageExecutor>(cfg_, role_.replica, role_.stage, data_, *stage_, *optim_, reparam_,
                                            [this] { rounds_->project_writers(); });
}

Status PipelineWorker::rejoin(int64_t back, WorkerControl& ctl) {
    // The weights and the outer state are replaced by replica 0's below; the inner optimizer starts
    // fresh, as a one-node replica's does (docs/faults.md).
    build_inner();
    if (Status st = take_stage_states(back); !st) return st;
    step_ = back;
    ctl.step = back;
    return Status::ok();
}

Status PipelineWorker::rejoin_fresh(WorkerControl& ctl) {
    const int64_t back = role_.rejoin_step, H = cfg_.outer.inner_steps;
    const FaultEvent* down = faults_.down_at(role_.replica, back);
    if (!down || down->kind != FaultKind::kKill || !algorithm_traits(cfg_).outer_rounds || back % H != 0)
        return Status::error(role_.name + ": rejoining after step " + std::to_string(back) +
                             ": the fault schedule kills this replica with no rejoin there");
    tokens_done_ = down->at_step * cfg_.train.batch_size * cfg_.model.seq_len;
    // The rounds the killed process took part in, as its outer_step_ counted them.
    outer_step_ += faults_.rounds_taken(role_.replica, role_.rejoin_origin_step, down->at_step, H);
    if (Status st = take_stage_states(back); !st) return st;
    step_ = back;
    ctl.step = back;
    if (sink_)
        sink_->event({since_s(t0_), role_.name, EventLevel::kInfo, "start",
                      role_.name + ": a fresh process rejoins after the round at step " + std::to_string(back)});
    return Status::ok();
}

Status PipelineWorker::rejoin_live(WorkerControl& ctl, bool& joined) {
    joined = false;
    if (sink_)
        sink_->event({since_s(t0_), role_.name, EventLevel::kInfo, "start",
                      role_.name + ": a fresh process after a loss; it waits for its peers to admit it at a round boundary"});
    joining_live_ = true;
    Status st = take_stage_states(-1, role_.rejoin_live_from);
    joining_live_ = false;
    if (!st) {
        if (ctl.stop.load()) return st;
        // Replica 0's node, which alone sends the state, has left or ended: nothing to join.
        if (sink_)
            sink_->event({since_s(t0_), role_.name, EventLevel::kWarning, "rejoin",
                          role_.name + " did not rejoin: " + st.message()});
        return Status::ok();
    }
    tokens_done_ = role_.rejoin_tokens;
    outer_step_ = rounds_->rounds_done() - 1;  // the index of the round it was admitted at, as its peers count
    ctl.step = step_;
    joined = true;
    return Status::ok();
}

Status PipelineWorker::take_stage_states(int64_t step, int64_t live_from) {
    StageRecoveryParts parts = recovery_parts();
    auto got = receive_stage_states(cfg_, role_.replica, step, *mesh_, net_, parts, live_from);
    if (!got) return Status::error(role_.name + ": rejoining: " + got.message());
    if (live_from >= 0) step_ = got->step;  // the round it was admitted at
    for (auto& r : reparam_) r.to_coordinates();  // Z from the weights taken on, W = U·Z
    recovery_recv_ += got->bytes;
    clock_.wait_until(got->ready_s);  // the state crosses replica 0's uplink and this node's downlink
    if (sink_)
        for (auto& text : got->texts) sink_->event({since_s(t0_), role_.name, EventLevel::kInfo, "rejoin", text});
    return Status::ok();
}

}  // namespace tw::pipeline_impl
