// The activation codec registry (engine/pipeline/activation_codec_registry.h): a toy codec — bf16
// activations and gradients — is added from this file alone, picked by pipeline.codec for the
// compressed boundaries, and carries a two-stage pipeline step with the bytes its row promises;
// rank-0 boundaries stay dense; names are checked.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>

#include "core/config_io.h"
#include "engine/pipeline/activation_codec_registry.h"
#include "engine/pipeline/stage.h"
#include "tests/engine/micro_run.h"

namespace tw {
namespace {

// bf16 both ways: 2 bytes per value, no ids.
class Bf16Codec final : public ActivationCodec {
public:
    explicit Bf16Codec(int64_t d) : d_(d) {}
    std::string name() const override { return "toy_bf16"; }
    int64_t rank() const override { return 0; }
    bool needs_ids() const override { return false; }
    uint64_t forward_bytes(int64_t B, int64_t T) const override { return static_cast<uint64_t>(B * T * d_ * 2); }
    uint64_t backward_bytes(int64_t B, int64_t T) const override { return forward_bytes(B, T); }
    std::vector<uint8_t> encode_activations(const torch::Tensor& x, const torch::Tensor&) const override { return pack(x); }
    Result<torch::Tensor> decode_activations(const std::vector<uint8_t>& p, int64_t B, int64_t T,
                                             torch::Tensor*) const override {
        return unpack(p, B, T);
    }
    std::vector<uint8_t> encode_gradient(const torch::Tensor& g) const override { return pack(g); }
    Result<torch::Tensor> decode_gradient(const std::vector<uint8_t>& p, int64_t B, int64_t T) const override {
        return unpack(p, B, T);
    }

private:
    static std::vector<uint8_t> pack(const torch::Tensor& x) {
        auto h = x.detach().to(torch::kBFloat16).contiguous();
        std::vector<uint8_t> out(static_cast<size_t>(h.numel()) * 2);
        std::memcpy(out.data(), h.data_ptr(), out.size());
        return out;
    }
    Result<torch::Tensor> unpack(const std::vector<uint8_t>& p, int64_t B, int64_t T) const {
        if (p.size() != static_cast<size_t>(B * T * d_ * 2))
            return Result<torch::Tensor>::error("toy_bf16: " + std::to_string(p.size()) + " bytes");
        auto h = torch::empty({B, T, d_}, torch::kBFloat16);
        std::memcpy(h.data_ptr(), p.data(), p.size());
        return h.to(torch::kFloat32);
    }
    int64_t d_;
};

void register_toy() {
    static const bool once = [] {
        ActivationCodecRow row;
        row.name = "toy_bf16";
        row.summary = "bf16 activations and gradients (a test's codec)";
        row.make = [](const BoundaryCodecSpec& b) -> std::unique_ptr<ActivationCodec> { return std::make_unique<Bf16Codec>(b.d_model); };
        row.forward_bytes = [](const BoundaryCodecSpec& b, int64_t B, int64_t T) { return static_cast<uint64_t>(B * T * b.d_model * 2); };
        row.backward_bytes = row.forward_bytes;
        return register_activation_codec(row).is_ok();
    }();
    ASSERT_TRUE(once);
}

RunConfig pipeline_config(const std::string& codec) {
    auto cfg = testing_support::micro_run(61, 1);
    cfg.model.tie_embeddings = false;
    cfg.cluster.stages = 2;
    cfg.pipeline.rank = 8;
    cfg.pipeline.codec = codec;
    return cfg;
}

TEST(ActivationCodecRegistry, NamesAreCheckedAndTakenOnce) {
    register_toy();
    EXPECT_NE(activation_codec("dense"), nullptr);
    EXPECT_NE(activation_codec("subspace"), nullptr);
    EXPECT_EQ(activation_codec("nope"), nullptr);
    const std::string names = activation_codec_names();
    EXPECT_EQ(names.rfind("dense, subspace", 0), 0u) << names;
    EXPECT_NE(names.find("toy_bf16"), std::string::npos) << names;
    ActivationCodecRow again = *activation_codec("toy_bf16");
    EXPECT_FALSE(register_activation_codec(again));
    again.name = "Bad Name";
    EXPECT_FALSE(register_activation_codec(again));
    again.name = "no_factory";
    again.make = nullptr;
    EXPECT_FALSE(register_activation_codec(again));
}

TEST(ActivationCodecRegistry, PipelineCodecPicksTheCompressedBoundariesCodec) {
    register_toy();
    const auto cfg = pipeline_config("toy_bf16");
    EXPECT_EQ(boundary_codec(cfg, 8).value()->name, "toy_bf16");
    EXPECT_EQ(boundary_codec(cfg, 0).value()->name, "dense");  // rank 0 is dense whatever the key says
    EXPECT_EQ(boundary_codec(pipeline_config("subspace"), 8).value()->name, "subspace");
    auto unknown = boundary_codec(pipeline_config("nope"), 8);
    ASSERT_FALSE(unknown);
    EXPECT_NE(unknown.message().find("pipeline.codec \"nope\""), std::string::npos) << unknown.message();
    EXPECT_NE(unknown.message().find("dense, subspace"), std::string::npos) << unknown.message();
    // The key's form is checked with the config; which codecs exist, by the registry.
    auto parsed = parse_config(to_toml(pipeline_config("Not a name")), "layout");
    ASSERT_FALSE(parsed);
    EXPECT_NE(parsed.message().find("pipeline.codec"), std::string::npos) << parsed.message();
}

TEST(ActivationCodecRegistry, AToyCodecCarriesATwoStageStepWithTheBytesItsRowPromises) {
    register_toy();
    const auto cfg = pipeline_config("toy_bf16");
    const ModelConfig& m = cfg.model;
    const int64_t B = 2, T = m.seq_len;
    torch::manual_seed(7);
    const auto win = torch::randint(0, m.vocab_size, {B, T + 1}, torch::kLong);
    const auto ids = win.narrow(1, 0, T), targets = win.narrow(1, 1, T);
    // The same step over dense boundaries, for the loss it should come close to.
    auto step = [&](const ActivationCodecRow& row, uint64_t& fwd, uint64_t& bwd) {
        const auto spec = boundary_spec(cfg, 8);
        PipelineStage s0(m, 5, 0, 2, nullptr, row.make(spec), torch::Tensor());
        PipelineStage s1(m, 5, 1, 2, row.make(spec), nullptr, torch::Tensor());
        auto y = s0.forward(0, ids, {}, B).value();
        fwd = y.size();
        const double loss = s1.forward_loss(0, ids, y, targets, B, 1.0).value();
        auto g = s1.backward(0, {}, B).value();
        bwd = g.size();
        EXPECT_TRUE(s0.backward(0, g, B));
        return loss;
    };
    const ActivationCodecRow& toy = *boundary_codec(cfg, 8).value();
    const ActivationCodecRow& dense = *activation_codec("dense");
    uint64_t fwd = 0, bwd = 0, dense_fwd = 0, dense_bwd = 0;
    const double toy_loss = step(toy, fwd, bwd);
    const double dense_loss = step(dense, dense_fwd, dense_bwd);
    const auto spec = boundary_spec(cfg, 8);
    EXPECT_EQ(fwd, toy.forward_bytes(spec, B, T));
    EXPECT_EQ(bwd, toy.backward_bytes(spec, B, T));
    EXPECT_EQ(fwd, static_cast<uint64_t>(B * T * m.d_model * 2));
    EXPECT_EQ(2 * fwd, dense_fwd);  // half of fp32's bytes
    EXPECT_EQ(dense_fwd, dense.forward_bytes(spec, B, T));
    EXPECT_NEAR(toy_loss, dense_loss, 2e-2);  // bf16's rounding of the hidden states, no more
    EXPECT_NE(toy_loss, dense_loss);
}

}  // namespace
}  // namespace tw
