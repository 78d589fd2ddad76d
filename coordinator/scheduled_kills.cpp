// Scheduled kills in child processes; see scheduled_kills.h.
#include "coordinator/scheduled_kills.h"

#include <utility>

#include "remote/cluster.h"
#include "remote/coordinator.h"

namespace tw {

ScheduledKills::ScheduledKills(const RunConfig& cfg, const std::vector<NodeRole>& roles) : roles_(roles) {
    // Pipeline runs are killed for good only, inside the nodes' processes (FaultSchedule::problems).
    if (cfg.cluster.mode != "local" || !cfg.faults.enabled() || cfg.cluster.stages > 1) return;
    auto s = FaultSchedule::create(cfg);
    if (!s) return;  // the config's checks refused it before any node started
    schedule_ = std::move(*s);
    done_.assign(schedule_.events().size() * roles_.size(), false);
    active_ = true;
}

void ScheduledKills::on_event(const EventRecord& e) {
    if (!active_ || e.kind != "fault") return;
    for (size_t i = 0; i < roles_.size(); ++i) {
        if (roles_[i].name != e.node || roles_[i].kind != "full") continue;
        const auto& events = schedule_.events();
        for (size_t k = 0; k < events.size(); ++k) {
            const FaultEvent& f = events[k];
            const size_t once = k * roles_.size() + i;  // every node of the replica reports it
            if (done_[once] || f.kind != FaultKind::kKill || f.replica != roles_[i].replica) continue;
            const std::string entry = f.text() + (f.churn ? " (churn)" : "") + ":";
            if (e.text.compare(0, entry.size(), entry) != 0) continue;
            done_[once] = true;
            due_.emplace_back(i, k);
            return;
        }
    }
}

Status ScheduledKills::carry_out(LocalCluster& cluster, Coordinator& coord,
                                 const std::function<void(const std::string&)>& log) {
    for (auto [i, k] : std::exchange(due_, {})) {
        const FaultEvent& f = schedule_.events()[k];
        if (Status st = cluster.kill_process(i); !st) return Status::error(roles_[i].name + ": " + st.message());
        const int64_t back = schedule_.rejoin_round(f);
        if (back < 0) {
            log("coordinator: killed " + roles_[i].name + "'s process (" + f.text() + ")");
            continue;  // gone for good: its heartbeats stop, and the run goes on without it
        }
        if (Status st = cluster.respawn_process(i); !st) return Status::error(roles_[i].name + ": " + st.message());
        if (Status st = coord.rejoin(i, back); !st) return Status::error(roles_[i].name + ": " + st.message());
        log("coordinator: killed " + roles_[i].name + "'s process and started a fresh one, rejoining after the round at step " +
            std::to_string(back) + " (" + f.text() + ")");
    }
    return Status::ok();
}

}  // namespace tw
