// DeMo (Peng, Quesnelle, Kingma, "DeMo: Decoupled Momentum Optimization", arXiv 2411.19870), applied
// to the pseudo-gradient every H inner steps (docs/demo.md: the departure from the paper, which
// replaces the optimizer and syncs every step; with H = 1 and plain SGD inner steps this is the paper's).
//
// Every H inner steps, per replica r and per parameter tensor (fp32 throughout):
//   m_r ← β·m_r + Δ_r                       (Δ_r = θ_global − θ_r; m starts at zero)
//   C   = chunked DCT-II of m_r              (codec/dct_topk.h: s×s tiles, runs of s)
//   q_r = the K_n largest |C| of every chunk (their positions and values, or signs, are the payload)
//   m_r ← m_r − IDCT(q_r)                    (the transmitted components leave the momentum)
// then the replicas all-gather their payloads (one byte buffer per replica: the tensors' payloads
// concatenated in parameter order) and every replica, in replica order so all compute bit-identical
// results, sums the decoded coefficients (with the aggregation guard's factor when guard_ratio > 0),
// divides by R and transforms back:
//   U = IDCT(Σ_r q̂_r / R);   θ_global ← θ_global − η·sign(U)  (sign_update; else − η·U);   θ_r ← θ_global.
// Bytes per replica per round: (R−1)·Σ_tensors [3·⌈K/2⌉ + (4·K | ⌈K/8⌉)] (DctTopkCodec::wire_bytes).
//
// Not thread-safe: one object per replica, called from that replica's worker thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/algorithm.h"
#include "core/topology.h"
#include "engine/algo/sparse_gather_method.h"
#include "engine/codec/dct_topk.h"
#include "engine/plan/round_cost.h"

namespace tw {

struct DeMoConfig {
    int64_t inner_steps = 15;  // H: inner steps per round
    double lr_outer = 1e-3;    // η: the step of every coordinate under sign_update
    double beta = 0.999;       // β, momentum decay
    DctTopkConfig dct;         // chunk side, kept coefficients per chunk, values or signs on the wire
    bool sign_update = true;   // θ ← θ − η·sign(U) (the paper) or θ ← θ − η·U
    double guard_ratio = 0;    // aggregation guard over each replica's decoded values (aggregation_guard.h); 0 = off
    Topology topology = Topology::kMesh;  // mesh or hub (core/topology.h)
};

class DeMo : public SparseGatherMethod {
public:
    // `params` are the replica's live parameters (θ_r, contiguous fp32); their values now become
    // θ_global. `replica` / `replicas` must match the collective's rank / size at every round.
    // The config must be valid (make_demo checks it). Rounds, state and exchange are
    // SparseGatherMethod's, with the momentum as its buffer ("m").
    DeMo(std::vector<torch::Tensor> params, DeMoConfig cfg, int replica, int replicas);

    OuterState save_state() const override { return save_global_and_buffer(); }
    Status load_state(const OuterState& s) override { return load_global_and_buffer(s, {}); }

    const std::vector<torch::Tensor>& momentum() const { return buffer_; }

private:
    Status encode_own(std::vector<uint8_t>& out) override;
    Status apply(const std::vector<std::vector<uint8_t>>& all) override;

    DeMoConfig cfg_;
    const DctTopkCodec* dct_;  // the codec the base owns, as the DCT codec it is
};

// Its registry row (registry.cpp): the config's problems for DeMo, its construction, and its
// planned rounds (engine/plan/round_cost.h): its coefficients all-gathered every H steps.
void demo_problems(const OuterBuild& b, std::vector<std::string>& problems);
Result<std::unique_ptr<OuterAlgorithm>> make_demo(OuterBuild b);
Result<std::unique_ptr<RoundCostModel>> plan_demo_rounds(const RunConfig& cfg);

}  // namespace tw
