// Scheduled kills in child processes; see scheduled_kills.h.
#include "coordinator/scheduled_kills.h"

#include <utility>

#include "remote/cluster.h"
#include "remote/coordinator.h"

namespace tw {

ScheduledKills::ScheduledKills(const RunConfig& cfg, const std::vector<NodeRole>& roles) : roles_(roles) {
    if (cfg.cluster.mode != "local" || !cfg.faults.enabled()) return;
    auto s = FaultSchedule::create(cfg);
    if (!s) return;  // the config's checks refused it before any node started
    schedule_ = std::move(*s);
    done_.assign(schedule_.events().size() * roles_.size(), false);
    active_ = true;
}

void ScheduledKills::on_event(const EventRecord& e) {
    if (!active_ || e.kind != kProcessKillEvent) return;
    // The text is an index into the schedule: digits only, and an entry that exists.
    if (e.text.empty() || e.text.size() > 9 || e.text.find_first_not_of("0123456789") != std::string::npos) return;
    const size_t k = std::stoul(e.text);
    const auto& events = schedule_.events();
    if (k >= events.size()) return;
    const FaultEvent& f = events[k];
    for (size_t i = 0; i < roles_.size(); ++i) {
        // A full replica's node, or a pipeline's stage node (every stage of it reports the kill).
        if (roles_[i].name != e.node || !replica_node(roles_[i].kind)) continue;
        const size_t once = k * roles_.size() + i;  // every node of the replica reports it
        if (done_[once] || f.kind != FaultKind::kKill || f.replica != roles_[i].replica) return;
        done_[once] = true;
        due_.emplace_back(i, k);
        return;
    }
}

Status ScheduledKills::carry_out(LocalCluster& cluster, Coordinator& coord,
                                 const std::function<void(const std::string&)>& log) {
    // One kill per call: a restart waits for the fresh process to answer, and the caller's poll
    // between calls keeps the heartbeats going, so churn that strikes several nodes at once does
    // not starve the live nodes of their coordinator's word.
    if (!due_.empty()) {
        const auto [i, k] = due_.front();
        due_.erase(due_.begin());
        const FaultEvent& f = schedule_.events()[k];
        if (Status st = cluster.kill_process(i); !st) return Status::error(roles_[i].name + ": " + st.message());
        const int64_t back = schedule_.rejoin_round(f);
        if (back < 0) {
            log("coordinator: killed " + roles_[i].name + "'s process (" + f.text() + ")");
            return Status::ok();  // gone for good: its heartbeats stop, and the run goes on without it
        }
        if (Status st = cluster.respawn_process(i); !st) return Status::error(roles_[i].name + ": " + st.message());
        if (Status st = coord.rejoin(i, back); !st) return Status::error(roles_[i].name + ": " + st.message());
        log("coordinator: killed " + roles_[i].name + "'s process and started a fresh one, rejoining after the round at step " +
            std::to_string(back) + " (" + f.text() + ")");
    }
    return Status::ok();
}

}  // namespace tw
