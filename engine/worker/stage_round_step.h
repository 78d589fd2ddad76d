// One node's per-stage outer rounds after a step (stage_rounds.h), as a pipeline's stage node and
// a full replica of a run with pipeline replicas both take them:
//
//   * away (a scheduled disconnect): no round; after the one it rejoins at, replica 0's state;
//   * the rounds (StageRounds::round); one redone after a loss is a member-lost event;
//   * late (past outer.round_deadline_s): out of the round, replica 0's state after it, the late
//     rows;
//   * otherwise the clock rule (core/round_clock.h RoundKind::kStages: the node's uplink carries its
//     payloads of every slice back to back after the slowest holder), the node's own follow-up, the
//     T_fixed agreement, the round's rows, and replica 0's states to the replicas rejoining after it.
//
// What differs between the two workers — how a node takes replica 0's state, what it does once the
// clock closed the round, how it measures the round's real time — is its StageRoundActs.
//
// Ownership: everything in StageRoundNode is the worker's, borrowed for the call (the counters are
// updated in place). Thread-safety: one worker thread.
#pragma once

#include <cstdint>
#include <functional>

#include <torch/types.h>

#include "core/collective.h"
#include "core/config.h"
#include "core/fault_schedule.h"
#include "core/network.h"
#include "core/sim_clock.h"
#include "core/status.h"
#include "engine/worker/stage_recovery.h"
#include "engine/worker/stage_rounds.h"
#include "engine/worker/worker_recorder.h"

namespace tw {

struct StageRoundNode {
    const RunConfig& cfg;
    const NetworkProfile& net;
    int replica = 0;
    bool reports_late = false;  // writes the `late` event (one node of replica 0)
    StageRounds& rounds;
    SimClock& clock;
    WorkerRecorder& rec;
    Collective& mesh;
    const FaultSchedule& faults;
    const torch::Tensor& t_fixed;  // [V, d]; undefined: the run compresses nothing
    StageRecoveryParts recovery;   // what replica 0's node hands a rejoining replica
    int64_t& down_until;           // away through the round at this step; −1 = present
    int64_t& outer_step;           // synced rounds so far, −1 before the first
    double& round_compute_s;       // compute seconds since the last round; 0 after one
    uint64_t& recovery_sent;       // bytes.outer.recovery.sent
};

struct StageRoundActs {
    // Replica 0's state after the round at `step` in place of the node's (stage_recovery.h).
    std::function<Status(int64_t step)> take_states;
    // After the clock closed the round, before the T_fixed agreement (may be empty).
    std::function<Status(int64_t step)> after_close;
    // The round's metric rows (core/metrics.h round_metrics) from its report, the transfer's cost
    // on its own link `comm_s` and the clock's wait `exposed_s`; round_compute_s still holds the
    // round's compute.
    std::function<void(int64_t step, const StageRoundsReport& rep, double comm_s, double exposed_s)> record_round;
};

Status stage_round_step(const StageRoundNode& node, int64_t step, const StageRoundActs& acts);

}  // namespace tw
