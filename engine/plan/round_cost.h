// What one outer round sends from one replica, for the planner (engine/plan/planner.h): over the
// whole model (a full replica of a run without pipelines) or over one stage's tensors (a stage
// slice of a run with pipeline replicas, docs/methods.md §7: the holders of stage s sync θ_s alone).
//
// Each algorithm's round cost lives with it: its engine row (engine/algo/registry.h) points at a
// PlanRounds function in the algorithm's own file, which builds its RoundCostModel from the config
// (the codecs its rounds build, its round schedule). The bytes come from those codecs' own
// wire_bytes and, for rings, from engine/algo/ring_allreduce.h's ring_payload_bytes, over the
// tensors' shapes: never a formula of the planner's own, so a plan's bytes are a run's. The shared
// exchanges below (dense over a mesh or a ring, a sparse all-gather over a mesh or a hub) are what
// the built-in models are made of. An algorithm whose row has no PlanRounds is refused by name.
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

// One algorithm's rounds as the planner sees them.
class RoundCostModel {
public:
    virtual ~RoundCostModel() = default;
    // Replica `replica`'s round at inner step `step` over `tensors`: the whole model's
    // (core/model_size.h model_tensors, in that order) or one stage's, in the stage module's order.
    // A step off the algorithm's round schedule has none (synced = false).
    virtual RoundCost at(int64_t step, int replica, const std::vector<TensorShape>& tensors) const = 0;
};

// Builds an algorithm's model for `cfg` (a checked config naming it, model.vocab_size set).
using PlanRounds = Result<std::unique_ptr<RoundCostModel>> (*)(const RunConfig& cfg);

// ---- the exchanges the built-in models are made of ----

uint64_t sum_wire_bytes(const Codec& codec, const std::vector<TensorShape>& shapes);
int64_t sum_numel(const std::vector<TensorShape>& shapes);
std::vector<int64_t> numels(const std::vector<TensorShape>& shapes);
// 0..outer.replicas − 1.
std::vector<int> every_replica(const RunConfig& cfg);

// A dense exchange of `shapes` with `codec` among `members` (replica indices, ascending) from
// `replica`, over cfg's topology: the mesh sends its payload to every other member, the ring its
// opening (the aggregation guard's norm) and its chunks of `segments` (element counts in order,
// ring_allreduce.h).
RoundCost dense_exchange_cost(const RunConfig& cfg, const Codec& codec, const std::vector<TensorShape>& shapes,
                              const std::vector<int64_t>& segments, const std::vector<int>& members, int replica);
// A sparse payload of `shapes` with `codec` all-gathered among every replica: the mesh sends it to
// the R − 1 others in one hop; the hub uploads it once and downloads the R − 1 others' (recorded as
// R payloads in 2 hops, as engine/algo/sparse_gather_round.h reports them).
RoundCost gather_exchange_cost(const RunConfig& cfg, const Codec& codec, const std::vector<TensorShape>& shapes);

// The model of an algorithm that all-gathers a sparse payload with `codec` every round_period(cfg)
// steps and nothing in between (SparseLoCo, DeMo): gather_exchange_cost on its round steps.
std::unique_ptr<RoundCostModel> plan_gather_rounds(const RunConfig& cfg, std::unique_ptr<Codec> codec);

// The model of an algorithm that exchanges nothing (none: one node).
Result<std::unique_ptr<RoundCostModel>> plan_no_rounds(const RunConfig& cfg);

// ---- the planner's entry ----

class RoundCosts {
public:
    // The model of cfg's algorithm, through its engine row. cfg: a checked config with
    // model.vocab_size set. An error names an algorithm whose row gives no round cost.
    static Result<RoundCosts> create(const RunConfig& cfg);
    RoundCosts(RoundCosts&&) noexcept;
    RoundCosts& operator=(RoundCosts&&) noexcept;
    ~RoundCosts();

    // See RoundCostModel::at (Streaming DiLoCo, whose fragments are the whole model's, takes only
    // the whole model's tensors).
    RoundCost at(int64_t step, int replica, const std::vector<TensorShape>& tensors) const;

private:
    RoundCosts() = default;
    std::unique_ptr<RoundCostModel> model_;
};

}  // namespace tw
