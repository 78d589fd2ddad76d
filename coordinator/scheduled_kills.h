// Scheduled kills carried out for real in child-process runs (cluster.mode = "local"; docs/
// faults.md "Fault schedules"). A replica's node reaches the step of its `kill` entry, reports it
// (a kProcessKillEvent naming the entry's index in the schedule) and waits; this coordinator then SIGKILLs the
// process and, when the schedule brings the replica back, starts a fresh `thinwire node` on the
// same endpoint and configures it to rejoin after the scheduled round (NodeRole::rejoin_step). So
// the kill happens at the scheduled step, and a scheduled run stays deterministic.
//
// Thread-safety: one thread (the session's poll loop). Events are untrusted node output: a report
// that matches no kill entry of that node's replica is ignored, and a node can only have itself
// killed, as its schedule says.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/fault_schedule.h"
#include "core/metrics.h"
#include "core/role.h"
#include "core/status.h"

namespace tw {

class Coordinator;
class LocalCluster;

class ScheduledKills {
public:
    // Inactive (every call does nothing) unless the run is in child processes with [faults]. Every
    // node of a replica of several nodes, and every stage node of a pipeline replica, reports its
    // replica's kill and is killed and restarted.
    ScheduledKills(const RunConfig& cfg, const std::vector<NodeRole>& roles);
    bool active() const { return active_; }
    // Sees every event of the run; remembers the kills the nodes report.
    void on_event(const EventRecord& e);
    // Carries out the first kill reported and not yet carried out (one per call: the caller polls
    // its nodes between calls); `log` receives one line per kill.
    Status carry_out(LocalCluster& cluster, Coordinator& coord, const std::function<void(const std::string&)>& log);

private:
    bool active_ = false;
    FaultSchedule schedule_;
    std::vector<NodeRole> roles_;
    std::vector<bool> done_;                      // per (schedule event, node): carried out
    std::vector<std::pair<size_t, size_t>> due_;  // (node index, schedule event index)
};

}  // namespace tw
