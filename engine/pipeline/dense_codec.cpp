// Dense fp32 boundaries; see activation_codec.h. The bytes are the tensor's fp32 values in
// row-major order, little-endian as the machine holds them (every supported host).
#include <cstring>

#include "engine/pipeline/activation_codec.h"

namespace tw {
namespace {

class DenseCodec : public ActivationCodec {
public:
    explicit DenseCodec(int64_t d) : d_(d) {}
    std::string name() const override { return "dense"; }
    int64_t rank() const override { return 0; }
    bool needs_ids() const override { return false; }
    uint64_t forward_bytes(int64_t B, int64_t T) const override { return bytes(B, T); }
    uint64_t backward_bytes(int64_t B, int64_t T) const override { return bytes(B, T); }

    std::vector<uint8_t> encode_activations(const torch::Tensor& x, const torch::Tensor&) const override {
        return encode(x, "activations");
    }
    Result<torch::Tensor> decode_activations(const std::vector<uint8_t>& payload, int64_t B, int64_t T,
                                             torch::Tensor*) const override {
        return decode(payload, B, T, "activation");
    }
    std::vector<uint8_t> encode_gradient(const torch::Tensor& g) const override { return encode(g, "gradient"); }
    Result<torch::Tensor> decode_gradient(const std::vector<uint8_t>& payload, int64_t B, int64_t T) const override {
        return decode(payload, B, T, "gradient");
    }

private:
    uint64_t bytes(int64_t B, int64_t T) const { return static_cast<uint64_t>(B * T * d_) * 4; }

    std::vector<uint8_t> encode(const torch::Tensor& t, const char* what) const {
        TORCH_CHECK(t.dim() == 3 && t.size(2) == d_, "dense codec: ", what, " must be [B, T, d=", d_, "], got ", t.sizes());
        torch::NoGradGuard no_grad;
        const auto f = t.detach().to(torch::kFloat32).contiguous();
        std::vector<uint8_t> out(bytes(t.size(0), t.size(1)));
        if (!out.empty()) std::memcpy(out.data(), f.data_ptr<float>(), out.size());
        return out;
    }

    Result<torch::Tensor> decode(const std::vector<uint8_t>& payload, int64_t B, int64_t T, const char* what) const {
        const uint64_t need = bytes(B, T);
        if (payload.size() != need)
            return Result<torch::Tensor>::error(std::string("dense codec: ") + what + " payload is " +
                                                std::to_string(payload.size()) + " bytes, expected " +
                                                std::to_string(need) + " (B=" + std::to_string(B) + ", T=" +
                                                std::to_string(T) + ", d=" + std::to_string(d_) + ", fp32)");
        auto t = torch::empty({B, T, d_}, torch::kFloat32);
        if (need > 0) std::memcpy(t.data_ptr<float>(), payload.data(), need);
        return t;
    }

    int64_t d_;
};

}  // namespace

std::unique_ptr<ActivationCodec> make_dense_codec(int64_t d_model) { return std::make_unique<DenseCodec>(d_model); }

}  // namespace tw
