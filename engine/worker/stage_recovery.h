// The state a replica of a run with pipeline replicas takes when it rejoins after a scheduled kill
// (docs/faults.md "Pipeline replicas"), one recovery message (recovery.h) per stage slice on the
// outer link, counted as recovery bytes. The donor of stage s is replica 0's holder of it: replica
// 0 evaluates the global model and a pipeline run never goes on without it, so every node knows
// the donor without asking. After the round the joiners rejoin at, it sends each node of theirs
// that holds stage s:
//   * the slice's donor_state (θ_s and the outer state a newcomer receives; SparseLoCo's error
//     feedback starts at zero), entries as in recovery.h;
//   * "stage": the slice's stage (int64 [1]), checked by the joiner;
//   * "t_fixed": T_fixed [V, d], in the message of the joiner's first slice, when the run
//     compresses anything;
//   * "shadow.emb": θ_global's trainable embedding [V, d], for a later stage that replays stage
//     0's rounds on its own copy of it (core/pipeline_program.h has_embedding_shadow).
// The RecoveryState's members are the replicas present in the round, its lost the mesh ranks the
// donor found lost. A message is untrusted: the joiner checks step, stage, members and every
// tensor's shape before it changes anything of that slice.
//
// Thread-safety: none; the calling worker's thread. The parts are borrowed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "core/collective.h"
#include "core/config.h"
#include "core/fault_schedule.h"
#include "core/network.h"
#include "core/status.h"
#include "engine/algo/outer.h"
#include "engine/worker/stage_rounds.h"

namespace tw {

// What a donor reads from and a joiner writes into, beside the slices of `rounds`.
struct StageRecoveryParts {
    StageRounds* rounds = nullptr;
    torch::Tensor t_fixed;               // undefined: the run compresses nothing
    torch::Tensor shadow_emb;            // a later stage's copy of θ_global's embedding; undefined: none
    OuterAlgorithm* shadow = nullptr;    // the algorithm replaying stage 0's rounds on it
};

struct StageHandOver {
    int64_t step = -1;                // joiner: the round whose state it took
    uint64_t bytes = 0;               // every message's, sent or received
    double ready_s = 0;               // joiner: when the last message has arrived (simulated s)
    std::vector<std::string> texts;   // one per message, for the `recovery` / `rejoin` events
};

// Donor: after the round at `step`, if this node is replica 0's (`replica`), sends each node of
// the replicas `schedule` has rejoin after that round, of the replicas `late` left out of it and
// of the restarted replicas it admitted (StageRounds::admitted; lost ones left out) the state of
// every slice this node holds, the messages leaving at `clock_s`. Waits for each scheduled
// joiner's word that it is up (Membership::wait_ready); an admitted one has said so. Nothing to
// send: an empty hand-over.
Result<StageHandOver> send_stage_states(const RunConfig& cfg, int replica, const FaultSchedule& schedule, int64_t step,
                                        const std::vector<int>& late, double clock_s, Collective& mesh,
                                        const StageRecoveryParts& parts);

// Joiner: a node of replica `replica` rejoining after the round at `step` receives the state of
// every slice it holds from replica 0's holders and takes it on (live weights from the global ones
// where AD1 projects them; reparam's coordinates are the caller's), then rejoins the rounds
// (StageRounds::rejoin). ready_s: the latest donor clock plus the message's transfer over
// round_link(net, replica, {0, replica}).
// A process restarted after a real loss (cluster.restart_lost) passes step −1 and `live_from`, the
// lowest step its peers had reported: it tells every peer but its own replica's other fresh nodes
// that it is up (Membership::kReadyLive), awaits admission, and takes the first state of a round
// at live_from or later (the hand-over's step); whatever it counted lost while it waited is
// forgiven but what the donor counts lost.
Result<StageHandOver> receive_stage_states(const RunConfig& cfg, int replica, int64_t step, Collective& mesh,
                                           const NetworkProfile& net, StageRecoveryParts& parts,
                                           int64_t live_from = -1);

}  // namespace tw
