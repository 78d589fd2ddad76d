// The fault schedule's events (core/fault_schedule.h, docs/faults.md "Fault schedules") applied
// to a node after a step, the same way on every worker that takes them (a full replica, a node of
// a replica of several nodes, a pipeline's stage node). What is the same everywhere is here:
//
//   * pause: the node's simulated clock stalls (T − S) × this step's compute seconds;
//   * slow: an event (the slow-down itself is FaultSchedule::compute_factor on every segment);
//   * disconnect: the worker marks itself away until the round it rejoins at, an event says so;
//   * kill in a run of child processes (cluster.mode "local"): the data port goes quiet, the rows
//     so far leave first, then the "fault" event and the process-kill event its coordinator kills
//     it on (coordinator/scheduled_kills.h), and the worker waits for the stop;
//   * kill in one process: an event, then the worker ends (no rejoin) or restarts from a peer's
//     state after the round it rejoins at.
//
// What differs — how a worker marks itself away, what its kill events say, how it restarts — is
// its FaultResponses. Membership (core/membership.h) stays the transport's: the applier only asks
// the mesh's member to go quiet.
//
// Ownership: every reference in FaultSite is borrowed for the call. Thread-safety: one worker
// thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "core/collective.h"
#include "core/fault_schedule.h"
#include "core/sim_clock.h"
#include "core/status.h"
#include "engine/worker/worker_recorder.h"

namespace tw {

// The node the events act on.
struct FaultSite {
    const FaultSchedule& schedule;
    int replica = 0;                // whose events: the node's replica
    SimClock& clock;                // stalled by a pause
    WorkerRecorder& rec;            // events, and the rows flushed before a process is killed
    Collective* mesh = nullptr;     // goes quiet before a process kill; null: a node without one
    bool child_process = false;     // cluster.mode "local": a kill is the coordinator's, for real
    const std::atomic<bool>& stop;  // a killed process waits for it
};

// The worker's part of each kind of event.
struct FaultResponses {
    // disconnect: the worker is away through the round at `back` (−1: to the end).
    std::function<void(int64_t back)> away;
    std::string alone = "it";                        // "<entry>: cut off; <alone> trains on alone"
    std::string donor = "the state of a live peer";  // "…, and takes <donor> after the round at step B"
    // Any kill, before anything else (a pipeline's nodes finish the step together). May be empty.
    std::function<void()> before_kill;
    // A killed child process: what its "fault" event adds after "<entry>: the node process is
    // killed" (may be empty: nothing).
    std::function<std::string(int64_t back)> process_kill_more;
    // A kill in one process: its "fault" event's text after "<entry>", and the restart from a
    // peer's state after the round at `back` (called only when back ≥ 0).
    std::function<std::string(int64_t back)> kill_text;
    std::function<Status(int64_t back)> restart;
};

// Applies the events of `at.replica` that start after `step` (its compute `step_compute_s`).
// `left`: the worker ends after this step (killed with no rejoin, or its process killed). An error
// is the restart's.
Status apply_scheduled_faults(const FaultSite& at, int64_t step, double step_compute_s, const FaultResponses& r,
                              bool& left);

}  // namespace tw
