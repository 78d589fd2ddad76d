// Restarts of lost node processes; see lost_restarts.h.
#include "coordinator/lost_restarts.h"

#include "remote/cluster.h"
#include "remote/coordinator.h"

namespace tw {
namespace {

// Full replicas' and pipeline replicas' nodes: spares, HDEE experts and SkipPipe stage nodes are not restarted.
bool restartable(const NodeRole& r) { return r.kind == "full" || r.kind == "pipeline"; }

}  // namespace

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
        if (!nodes[i].lost || !restartable(roles_[i]) || restarts_[i] >= limit_) continue;
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
        // A replica of several nodes (a Gloo group, a pipeline) left as a whole: every node of it
        // starts afresh, its leader (stage 0) first. Lost may mean hung rather than dead: each
        // process is ended for real before its endpoint is reused.
        std::vector<size_t> unit;
        for (size_t j = 0; j < roles_.size(); ++j)
            if (restartable(roles_[j]) && roles_[j].replica == roles_[i].replica) unit.push_back(j);
        for (size_t j : unit) {
            ++restarts_[j];
            if (Status st = cluster->kill_process(j); !st) return Status::error(roles_[j].name + ": " + st.message());
            if (Status st = cluster->respawn_process(j); !st) return Status::error(roles_[j].name + ": " + st.message());
            if (Status st = coord.rejoin_live(j, tokens(roles_[j].name)); !st) return Status::error(roles_[j].name + ": " + st.message());
            log("coordinator: " + (j == i ? roles_[j].name + " was lost" : roles_[j].name + " leaves with its replica") +
                "; started a fresh process (restart " + std::to_string(restarts_[j]) + " of " + std::to_string(limit_) +
                "), which rejoins at a round boundary once its peers admit it");
        }
        return Status::ok();
    }
    return Status::ok();
}

}  // namespace tw
