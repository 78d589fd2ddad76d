// The activation codecs a pipeline boundary can travel in (pipeline.codec), one row each: its name,
// how to build it for a boundary, and its exact payload bytes for the planner (which builds no
// tensors). A boundary of rank 0 is dense (fp32 as it is); a compressed boundary (rank k > 0) uses
// the codec pipeline.codec names. The worker, the planner and the pipeline bench all take their
// codecs from here, so a codec is added in its own files plus one registration: a row listed in
// activation_codec_registry.cpp, or register_activation_codec at run time (a test's toy codec).
//
// Thread-safe: the table is guarded; a row, once registered, never changes or moves.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <torch/types.h>

#include "core/config.h"
#include "core/status.h"
#include "core/wire_dtype.h"
#include "engine/pipeline/activation_codec.h"

namespace tw {

// One boundary as both its ends see it.
struct BoundaryCodecSpec {
    int64_t d_model = 0;
    int64_t vocab = 0;
    int64_t rank = 0;                          // k: 0 = dense
    WireDtype coord_dtype = WireDtype::kFp32;  // pipeline.coord_dtype
    uint64_t seed = 0;                         // the run's seed: both ends draw the same basis from it
    torch::Tensor t_fixed;                     // [vocab, d] frozen table, shared (AD2 updates it in place);
                                               // undefined where only bytes are asked (the planner)
};

struct ActivationCodecRow {
    std::string name;     // the pipeline.codec value: 1–32 characters of a–z, 0–9 and _
    std::string summary;  // one line for help texts
    std::function<std::unique_ptr<ActivationCodec>(const BoundaryCodecSpec&)> make;
    // Exact payload bytes of a micro-batch of B×T tokens, as the built codec's forward_bytes /
    // backward_bytes would say.
    std::function<uint64_t(const BoundaryCodecSpec&, int64_t B, int64_t T)> forward_bytes, backward_bytes;
};

// Adds a row; an error for a malformed or taken name, or a row without its functions.
Status register_activation_codec(ActivationCodecRow row);
// The row of `name`; nullptr when none has it.
const ActivationCodecRow* activation_codec(std::string_view name);
// "dense, subspace, …" for messages, in registration order.
std::string activation_codec_names();

// The run's boundary of rank `rank`: its spec, and the row that carries it (dense for rank 0,
// else pipeline.codec's). The error names pipeline.codec and the codecs there are.
BoundaryCodecSpec boundary_spec(const RunConfig& cfg, int64_t rank, torch::Tensor t_fixed = {});
Result<const ActivationCodecRow*> boundary_codec(const RunConfig& cfg, int64_t rank);

}  // namespace tw
