// DiLoCo (Douillard et al., arXiv 2311.08105), docs/methods.md §2: every H inner steps each replica
// sends its pseudo-gradient Δ_r = θ − θ_r, all replicas average them and take one outer Nesterov
// step with PyTorch semantics:  b ← μ·b + Δ̄;  θ ← θ − η·(Δ̄ + μ·b);  then θ_r ← θ.
// The inner optimizer's state is left alone (kept across rounds). With guard_ratio > 0 each Δ_r whose
// L2 norm exceeds guard_ratio × the lower median of the others' is scaled down to that bound first.
//
// Topology (core/topology.h): the mesh all-gathers every Δ_r (fp32 or bf16) and each replica averages
// them in rank order; the ring (engine/algo/ring_allreduce.h) all-reduces the flattened Δ over the
// replicas in rank order, bf16 re-rounded per hop, every replica then holding the same decoded
// mean. The guard in a ring scales by self-reported norms (ring_allreduce.h says what that means).
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "core/collective.h"
#include "core/status.h"
#include "core/topology.h"
#include "core/wire_dtype.h"

namespace tw {

struct DiLoCoConfig {
    double lr_outer = 0.7;               // η
    double momentum = 0.9;               // μ (0 = plain outer SGD)
    WireDtype dtype = WireDtype::kFp32;  // pseudo-gradients on the wire: fp32 or bf16; averaging is fp32
    double guard_ratio = 0;              // aggregation guard (aggregation_guard.h): 0 = off
    // How Δ travels. The class defaults to the mesh (its direct users, tests and `bench outer`);
    // runs get outer.topology through the registry (diloco_outer.cpp), whose default is the ring.
    Topology topology = Topology::kMesh;
    // Time-budgeted rounds (core/time_budget.h): this replica's Δ is multiplied by it before the
    // exchange (R·w_r/Σw), so the plain mean of the mesh or the ring is the token-weighted mean.
    // 1 = unweighted (and then no multiplication at all, bit for bit as before).
    double contribution_scale = 1.0;
};

// Wall-clock seconds (steady clock) of the phases of one sync(), to separate the outer step's own
// cost from its communication.
struct SyncTimings {
    double encode_s = 0;  // pseudo-gradient, flatten, cast, copy into the wire buffer
    double comm_s = 0;    // the all_gather (mesh) or the ring, including waiting for the slowest replica
    double apply_s = 0;   // decode + average + outer Nesterov + copy back into the live params
};

class DiLoCo {
public:
    // `params` are the replica's live parameters (θ_r); their values now become the global θ.
    DiLoCo(std::vector<torch::Tensor> params, DiLoCoConfig cfg);

    // One outer round over `c`. On return every replica's params equal the same new θ.
    // `sim_clock_s` travels with the payload; `clocks` (optional) receives every replica's.
    Status sync(Collective& c, double sim_clock_s = 0, std::vector<double>* clocks = nullptr);

    // This replica's part of a round it cannot take part in (its Δ would carry NaN or Inf): the
    // message its peers' sync() refuses at once, naming it — an empty payload on the mesh, the
    // ring's refusal (ring_refuse) on the ring.
    void refuse_round(Collective& c, double sim_clock_s) const;

    // Payload bytes one replica sends to each peer per round over the mesh: P·b (b = 4 for fp32, 2 for bf16).
    static uint64_t payload_bytes(int64_t n_params, WireDtype dtype) {
        return static_cast<uint64_t>(n_params) * (dtype == WireDtype::kFp32 ? 4u : 2u);
    }
    int64_t num_params() const { return n_params_; }
    const std::vector<torch::Tensor>& global() const { return global_; }
    // The state carried between rounds (θ and the outer momentum), for save_state / load_state.
    std::vector<torch::Tensor>& global_state() { return global_; }
    std::vector<torch::Tensor>& momentum_state() { return momentum_; }
    // Phases of the last sync() that returned ok (all zero before the first).
    const SyncTimings& last_timings() const { return timings_; }
    // Contributions the aggregation guard scaled down in the last sync().
    int last_guard_clipped() const { return guard_clipped_; }
    // Payload bytes this replica sent in the last sync() that returned ok, and its sequential
    // transfers: mesh (R−1)·P·b in 1 hop; ring the ring's bytes (ring_allreduce.h) in 2·(R−1).
    uint64_t last_bytes_sent() const { return bytes_sent_; }
    int64_t last_hops() const { return hops_; }

private:
    // The outer Nesterov step from the averaged Δ̄ (flat fp32, P), then θ_r ← θ.
    void apply_mean(const torch::Tensor& avg);

    std::vector<torch::Tensor> params_, global_, momentum_;
    DiLoCoConfig cfg_;
    int64_t n_params_ = 0;
    SyncTimings timings_;
    int guard_clipped_ = 0;
    uint64_t bytes_sent_ = 0;
    int64_t hops_ = 1;
};

}  // namespace tw
