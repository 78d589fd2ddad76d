// The replica worker's part in the fault schedule (docs/faults.md "Fault schedules"): where it is
// away and how a killed worker comes back; the rest is engine/worker/scheduled_faults.h. See
// replica_worker_impl.h.
#include "engine/worker/replica_worker_impl.h"

namespace tw::replica_impl {

Status ReplicaWorker::apply_faults(int64_t step, double step_compute_s, bool& left) {
    left = false;
    if (faults_.empty() || !(elastic() || group_follower() || stage_rounds_)) return Status::ok();
    FaultResponses r;
    // A follower trains on with its leader (its group is cut off as a whole) and takes the
    // leader's weights at every round (outer_round).
    r.away = [this](int64_t back) {
        if (!group_follower()) down_until_ = back < 0 ? cfg_.train.steps + 1 : back;
    };
    r.kill_text = [](int64_t) {
        return std::string(": the worker stops; its weights, optimizer and outer state are gone");
    };
    r.restart = [this](int64_t back) -> Status {
        if (stage_rounds_) return rejoin_stages(back);
        outer_.reset();
        trainer_.reset();
        // A fresh worker: rebuilt from the data, the state of a live peer after the round at
        // `back` (its leader's, for the other nodes of a replica of several nodes).
        if (Status st = build_training(); !st) return st;
        install_grad_sync();
        trainer_->set_step_index(back);
        if (elastic())
            if (Status st = receive_state(back, scheduled_members(back)); !st) return st;
        if (Status st = follow_in_group(); !st) return st;
        ctl_->step = back;
        return Status::ok();
    };
    // A child process of a replica of several nodes meets its fresh peers in a fresh Gloo group
    // (the leader's fresh store holds none of the old one's keys).
    const FaultSite at{faults_, role_.replica, clock_, rec_, mesh_.get(), cfg_.cluster.mode == "local", ctl_->stop};
    return apply_scheduled_faults(at, step, step_compute_s, r, left);
}

}  // namespace tw::replica_impl
