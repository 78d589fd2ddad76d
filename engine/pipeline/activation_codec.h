// How one pipeline boundary travels (docs/methods.md §6): what the stage before it encodes its output
// into and the stage after it decodes, and the same for the gradient going back. A stage owns one
// codec per boundary it touches (engine/pipeline/stage.h); both ends of a boundary build equal ones
// from the config.
//   dense     fp32 [B, T, d] each way (dense_codec.cpp)
//   subspace  coordinates C = (X − T_fixed[ids])·U of rank k plus the token ids forward, G·U back
//             (subspace_codec.cpp; the byte layouts are engine/pipeline/subspace.h's)
//
// Tensors: x and g [B, T, d] fp32, ids [B, T] int64; nothing records autograd history. Encoding
// is total (shape mismatches are programmer errors, TORCH_CHECK); decoding a payload of the wrong
// size or with bad contents is a Result error naming what was expected. A codec is immutable after
// construction apart from the T_fixed it shares (AD2 changes it in place on every node alike), so
// one thread at a time uses it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "core/status.h"
#include "core/wire_dtype.h"

namespace tw {

class ActivationCodec {
public:
    virtual ~ActivationCodec() = default;
    virtual std::string name() const = 0;  // "dense", "subspace k=8 bf16"
    virtual int64_t rank() const = 0;      // k; 0 for dense
    // The forward payload carries the micro-batch's token ids (the receiver adds T_fixed[ids]), so
    // the sender must know them.
    virtual bool needs_ids() const = 0;

    // Exact payload bytes for a micro-batch of B×T tokens.
    virtual uint64_t forward_bytes(int64_t B, int64_t T) const = 0;
    virtual uint64_t backward_bytes(int64_t B, int64_t T) const = 0;

    // x: the sending stage's output [B, T, d]; ids: [B, T] (needed when needs_ids()).
    virtual std::vector<uint8_t> encode_activations(const torch::Tensor& x, const torch::Tensor& ids) const = 0;
    // The receiving stage's input [B, T, d]; the token ids go to `ids_out` when the payload has them.
    virtual Result<torch::Tensor> decode_activations(const std::vector<uint8_t>& payload, int64_t B, int64_t T,
                                                     torch::Tensor* ids_out) const = 0;
    // g: the gradient of the loss w.r.t. the receiving stage's input [B, T, d].
    virtual std::vector<uint8_t> encode_gradient(const torch::Tensor& g) const = 0;
    // The gradient the sending stage back-propagates from [B, T, d].
    virtual Result<torch::Tensor> decode_gradient(const std::vector<uint8_t>& payload, int64_t B, int64_t T) const = 0;
};

// Dense fp32 boundaries of width d_model: activations and gradients as they are.
std::unique_ptr<ActivationCodec> make_dense_codec(int64_t d_model);

// Subspace boundaries: `u` [d, k] (subspace_basis), coordinates in `dtype` (fp32, bf16 or int8),
// `t_fixed` [vocab, d] shared with the stage and the worker (a tensor handle: AD2's in-place updates
// reach the codec), ids as uint16 when vocab ≤ 65536.
std::unique_ptr<ActivationCodec> make_subspace_codec(torch::Tensor u, WireDtype dtype, torch::Tensor t_fixed,
                                                     int64_t vocab);

// Intended usage, stage s of a run (both ends of boundary b build the same codec):
//   auto out = k > 0 ? make_subspace_codec(subspace_basis(d, k, seed), dtype, t_fixed, V)
//                    : make_dense_codec(d);
//   sender:   send(out->encode_activations(y.detach(), ids));   y.backward(*out->decode_gradient(recv(), B, T));
//   receiver: x = *in->decode_activations(recv(), B, T, &ids);  send(in->encode_gradient(x.grad()));

}  // namespace tw
