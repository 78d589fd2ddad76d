// Which replicas a stage round of a run with pipeline replicas runs among when replicas may be lost
// (docs/faults.md "A pipeline replica that loses a node"). Each holder of a stage knows of losses
// at its own pace — a stage node learns of a loss in another stage only from a peer — so before an
// attempt the holders compare the replicas they count present: each sends its set as a bit mask in
// a framing-only round, and a holder that finds another set among those it received gives the
// attempt up and redoes it among the replicas every set it saw names (their intersection). Sets
// only shrink, and every exclusion goes back to a loss someone found. Pure functions, no sockets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/layout.h"
#include "core/status.h"

namespace tw {

// A mask travels as the exact integer value of a double (the frame's clock field), so replicas
// 0..51 only: a run whose pipeline rounds survive losses has at most this many (core/layout.h).
inline constexpr int64_t kMaxMaskReplicas = kMaxSurvivorReplicas;
static_assert(kMaxMaskReplicas <= 53, "a mask must be an exact integer of a double");

// Replica r → bit r (r < kMaxMaskReplicas).
uint64_t replica_mask(const std::vector<int>& replicas);
// Ascending replicas of `mask`.
std::vector<int> mask_replicas(uint64_t mask);
// A peer's mask as it arrived: hostile input. Not an integer, negative, or naming a replica
// outside 0..replicas−1 → a named error.
Result<uint64_t> mask_from_wire(double v, int64_t replicas);

struct ViewCheck {
    bool agreed = true;        // every member of the view counts the same replicas present
    std::vector<int> present;  // the replicas every received set names (ascending)
    std::vector<int> other;    // !agreed: the first received set that differs from this member's
};
// This member's present replicas `mine` against the values the view's members sent (its own among
// them), for a run of `replicas` replicas.
Result<ViewCheck> check_views(uint64_t mine, const std::vector<double>& sent, int64_t replicas);

}  // namespace tw
