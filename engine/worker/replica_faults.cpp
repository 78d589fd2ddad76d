// The replica worker's scheduled faults (docs/faults.md "Fault schedules"); see replica_worker_impl.h.
#include "engine/worker/replica_worker_impl.h"

namespace tw::replica_impl {

Status ReplicaWorker::apply_faults(int64_t step, double step_compute_s, bool& left) {
    left = false;
    if (faults_.empty() || !(elastic() || group_follower() || stage_rounds_)) return Status::ok();
    for (const FaultEvent* e : faults_.starting(role_.replica, step)) {
        const std::string what = e->text() + (e->churn ? " (churn)" : "");
        switch (e->kind) {
            case FaultKind::kPause: {
                // A stall of T − S steps' worth of this node's own step time, on its simulated clock.
                const double stall = static_cast<double>(e->until_step - e->at_step) * step_compute_s;
                clock_.wait_until(clock_.now_s() + stall);
                event(EventLevel::kWarning, "fault", e->stall_text(stall));
                break;
            }
            case FaultKind::kSlow:
                event(EventLevel::kWarning, "fault", e->slow_text());
                break;
            case FaultKind::kDisconnect: {
                const int64_t back = faults_.rejoin_round(*e);
                // A follower trains on with its leader (its group is cut off as a whole) and takes
                // the leader's weights at every round (outer_round).
                if (!group_follower()) down_until_ = back < 0 ? cfg_.train.steps + 1 : back;
                event(EventLevel::kWarning, "fault", what + ": cut off; it trains on alone" +
                                                         (back < 0 ? std::string(" to the end")
                                                                   : ", and takes the state of a live peer after the round at step " +
                                                                         std::to_string(back)));
                break;
            }
            case FaultKind::kKill: {
                const int64_t back = faults_.rejoin_round(*e);
                if (cfg_.cluster.mode == "local") {
                    // A child process: its coordinator kills it for real on this report (coordinator/
                    // scheduled_kills.h), and starts a fresh one to rejoin. The rows so far go first.
                    // Every node of a replica of several nodes does so after the same step, outside
                    // any collective; the fresh processes meet in a fresh Gloo group (the leader's
                    // fresh store holds none of the old one's keys).
                    if (mesh_) mesh_->membership().go_quiet();
                    event(EventLevel::kWarning, "fault", what + ": the node process is killed");
                    event(EventLevel::kInfo, kProcessKillEvent, std::to_string(faults_.index_of(*e)));
                    sink_->metrics(std::exchange(rows_, {}));
                    while (!ctl_->stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
                    left = true;
                    return Status::ok();
                }
                event(EventLevel::kWarning, "fault", what + ": the worker stops; its weights, optimizer and outer state are gone");
                if (back < 0) {
                    left = true;  // the worker ends here (its summary reports the steps it ran)
                    return Status::ok();
                }
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
            }
        }
    }
    return Status::ok();
}

}  // namespace tw::replica_impl
