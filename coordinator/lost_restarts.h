// Restarted nodes (cluster.restart_lost; docs/faults.md "Restarted nodes"): in a child-process run
// (cluster.mode = "local"), a replica's node process that its coordinator marked lost — killed from
// outside, crashed, or silent past cluster.heartbeat_timeout_s — is SIGKILLed (a hung process is
// ended for real), started afresh on the same endpoint and configured to rejoin live
// (Coordinator::rejoin_live). On a remote cluster nobody here can start a process: the node is
// taken back once its operator has restarted `thinwire node` on the same endpoint and it answers
// a hello as an idle node. A replica of several nodes (a Gloo group, a pipeline) comes back as a
// whole: in child processes every node of it is started afresh; remote, once every lost node of it
// answers again and the others have left the run, all are configured again. Its peers admit it at
// the first round boundary after they have all heard that it is up; it then takes a live peer's
// state, as a spare does.
//
// Thread-safety: one thread (the session's poll loop).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/role.h"
#include "core/status.h"

namespace tw {

class Coordinator;
class LocalCluster;

class LostRestarts {
public:
    // Inactive unless cluster.restart_lost > 0 (the config's checks allow it for child processes
    // and remote nodes, replicas of an outer algorithm and pipeline replicas).
    // Full replicas' and pipeline replicas' nodes are restarted.
    LostRestarts(const RunConfig& cfg, const std::vector<NodeRole>& roles);
    bool active() const { return active_; }
    // Restarts the first node the coordinator counts lost that has restarts left (one per call:
    // the caller polls its nodes between calls): with `cluster` (child processes) by starting a
    // fresh process; without it (a remote cluster) once the node's endpoint answers as an idle node
    // again (Coordinator::answers_again). `tokens(name)` is the node's last train.tokens; `log`
    // receives one line per restart.
    Status carry_out(LocalCluster* cluster, Coordinator& coord, const std::function<int64_t(const std::string&)>& tokens,
                     const std::function<void(const std::string&)>& log);

private:
    bool active_ = false;
    int64_t limit_ = 0;
    std::vector<NodeRole> roles_;
    std::vector<int64_t> restarts_;  // per node: restarts so far
    std::vector<bool> answered_;     // per node (remote): answered as idle since it was lost, not yet taken back
};

}  // namespace tw
