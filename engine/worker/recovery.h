// What a live replica sends one that (re)joins at a round boundary, or one that missed the round's
// deadline (docs/faults.md): the outer algorithm's state (without what is the newcomer's own, e.g.
// SparseLoCo's error feedback), the donor's live weights when they differ from the global ones
// (Streaming DiLoCo, NoLoCo), the step (the data position follows from it), the round count (for
// the transport's attempt numbers), the donor's simulated clock at the round's end, the round's
// members, the mesh ranks the donor found lost, and which mesh rank holds each replica's place —
// with the place the receiver takes when it is a spare (docs/faults.md "Spares"). One
// point-to-point message on the outer link, counted as recovery bytes (bytes.outer.recovery.*),
// not as the round's.
//
// Layout: "TWRC" | i64 step | i64 rounds | f64 clock_s | u16 n | n × u16 member | u16 m | m × u16
// lost | u32 slot + 1 (0: the receiver keeps its own place) | u16 h | h × u16 holder | outer_state_io block (the
// live weights as "live.i" entries). Untrusted on the way in.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "engine/algo/outer.h"

namespace tw {

struct RecoveryState {
    int64_t step = 0;
    int64_t rounds = 0;    // the donor's synchronisation rounds so far
    double clock_s = 0;    // the donor's simulated clock when it sends
    std::vector<int> members;  // replicas of the round, ascending
    std::vector<int> lost;     // mesh ranks
    int slot = -1;             // the replica a spare takes over; −1 = the receiver stays what it is
    std::vector<int> holders;  // mesh rank holding replica r's place, r = 0..R−1
    OuterState outer;                    // with "live.i" entries when the live weights differ
};

// Whether `bytes` begin like a recovery message (a stale message of an abandoned round does not).
bool is_recovery_message(const std::vector<uint8_t>& bytes);
std::vector<uint8_t> encode_recovery(const RecoveryState& s);
Result<RecoveryState> decode_recovery(const std::vector<uint8_t>& bytes);

// Restarted replicas (cluster.restart_lost): each member of a round contributes the mask of the
// absent replicas it has heard are up again (Collective::gather_words); a replica is admitted when
// every word has its bit, so every member computes the same list. Ascending, below `replicas` and 64.
std::vector<int> admitted_by_every_word(const std::vector<uint64_t>& words, int64_t replicas);

// The state a donor sends: `algo`'s save_state() without its private entries, plus `live` (the
// replica's live parameters) as "live.i" when any differs bitwise from the algorithm's eval_params().
OuterState donor_state(const OuterAlgorithm& algo, const std::vector<torch::Tensor>& live);
// Applies a donor's state on a joiner: load_state (private entries start fresh) and the live
// weights (the donor's live ones, or its global ones when it sent none).
Status apply_donor_state(OuterAlgorithm& algo, std::vector<torch::Tensor>& live, const OuterState& s);

}  // namespace tw
