// The fault schedule's events applied to a node; see scheduled_faults.h.
#include "engine/worker/scheduled_faults.h"

#include <chrono>
#include <thread>

namespace tw {

Status apply_scheduled_faults(const FaultSite& at, int64_t step, double step_compute_s, const FaultResponses& r,
                              bool& left) {
    left = false;
    for (const FaultEvent* e : at.schedule.starting(at.replica, step)) {
        const std::string what = e->text() + (e->churn ? " (churn)" : "");
        switch (e->kind) {
            case FaultKind::kPause: {
                // A stall of T − S steps' worth of this node's own step time, on its simulated clock.
                const double stall = static_cast<double>(e->until_step - e->at_step) * step_compute_s;
                at.clock.wait_until(at.clock.now_s() + stall);
                at.rec.warn("fault", e->stall_text(stall));
                break;
            }
            case FaultKind::kSlow:
                at.rec.warn("fault", e->slow_text());
                break;
            case FaultKind::kDisconnect: {
                const int64_t back = at.schedule.rejoin_round(*e);
                r.away(back);
                at.rec.warn("fault", what + ": cut off; " + r.alone + " trains on alone" +
                                         (back < 0 ? std::string(" to the end")
                                                   : ", and takes " + r.donor + " after the round at step " +
                                                         std::to_string(back)));
                break;
            }
            case FaultKind::kKill: {
                const int64_t back = at.schedule.rejoin_round(*e);
                if (r.before_kill) r.before_kill();
                if (at.child_process) {
                    // Killed for real on the process-kill event; a fresh process rejoins (NodeRole::
                    // rejoin_step). The data port closes first, so what the peers send from now on
                    // waits for the fresh process; the rows so far go before the report. Every node
                    // of a replica of several nodes does so after the same step, outside any
                    // collective.
                    if (at.mesh) at.mesh->membership().go_quiet(/*restarting=*/back >= 0);
                    at.rec.flush();
                    at.rec.warn("fault", what + ": the node process is killed" +
                                             (r.process_kill_more ? r.process_kill_more(back) : std::string()));
                    at.rec.info(kProcessKillEvent, std::to_string(at.schedule.index_of(*e)));
                    while (!at.stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
                    left = true;
                    return Status::ok();
                }
                at.rec.warn("fault", what + r.kill_text(back));
                if (back < 0) {
                    left = true;  // the worker ends here (its summary reports the steps it ran)
                    return Status::ok();
                }
                return r.restart(back);
            }
        }
    }
    return Status::ok();
}

}  // namespace tw
