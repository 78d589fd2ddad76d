// Streaming DiLoCo (Douillard et al., arXiv 2501.18512), docs/methods.md §4: DiLoCo one fragment at a time,
// with the exchange overlapped with τ inner steps and quantised outer gradients.
//
// The blocks are split into F fragments, `sequential` (contiguous layers) or `strided` (layer at
// position j → fragment j mod F). The embedding (`tok_emb`) travels with the fragment holding the
// first layer, the final norm (`norm_f`) and an untied head (`head`) with the fragment holding the
// last layer. Every H/F inner steps one fragment (round robin, fragment 0 first) starts its sync:
//   Δ_f,r = θ_global,f − θ_r,f encoded per tensor with the wire codec (fp32 | bf16 | int8 | fp4),
//   all-gathered (one buffer per replica: the fragment's tensors in parameter order), decoded and
//   averaged in fp32 in replica order (bit-identical on every replica) — over the mesh; over the
//   ring (outer.topology = "ring") the fragment's Δ, flattened in parameter order, is all-reduced
//   with the codec applied to each chunk's piece of each tensor and re-applied at every hop, and
//   every replica holds the same decoded mean (engine/algo/ring_allreduce.h).
// τ inner steps later (at once for τ = 0) the fragment's outer Nesterov step runs from its global
// copy (untouched since the start), PyTorch semantics as DiLoCo with a momentum buffer per tensor:
//   b ← μ·b + Δ̄;  θ_global,f ← θ_global,f − η·(Δ̄ + μ·b);  θ_r,f ← (1−α)·θ_global,f + α·θ_r,f(now).
// With F = 1, τ = 0, α = 0 and fp32 on the wire this is DiLoCo. With guard_ratio > 0 a replica's
// decoded Δ_f,r whose L2 norm (over the fragment) exceeds guard_ratio × the lower median of the
// others' is scaled down to that bound before the average (aggregation_guard.h).
//
// Round agreement: after a fragment's exchange every replica holds the same θ_global (all fragments:
// the applies happen at the same steps everywhere) and the same queued Δ̄'s, the one just exchanged
// included; agreed_state() is all of them, so a divergent average is caught at the exchange that
// produced it even with τ > 0 (the fragment's own θ_global changes only τ steps later).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "core/algorithm.h"
#include "engine/algo/outer.h"
#include "engine/codec/codec.h"
#include "engine/plan/round_cost.h"

namespace tw {

enum class FragmentOrder : uint8_t { kSequential = 0, kStrided = 1 };

struct StreamingDiLoCoConfig {
    int64_t inner_steps = 30;  // H: each fragment syncs once every H steps; one starts every H/F
    int64_t fragments = 3;     // F; H must be a multiple of F
    FragmentOrder order = FragmentOrder::kSequential;
    int64_t overlap_steps = 0;  // τ < H/F: inner steps between a fragment's exchange and its outer step
    double mix_alpha = 0.0;     // α: local fragment ← (1−α)·global + α·local at the outer step
    double lr_outer = 0.7;      // η
    double momentum = 0.9;      // μ (0 = plain outer SGD)
    std::string dtype = "fp4";  // wire codec: fp32 | bf16 | int8 | fp4 (E3M0)
    double guard_ratio = 0;     // aggregation guard over each replica's decoded fragment; 0 = off
    // How a fragment's Δ travels (core/topology.h). The mesh all-gathers the encoded payloads; the
    // ring all-reduces the fragment's flattened Δ, each chunk encoded per tensor piece and re-encoded
    // at every hop (engine/algo/ring_allreduce.h). The struct defaults to the mesh; runs get
    // outer.topology through the registry, whose default is the ring.
    Topology topology = Topology::kMesh;
};

// Fragment index (0..F−1) of every parameter, from the names (`block_<layer>.*`, `tok_emb`, `norm_f`,
// `head`). With F = 1 every parameter is in fragment 0 whatever its name. Errors: F larger than the
// number of layers, a name that fits no rule.
Result<std::vector<int>> assign_fragments(const std::vector<std::string>& names, int64_t fragments,
                                          FragmentOrder order);

class StreamingDiLoCo : public OuterAlgorithm {
public:
    // `params` (θ_r, contiguous fp32) become θ_global; `names` place them in fragments.
    static Result<std::unique_ptr<StreamingDiLoCo>> create(std::vector<torch::Tensor> params,
                                                           const std::vector<std::string>& names,
                                                           StreamingDiLoCoConfig cfg, int replica, int replicas);

    std::string name() const override { return to_string(Algorithm::kStreamingDiLoCo); }
    // At step s: first applies every fragment whose exchange started τ steps ago, then, when s is a
    // multiple of H/F, starts fragment ((s / (H/F)) − 1) mod F's exchange (and applies it now if τ = 0).
    // The report of a start carries the bytes, the clocks and overlap_steps = τ; an apply alone
    // reports nothing (synced = false). A replica whose Δ holds NaN or Inf sends an empty payload
    // and fails; its peers fail on receiving it.
    Result<RoundReport> after_step(int64_t step, Collective& c, double sim_clock_s) override;
    std::vector<torch::Tensor> eval_params() const override { return global_; }
    AgreedState agreed_state() const override;
    bool round_at(int64_t step) const override;
    OuterState save_state() const override;
    Status load_state(const OuterState& s) override;

    const std::vector<int>& fragment_of() const { return fragment_of_; }  // per parameter
    // Exact bytes one replica sends to each peer when fragment f syncs over the mesh (Σ of the
    // codec's wire_bytes).
    uint64_t payload_bytes(int fragment) const;
    // The fragment's tensors (their element counts, in parameter order): the ring's segments.
    std::vector<int64_t> fragment_segments(int fragment) const;
    const std::vector<torch::Tensor>& global() const { return global_; }
    int64_t pending() const { return static_cast<int64_t>(pending_.size()); }  // exchanges not yet applied

private:
    StreamingDiLoCo() = default;
    struct Pending {
        int fragment = 0;
        int64_t apply_step = 0;
        std::vector<torch::Tensor> mean;  // Δ̄ per parameter of the fragment (in parameter order)
    };
    Result<RoundReport> start(int fragment, int64_t step, Collective& c, double sim_clock_s);
    Result<RoundReport> start_ring(int fragment, const std::vector<size_t>& members, int64_t step, Collective& c,
                                   double sim_clock_s);
    void apply(const Pending& p);

    std::vector<torch::Tensor> params_, global_, momentum_;
    std::vector<int> fragment_of_;
    StreamingDiLoCoConfig cfg_;
    std::unique_ptr<Codec> codec_;
    int replica_ = 0, replicas_ = 1;
    std::deque<Pending> pending_;
};

// Its registry row (registry.cpp): the config's problems for Streaming DiLoCo, its construction,
// and its planned rounds (engine/plan/round_cost.h): one fragment's dense exchange every H/F steps,
// over the whole model's tensors only (the fragments are the whole model's).
void streaming_diloco_problems(const OuterBuild& b, std::vector<std::string>& problems);
Result<std::unique_ptr<OuterAlgorithm>> make_streaming_diloco(OuterBuild b);
Result<std::unique_ptr<RoundCostModel>> plan_streaming_diloco_rounds(const RunConfig& cfg);

}  // namespace tw
