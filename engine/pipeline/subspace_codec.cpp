// Subspace-compressed boundaries (Protocol Models / Subspace Networks, arXiv 2506.01260); see
// activation_codec.h. The byte layouts and the arithmetic are engine/pipeline/subspace.h's; this
// holds what both ends of a boundary share (U, the coordinate dtype, T_fixed, the vocabulary).
#include "engine/pipeline/activation_codec.h"
#include "engine/pipeline/subspace.h"

namespace tw {
namespace {

class SubspaceCodec : public ActivationCodec {
public:
    SubspaceCodec(torch::Tensor u, WireDtype dtype, torch::Tensor t_fixed, int64_t vocab)
        : u_(std::move(u)), dtype_(dtype), t_fixed_(std::move(t_fixed)), vocab_(vocab) {
        TORCH_CHECK(u_.defined() && u_.dim() == 2 && u_.size(1) > 0, "subspace codec: U must be [d, k > 0]");
        TORCH_CHECK(t_fixed_.defined() && t_fixed_.dim() == 2 && t_fixed_.size(0) == vocab_ && t_fixed_.size(1) == d(),
                    "subspace codec: T_fixed must be [vocab=", vocab_, ", d=", d(), "]");
    }
    std::string name() const override {
        return "subspace k=" + std::to_string(rank()) + " " + to_string(dtype_);
    }
    int64_t rank() const override { return u_.size(1); }
    bool needs_ids() const override { return true; }
    uint64_t forward_bytes(int64_t B, int64_t T) const override {
        return forward_wire_bytes(B, T, d(), rank(), dtype_, vocab_);
    }
    uint64_t backward_bytes(int64_t B, int64_t T) const override { return backward_wire_bytes(B, T, d(), rank(), dtype_); }

    std::vector<uint8_t> encode_activations(const torch::Tensor& x, const torch::Tensor& ids) const override {
        return tw::encode_activations(x, ids, t_fixed_, u_, dtype_, vocab_);
    }
    Result<torch::Tensor> decode_activations(const std::vector<uint8_t>& payload, int64_t B, int64_t T,
                                             torch::Tensor* ids_out) const override {
        return tw::decode_activations(payload, B, T, d(), t_fixed_, u_, dtype_, vocab_, ids_out);
    }
    std::vector<uint8_t> encode_gradient(const torch::Tensor& g) const override {
        return tw::encode_gradient(g, u_, dtype_);
    }
    Result<torch::Tensor> decode_gradient(const std::vector<uint8_t>& payload, int64_t B, int64_t T) const override {
        return tw::decode_gradient(payload, B, T, d(), u_, dtype_);
    }

private:
    int64_t d() const { return u_.size(0); }

    torch::Tensor u_;         // [d, k]
    WireDtype dtype_;
    torch::Tensor t_fixed_;   // [vocab, d], shared
    int64_t vocab_;
};

}  // namespace

std::unique_ptr<ActivationCodec> make_subspace_codec(torch::Tensor u, WireDtype dtype, torch::Tensor t_fixed,
                                                     int64_t vocab) {
    return std::make_unique<SubspaceCodec>(std::move(u), dtype, std::move(t_fixed), vocab);
}

}  // namespace tw
