// A pipeline replica's stage node through scheduled faults and rejoins (docs/faults.md); see
// pipeline_worker_impl.h.
#include "engine/worker/pipeline_worker_impl.h"

namespace tw::pipeline_impl {

Status PipelineWorker::apply_faults(int64_t step, double step_compute_s, WorkerControl& ctl, bool& left) {
    FaultResponses r;
    // Cut off from the rounds: the pipeline trains on alone (its stages still talk to each other)
    // and takes replica 0's state after the round it rejoins at.
    r.away = [this](int64_t back) { down_until_ = back < 0 ? cfg_.train.steps + 1 : back; };
    r.alone = "the pipeline";
    r.donor = "replica 0's state";
    // The pipeline's nodes end together, once each has finished the step: a node that ended first
    // would make a peer still inside the step (its last messages, the gradient norm) take it for
    // lost. Framing only; a failure changes nothing here.
    r.before_kill = [this] {
        std::vector<int> pipeline;
        for (int64_t st = 0; st < S(); ++st) pipeline.push_back(peer(role_.replica, st));
        (void)mesh_->agree(pipeline, 0);
    };
    r.process_kill_more = [](int64_t back) {
        return back < 0 ? std::string("; its pipeline leaves the run for good")
                        : "; a fresh one takes replica 0's state after the round at step " + std::to_string(back);
    };
    r.kill_text = [](int64_t back) {
        return back < 0
                   ? std::string(": the stage node stops; its pipeline leaves the run for good")
                   : ": the stage node's weights, optimizer and outer state are gone; its pipeline takes replica 0's "
                     "state after the round at step " +
                         std::to_string(back);
    };
    r.restart = [this, &ctl](int64_t back) { return rejoin(back, ctl); };
    const FaultSite at{faults_, role_.replica, clock_, rec_, mesh_.get(), cfg_.cluster.mode == "local", ctl.stop};
    return apply_scheduled_faults(at, step, step_compute_s, r, left);
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
    rec_.info("start", role_.name + ": a fresh process rejoins after the round at step " + std::to_string(back));
    return Status::ok();
}

Status PipelineWorker::rejoin_live(WorkerControl& ctl, bool& joined) {
    joined = false;
    rec_.info("start",
              role_.name + ": a fresh process after a loss; it waits for its peers to admit it at a round boundary");
    joining_live_ = true;
    Status st = take_stage_states(-1, role_.rejoin_live_from);
    joining_live_ = false;
    if (!st) {
        if (ctl.stop.load()) return st;
        // Replica 0's node, which alone sends the state, has left or ended: nothing to join.
        rec_.warn("rejoin", role_.name + " did not rejoin: " + st.message());
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
    for (auto& text : got->texts) rec_.info("rejoin", text);
    return Status::ok();
}

}  // namespace tw::pipeline_impl
