// SparseLoCo (Sarfi et al., arXiv 2508.15706), docs/methods.md §3: error feedback, chunked Top-k and 2-bit
// values instead of DiLoCo's dense pseudo-gradients and outer momentum.
//
// Every H inner steps, per replica r and per parameter tensor:
//   e_r ← β·e_r + Δ_r                  (Δ_r = θ_global − θ_r, fp32; e starts at zero)
//   payload_r = encode(e_r)            (SparseLoCo codec: chunked Top-k + 2-bit quantiser)
//   e_r ← e_r − decode(payload_r)      (the buffer keeps the Top-k and the quantisation residual)
// then all replicas all-gather their payloads (one byte buffer per replica: the tensors' payloads
// concatenated in parameter order) and every replica aggregates them in replica order, so all
// compute bit-identical results:
//   mean_over_replicas:  Δ̄[j] = Σ_r v_r[j] / R          (v_r[j] = 0 where r did not select j)
//   mean_over_selectors: Δ̄[j] = Σ_r v_r[j] / |{r : r selected j}|   (0 where nobody did)
// optionally after median-norm clipping (per tensor, replica r's decoded values are scaled by
// min(1, m / ‖v_r‖₂), m the median of ‖v_r‖₂ over replicas; the mean of the two middle norms for
// even R). Before that, with guard_ratio > 0, a replica whose decoded values (all tensors together)
// have an L2 norm above guard_ratio × the lower median of the other replicas' is scaled down to that
// bound (aggregation_guard.h). Then plain outer SGD, θ_global ← θ_global − η·Δ̄, and θ_r ← θ_global.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/algorithm.h"
#include "core/topology.h"
#include "engine/algo/sparse_gather_method.h"
#include "engine/codec/codec.h"
#include "engine/plan/round_cost.h"

namespace tw {

enum class Aggregation : uint8_t { kMeanOverReplicas = 0, kMeanOverSelectors = 1 };

struct SparseLoCoConfig {
    int64_t inner_steps = 30;  // H: inner steps per round
    double lr_outer = 1.0;     // η (plain SGD on Δ̄, no momentum)
    double ef_beta = 0.95;     // β, error-feedback decay
    TopkConfig topk;           // chunk side and kept entries per full chunk
    Aggregation aggregation = Aggregation::kMeanOverReplicas;
    bool clip_median = false;  // scale each replica's values to at most the median L2 norm (per tensor)
    double guard_ratio = 0;    // aggregation guard over each replica's whole payload (aggregation_guard.h); 0 = off
    // Time-budgeted rounds (core/time_budget.h): replica r's decoded values are weighted by
    // replica_weights[r] = R·w_r/Σw in the aggregate (mean over replicas: Σ w_r v_r / Σ w; mean over
    // selectors: Σ w_r v_r / Σ of the selectors' w). Error feedback is not weighted. Empty = unweighted.
    std::vector<double> replica_weights;
    Topology topology = Topology::kMesh;  // mesh or hub (core/topology.h)
};

// Heterogeneous SparseLoCo's hooks (docs/methods.md §7) are the outer-algorithm interface's RoundHooks
// (engine/algo/outer.h); SparseLoCo runs all three.
using SparseLoCoHooks = RoundHooks;

class SparseLoCo : public SparseGatherMethod {
public:
    // `params` are the replica's live parameters (θ_r); their values now become θ_global.
    // `replica` / `replicas` must match the collective's rank / size at every round. Rounds,
    // state and exchange are SparseGatherMethod's, with the error feedback as its buffer ("ef");
    // each replica's payload is the SparseLoCo codec's, 20 + 3·ceil(K/2) + ceil(K/4) bytes per
    // tensor for K kept values.
    SparseLoCo(std::vector<torch::Tensor> params, SparseLoCoConfig cfg, int replica, int replicas);

    OuterState save_state() const override;
    Status load_state(const OuterState& s) override;

    const std::vector<torch::Tensor>& error_feedback() const { return buffer_; }
    // Installs the hooks; with delta_from_start the live weights now are the first round's start.
    void set_hooks(SparseLoCoHooks hooks);
    HookSupport set_round_hooks(RoundHooks hooks) override;
    // Tensor 0's codec payload is the prefix of every member's payload (wire_bytes of its shape).
    // When the aggregation guard scaled a contribution in the last round, the guard's factors follow,
    // since a replayer sees tensor 0 alone and could not judge the whole contributions:
    //   R × f32 factor | u32 R | "TWGF" (little-endian). Rounds the guard left alone send none.
    std::optional<std::vector<uint8_t>> leading_tensor_payloads() const override;
    Status replay_round(const std::vector<uint8_t>& leading_payloads, int max_members) override;

    // Every member's payload of the last round, in member order.
    const std::vector<std::vector<uint8_t>>& last_round() const { return all_; }
    // Replays a round without exchanging: aggregates `payloads` (each member's encoding of this
    // object's tensors, e.g. a prefix of the tensors the members hold), steps θ_global and runs the
    // hooks, exactly as sync() does. A node that is not a member keeps a bit-identical copy of some
    // tensors this way (AD2's frozen embedding on a pipeline's later stages).
    Status replay(const std::vector<std::vector<uint8_t>>& payloads);

private:
    Status encode_own(std::vector<uint8_t>& out) override;
    Status apply(const std::vector<std::vector<uint8_t>>& all) override { return replay(all); }
    Status aggregate(const std::vector<std::vector<uint8_t>>& all, std::vector<torch::Tensor>& mean);

    std::vector<torch::Tensor> start_;  // AD6's start of the round (empty without delta_from_start)
    SparseLoCoHooks hooks_;
    SparseLoCoConfig cfg_;
    std::vector<std::vector<uint8_t>> all_;
    std::vector<float> last_guard_;      // the guard's factor per member in the last aggregation
    std::vector<float> guard_override_;  // replay_round: the members' factors as the round applied them
};

// Its registry row (registry.cpp): the config's problems for SparseLoCo, its construction, and its
// planned rounds (engine/plan/round_cost.h): its payload all-gathered every H steps.
void sparseloco_problems(const OuterBuild& b, std::vector<std::string>& problems);
Result<std::unique_ptr<OuterAlgorithm>> make_sparseloco(OuterBuild b);
Result<std::unique_ptr<RoundCostModel>> plan_sparseloco_rounds(const RunConfig& cfg);

}  // namespace tw
