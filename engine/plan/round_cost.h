// What one outer round sends from one replica, for the planner (engine/plan/planner.h): over the
// whole model (a full replica of a run without pipelines) or over one stage's tensors (a stage
// slice of a run with pipeline replicas, docs/methods.md §7: the holders of stage s sync θ_s alone).
// The bytes come from the codecs the algorithms' rounds build (engine/algo/registry.cpp) through
// their own wire_bytes, and for rings from engine/algo/ring_allreduce.h's ring_payload_bytes, over
// the tensors' shapes: never a formula of the planner's own, so a plan's bytes are a run's.
//
// Units: bytes; steps are 1-based inner steps. Shapes only, no tensors. Immutable after create;
// thread-safe for const use.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/config.h"
#include "core/model_size.h"
#include "core/status.h"

namespace tw {

class Codec;
class DctTopkCodec;

struct RoundCost {
    bool synced = false;  // false: this step has no round (nothing else is set)
    uint64_t bytes = 0;   // what the round's trace records (round.bytes): what its clock pays for
    uint64_t sent = 0;    // what the transport counts as sent when it differs from `bytes` (a hub's
                          // upload); 0 = bytes
    int64_t hops = 1;     // sequential transfers (a ring's 2·(R−1)); 1 = one all-gather
    int64_t overlap = 0;  // Streaming DiLoCo's τ: steps until the result is applied; 0 = waited for
    uint64_t group = 0;   // NoLoCo: bitmask of the replicas of this replica's group; 0 = every replica
    uint64_t sent_bytes() const { return sent ? sent : bytes; }
};

class RoundCosts {
public:
    // The codecs of cfg's algorithm, built once. cfg: a checked config with model.vocab_size set.
    static Result<RoundCosts> create(const RunConfig& cfg);
    RoundCosts(RoundCosts&&) noexcept;
    RoundCosts& operator=(RoundCosts&&) noexcept;
    ~RoundCosts();

    // Replica `replica`'s round at inner step `step` over `tensors`: the whole model's
    // (core/model_size.h model_tensors, in that order; Streaming DiLoCo, whose fragments are the
    // whole model's, takes only these) or one stage's, in the stage module's order.
    RoundCost at(int64_t step, int replica, const std::vector<TensorShape>& tensors) const;

private:
    RoundCosts() = default;

    RunConfig cfg_;
    int R_ = 1;
    std::unique_ptr<Codec> dense_;       // DiLoCo, Streaming DiLoCo: outer.dtype
    std::unique_ptr<Codec> sparse_;      // SparseLoCo
    std::unique_ptr<Codec> fp32_;        // NoLoCo's φ and θ − φ
    std::unique_ptr<DctTopkCodec> dct_;  // DeMo
    std::vector<int> fragment_of_;       // Streaming DiLoCo: fragment of each whole-model tensor
    std::vector<int> everyone_;          // 0..R−1
};

}  // namespace tw
