// NoLoCo (Kolehmainen et al., arXiv 2506.10911), docs/methods.md §5: no collective over all replicas; every
// H steps each replica averages with a small random group instead.
//
// Replica i keeps fast weights θ_i (the live parameters), slow weights φ_i and momentum δ_i. Every
// H inner steps the replicas are permuted by a generator seeded with the step (identical on every
// node, no message needed) and the permutation is cut into groups of g; with R not a multiple of g
// the last group also takes the R mod g left-over replicas (so no replica is ever alone unless
// g = 1 or R = 1). Within a group (members exchange φ_j and θ_j − φ_j, 2·P fp32 values):
//   φ̄ = mean_j φ_j;  d̄ = mean_j (θ_j − φ_j)
//   δ_i ← μ·δ_i + η·d̄ + η·(φ̄ − φ_i);  φ_i ← φ_i + δ_i;  θ_i ← φ_i
// Sign: d̄ points from the slow weights towards the fast ones, so η·d̄ moves φ with the inner
// progress. With one group of all replicas the φ_i stay equal, φ̄ − φ_i = 0, and with DiLoCo's
// Δ̄ = φ − mean θ_j = −d̄ and b = −δ/η this is heavy-ball DiLoCo: b ← μ·b + Δ̄; φ ← φ − η·b.
//
// Guard (guard_ratio > 0): a member's θ_j − φ_j (its pseudo-gradient) whose L2 norm exceeds
// guard_ratio × the lower median of the other members' is scaled down to that bound before the
// mean. φ_j is a weight vector, not an update: a norm bound cannot tell a poisoned φ_j from an honest
// one (a replaced φ_j of the same norm passes), so the φ halves are not guarded (engine/README.md).
//
// Round agreement: the replicas' φ_i, θ_i and δ_i differ by design; what the members of a group hold
// identically after a round is the group's mean payload (φ̄, d̄), so that is what they compare
// (agreed_state(): the group, and the 2·P mean). It catches a member that averaged other payloads
// than the rest of its group (a sender that equivocated, a forged payload one member accepted).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/algorithm.h"
#include "engine/algo/outer.h"
#include "engine/plan/round_cost.h"

namespace tw {

struct NoLoCoConfig {
    int64_t inner_steps = 50;  // H
    double lr_outer = 0.7;     // η
    double momentum = 0.5;     // μ
    int64_t group_size = 2;    // g: replicas per group (the last group takes the remainder)
    double guard_ratio = 0;    // aggregation guard on the θ_j − φ_j halves (aggregation_guard.h); 0 = off
    // How a group averages (core/topology.h): the mesh exchanges whole payloads within the group;
    // the ring all-reduces them around the group in ascending rank order (fp32 on every hop, so only
    // the summation order differs). With g = 2 a ring sends the mesh's bytes in two hops instead of
    // one, hence the mesh default; from g = 3 on it sends fewer.
    Topology topology = Topology::kMesh;
};

// The groups of round `step`: a permutation of 0..replicas−1 (std::mt19937_64 seeded with `step`,
// Fisher–Yates with rejection sampling, so it is the same on every platform) cut into groups of
// `group_size`, each group's ranks ascending, groups in permutation order.
std::vector<std::vector<int>> noloco_groups(int64_t step, int replicas, int64_t group_size);

class NoLoCo : public OuterAlgorithm {
public:
    // `params` (θ_i, contiguous fp32) also become φ_i; δ_i starts at zero.
    NoLoCo(std::vector<torch::Tensor> params, NoLoCoConfig cfg, int replica, int replicas);

    std::string name() const override { return to_string(Algorithm::kNoLoCo); }
    // Every H steps: one exchange within this replica's group (Collective::exchange), bytes_sent =
    // (|group| − 1)·2·P·4 over the mesh; over the ring, its opening and chunks within the group
    // (engine/algo/ring_allreduce.h: 2·(g − 1)/g·2·P·4 when g divides 2·P), 2·(g − 1) hops. A replica whose θ − φ holds NaN or Inf sends an empty payload and fails;
    // its group fails on receiving it.
    Result<RoundReport> after_step(int64_t step, Collective& c, double sim_clock_s) override;
    std::vector<torch::Tensor> eval_params() const override { return slow_; }  // φ_i
    AgreedState agreed_state() const override { return {last_group_, {last_mean_}}; }
    bool round_at(int64_t step) const override;
    OuterState save_state() const override;
    Status load_state(const OuterState& s) override;

    // This replica's group at `step` (ranks ascending) and its index among the groups.
    // `rank` of `members` (−1: this replica of all replicas) when a round runs among survivors.
    std::vector<int> group_of(int64_t step, int* index = nullptr, int* count = nullptr, int rank = -1,
                              int members = -1) const;
    uint64_t payload_bytes() const { return static_cast<uint64_t>(n_params_) * 2 * 4; }
    const std::vector<torch::Tensor>& slow() const { return slow_; }
    const std::vector<torch::Tensor>& momentum() const { return delta_; }

private:
    Result<RoundReport> finish_round(const torch::Tensor& sum, const std::vector<int>& group, RoundReport rep);

    std::vector<torch::Tensor> params_, slow_, delta_;
    NoLoCoConfig cfg_;
    int replica_ = 0, replicas_ = 1;
    int64_t n_params_ = 0;
    std::vector<int> last_group_;  // the last round's group and mean payload [φ̄ | d̄]
    torch::Tensor last_mean_;
};

// Its registry row (registry.cpp): the config's problems for NoLoCo, its construction, and its
// planned rounds (engine/plan/round_cost.h): φ and θ − φ to its group every H steps.
void noloco_problems(const OuterBuild& b, std::vector<std::string>& problems);
Result<std::unique_ptr<OuterAlgorithm>> make_noloco(OuterBuild b);
Result<std::unique_ptr<RoundCostModel>> plan_noloco_rounds(const RunConfig& cfg);

}  // namespace tw
