// Restarts of lost node processes; see lost_restarts.h.
#include "coordinator/lost_restarts.h"

#include "remote/cluster.h"
#include "remote/coordinator.h"

namespace tw {

LostRestarts::LostRestarts(const RunConfig& cfg, const std::vector<NodeRole>& roles)
    : active_((cfg.cluster.mode == "local" || cfg.cluster.mode == "remote") && cfg.cluster.restart_lost > 0),
      limit_(cfg.cluster.restart_lost),
      roles_(roles),
      restarts_(roles.size(), 0) {}

Status LostRestarts::carry_out(LocalCluster* cluster, Coordinator& coord,
                               const std::function<int64_t(const std::string&)>& tokens,
                               const std::function<void(const std::string&)>& log) {
    if (!active_) return Status::ok();
    const auto& nodes = coord.nodes();
    for (size_t i = 0; i < roles_.size() && i < nodes.size(); ++i) {
        if (!nodes[i].lost || roles_[i].kind != "full" || restarts_[i] >= limit_) continue;
        if (!cluster) {
            // A remote node: taken back once its operator has restarted it.
            if (!coord.answers_again(i)) continue;
            ++restarts_[i];
            if (Status st = coord.rejoin_live(i, tokens(roles_[i].name)); !st) return Status::error(roles_[i].name + ": " + st.message());
            log("coordinator: " + roles_[i].name + " was lost and answers again at " + nodes[i].endpoint + " (restart " +
                std::to_string(restarts_[i]) + " of " + std::to_string(limit_) +
                "); it rejoins at a round boundary once its peers admit it");
            return Status::ok();
        }
        ++restarts_[i];
        // Lost may mean hung rather than dead: the process is ended for real before its endpoint is reused.
        if (Status st = cluster->kill_process(i); !st) return Status::error(roles_[i].name + ": " + st.message());
        if (Status st = cluster->respawn_process(i); !st) return Status::error(roles_[i].name + ": " + st.message());
        if (Status st = coord.rejoin_live(i, tokens(roles_[i].name)); !st) return Status::error(roles_[i].name + ": " + st.message());
        log("coordinator: " + roles_[i].name + " was lost; started a fresh process (restart " + std::to_string(restarts_[i]) +
            " of " + std::to_string(limit_) + "), which rejoins at a round boundary once its peers admit it");
        return Status::ok();
    }
    return Status::ok();
}

}  // namespace tw
