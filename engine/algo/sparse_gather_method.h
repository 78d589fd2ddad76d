// The frame shared by the outer methods whose replicas keep a private buffer and all-gather a
// sparse payload of it every H inner steps (SparseLoCo's error feedback, DeMo's momentum): the
// global weights θ_global every replica agrees on, the buffer, the round schedule, the exchange
// (engine/algo/sparse_gather_round.h), the decoding of every replica's payload and the state they
// save. A method supplies what differs: how it encodes its own payload and how it applies
// everyone's.
//
// Tensors: every parameter is contiguous fp32 of its own shape; θ_global and the buffer have the
// parameters' shapes, in the parameters' order. The parameters are the replica's live weights,
// shared with its model (their handles are kept; a round writes θ_global into them).
//
// Not thread-safe: one object per replica, called from that replica's worker thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/algorithm.h"
#include "core/topology.h"
#include "engine/algo/outer.h"
#include "engine/codec/codec.h"

namespace tw {

class SparseGatherMethod : public OuterAlgorithm {
public:
    std::string name() const override { return to_string(algorithm_); }
    // Runs sync() when step is a multiple of H; otherwise reports nothing.
    Result<RoundReport> after_step(int64_t step, Collective& c, double sim_clock_s) override;
    std::vector<torch::Tensor> eval_params() const override { return global_; }
    // Every replica holds the same θ_global after a round (the buffers differ).
    AgreedState agreed_state() const override { return {{}, global_}; }
    bool round_at(int64_t step) const override;
    // The buffer accumulates this replica's own updates: a newcomer starts it at zero.
    bool private_state(const std::string& name) const override { return name.rfind(buffer_name_ + ".", 0) == 0; }

    // One round now. A replica whose buffer holds NaN or Inf sends an empty payload (so its peers
    // fail at once naming it instead of waiting for a timeout) and returns the error; a peer's
    // empty, truncated or malformed payload is an error on every receiver. After an error the
    // state is undefined.
    Result<RoundReport> sync(Collective& c, double sim_clock_s);

    // Exact bytes one replica sends to each peer per round: Σ over tensors of the codec's wire_bytes.
    uint64_t payload_bytes() const;
    const std::vector<torch::Tensor>& global() const { return global_; }
    // This replica's payload of the last round (for tests of the buffer's identity).
    const std::vector<uint8_t>& last_payload() const { return mine_; }
    // Contributions the aggregation guard scaled down in the last round.
    int last_guard_clipped() const { return guard_clipped_; }
    const Codec& codec() const { return *codec_; }

protected:
    // `params`: the replica's live parameters; their values now become θ_global and the buffer
    // starts at zero. `buffer_name` prefixes the buffer's saved state ("ef", "m"). `replica` /
    // `replicas` must match the collective's rank / size at every round.
    SparseGatherMethod(Algorithm algorithm, std::vector<torch::Tensor> params, std::unique_ptr<Codec> codec,
                       int64_t inner_steps, Topology topology, std::string buffer_name, int replica, int replicas);

    // Appends this replica's payload of every tensor, in parameter order, to `out` (cleared first),
    // updating the buffer. An error (a non-finite buffer) makes this replica send an empty payload.
    virtual Status encode_own(std::vector<uint8_t>& out) = 0;
    // Applies every replica's payload, in rank order: steps θ_global and copies it into the parameters.
    virtual Status apply(const std::vector<std::vector<uint8_t>>& all) = 0;

    // Decodes every replica's payload into dec[replica][tensor], checking that it is there (empty:
    // that replica's `buffer_what`, e.g. "momentum", held NaN or Inf), that its values are finite
    // and its indices in range, and that it has exactly the bytes of this model's tensors.
    Status decode_all(const std::vector<std::vector<uint8_t>>& all, const char* buffer_what,
                      std::vector<std::vector<SparsePayload>>& dec) const;
    // "<algorithm>: replica r, tensor i", the start of a message about one tensor's payload.
    std::string where(int replica, size_t tensor) const;

    // The saved state: "global" and the buffer, then `extra` keys of the method's own. Loading
    // refuses keys outside them and a state without global; a state without the buffer is a
    // newcomer's, whose buffer starts at zero.
    OuterState save_global_and_buffer() const;
    Status load_global_and_buffer(const OuterState& s, const std::vector<std::string>& extra);

    Algorithm algorithm_;
    std::vector<torch::Tensor> params_, global_;
    std::vector<torch::Tensor> buffer_;  // the method's private buffer (error feedback, momentum)
    std::unique_ptr<Codec> codec_;
    int64_t inner_steps_;
    Topology topology_;
    std::string buffer_name_;
    int replica_ = 0, replicas_ = 1;
    std::vector<uint8_t> mine_;
    int guard_clipped_ = 0;
};

// What every sparse-gather method's config (SparseLoCoConfig, DeMoConfig) takes from [outer] alike:
// H, η, the aggregation guard's ratio and the topology; the rest is the method's own.
template <class MethodConfig>
void take_shared_outer(const RunConfig& cfg, MethodConfig& c) {
    c.inner_steps = cfg.outer.inner_steps;
    c.lr_outer = cfg.outer.lr;
    c.guard_ratio = cfg.outer.guard_ratio;
    c.topology = topology_of(cfg);
}

}  // namespace tw
