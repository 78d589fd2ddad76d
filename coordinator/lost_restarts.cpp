// Restarts of lost node processes; see lost_restarts.h.
#include "coordinator/lost_restarts.h"

#include "remote/cluster.h"
#include "remote/coordinator.h"

namespace tw {
namespace {

// Full replicas' and pipeline replicas' nodes: spares, HDEE experts and SkipPipe stage nodes are not restarted.
bool restartable(const NodeRole& r) { return replica_node(r.kind); }

}  // namespace

LostRestarts::LostRestarts(const RunConfig& cfg, const std::vector<NodeRole>& roles)
    : active_((cfg.cluster.mode == "local" || cfg.cluster.mode == "remote") && cfg.cluster.restart_lost > 0),
      limit_(cfg.cluster.restart_lost),
      roles_(roles),
      restarts_(roles.size(), 0),
      answered_(roles.size(), false) {}

Status LostRestarts::carry_out(LocalCluster* cluster, Coordinator& coord,
                               const std::function<int64_t(const std::string&)>& tokens,
                               const std::function<void(const std::string&)>& log) {
    if (!active_) return Status::ok();
    const auto& nodes = coord.nodes();
    for (size_t i = 0; i < roles_.size() && i < nodes.size(); ++i) {
        if (!nodes[i].lost || !restartable(roles_[i]) || restarts_[i] >= limit_) continue;
        // A replica of several nodes (a Gloo group, a pipeline) left as a whole: every node of it
        // starts afresh, its leader (stage 0) first.
        std::vector<size_t> unit;
        for (size_t j = 0; j < roles_.size(); ++j)
            if (restartable(roles_[j]) && roles_[j].replica == roles_[i].replica) unit.push_back(j);
        if (!cluster) {
            // Remote nodes: taken back once the operator has restarted every lost one, each
            // answering as an idle node; a node of the replica that left the run whole takes a
            // new configure as it is.
            bool ready = true;
            for (size_t j : unit) {
                if (nodes[j].lost && !answered_[j]) answered_[j] = coord.answers_again(j);
                ready = ready && (nodes[j].lost ? answered_[j] : nodes[j].done) && restarts_[j] < limit_;
            }
            if (!ready) continue;
            for (size_t j : unit) {
                ++restarts_[j];
                answered_[j] = false;
                const bool was_lost = nodes[j].lost;  // rejoin_live counts it in again
                if (Status st = coord.rejoin_live(j, tokens(roles_[j].name)); !st) return Status::error(roles_[j].name + ": " + st.message());
                log("coordinator: " + roles_[j].name +
                    (was_lost ? " was lost and answers again at " + nodes[j].endpoint
                              : " left with its replica and is configured again at " + nodes[j].endpoint) +
                    " (restart " + std::to_string(restarts_[j]) + " of " + std::to_string(limit_) +
                    "); it rejoins at a round boundary once its peers admit it");
            }
            return Status::ok();
        }
        // Child processes: lost may mean hung rather than dead, so each process is ended for real
        // before its endpoint is reused.
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
