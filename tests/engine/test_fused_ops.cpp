// Fused kernels against the composite ATen expressions they replace, values and gradients,
// with the reference computed in double precision.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "engine/model/fused_ops.h"

namespace tw {
namespace {

torch::Tensor randn(std::vector<int64_t> shape, uint64_t seed) {
    auto g = at::make_generator<at::CPUGeneratorImpl>(seed);
    return at::normal(0.0, 1.0, shape, g, torch::kFloat32);
}

// Gradients of sum(out · probe) w.r.t. inputs, for a fused (fp32) and a reference (fp64) function.
void expect_close(const torch::Tensor& a, const torch::Tensor& b, double tol, const char* what) {
    const double err = (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
    const double scale = std::max(1.0, b.abs().max().item<double>());
    EXPECT_LT(err / scale, tol) << what;
}

TEST(FusedOps, RmsNormMatchesTheCompositeInValueAndGradient) {
    auto x = randn({3, 5, 48}, 1).requires_grad_(true), w = (randn({48}, 2) + 1).requires_grad_(true);
    auto probe = randn({3, 5, 48}, 3);
    auto y = fused::rms_norm(x, w, 1e-5);
    (y * probe).sum().backward();

    auto xd = x.detach().to(torch::kDouble).requires_grad_(true), wd = w.detach().to(torch::kDouble).requires_grad_(true);
    auto yd = xd * torch::rsqrt(xd.pow(2).mean(-1, true) + 1e-5) * wd;
    (yd * probe.to(torch::kDouble)).sum().backward();
    expect_close(y, yd, 1e-5, "value");
    expect_close(x.grad(), xd.grad(), 1e-4, "grad x");
    expect_close(w.grad(), wd.grad(), 1e-4, "grad w");
}

TEST(FusedOps, QkvRopeMatchesSplitPermuteAndRotateHalf) {
    const int64_t B = 2, T = 7, h = 3, hd = 8, d = h * hd;
    auto qkv = randn({B, T, 3 * d}, 4).requires_grad_(true);
    auto cos = randn({T, hd}, 5), sin = randn({T, hd}, 6);
    auto out = fused::qkv_rope(qkv, cos, sin, h);
    std::vector<torch::Tensor> probes = {randn({B, h, T, hd}, 7), randn({B, h, T, hd}, 8), randn({B, h, T, hd}, 9)};
    ((out[0] * probes[0]).sum() + (out[1] * probes[1]).sum() + (out[2] * probes[2]).sum()).backward();

    auto qd = qkv.detach().to(torch::kDouble).requires_grad_(true);
    auto parts = qd.view({B, T, 3, h, hd}).permute({2, 0, 3, 1, 4}).unbind(0);
    auto c = cos.to(torch::kDouble), s = sin.to(torch::kDouble);
    auto rope = [&](const torch::Tensor& x) {
        auto halves = x.chunk(2, -1);
        return x * c + torch::cat({-halves[1], halves[0]}, -1) * s;
    };
    std::vector<torch::Tensor> ref = {rope(parts[0]), rope(parts[1]), parts[2]};
    torch::Tensor total = torch::zeros({}, torch::kDouble);
    for (int i = 0; i < 3; ++i) {
        expect_close(out[i], ref[i], 1e-5, "value");
        EXPECT_TRUE(out[i].is_contiguous());
        total = total + (ref[i] * probes[i].to(torch::kDouble)).sum();
    }
    total.backward();
    expect_close(qkv.grad(), qd.grad(), 1e-5, "grad qkv");
}

TEST(FusedOps, QkvRopeBackwardToleratesUnusedOutputs) {
    auto qkv = randn({1, 4, 3 * 8}, 10).requires_grad_(true);
    auto out = fused::qkv_rope(qkv, randn({4, 4}, 11), randn({4, 4}, 12), 2);
    out[2].sum().backward();  // only v reaches the loss
    EXPECT_EQ(qkv.grad().narrow(2, 0, 16).abs().max().item<float>(), 0.0f);
    EXPECT_EQ(qkv.grad().narrow(2, 16, 8).min().item<float>(), 1.0f);
}

TEST(FusedOps, CausalAttentionMatchesMaskedSoftmaxAttention) {
    ASSERT_TRUE(fused::has_cblas()) << "Debian's LibTorch brings OpenBLAS, which exports cblas_sgemm";
    const int64_t B = 2, H = 3, T = 9, hd = 4;
    auto q = randn({B, H, T, hd}, 20).requires_grad_(true), k = randn({B, H, T, hd}, 21).requires_grad_(true),
         v = randn({B, H, T, hd}, 22).requires_grad_(true);
    auto probe = randn({B, T, H * hd}, 23);
    auto y = fused::causal_attention(q, k, v);
    (y * probe).sum().backward();

    auto qd = q.detach().to(torch::kDouble).requires_grad_(true), kd = k.detach().to(torch::kDouble).requires_grad_(true),
         vd = v.detach().to(torch::kDouble).requires_grad_(true);
    auto mask = torch::ones({T, T}, torch::kBool).triu(1);
    auto att = torch::softmax(torch::matmul(qd, kd.transpose(-2, -1)).div(2.0).masked_fill(mask, -INFINITY), -1);
    auto yd = torch::matmul(att, vd).transpose(1, 2).reshape({B, T, H * hd});
    (yd * probe.to(torch::kDouble)).sum().backward();
    expect_close(y, yd, 1e-5, "value");
    expect_close(q.grad(), qd.grad(), 1e-5, "grad q");
    expect_close(k.grad(), kd.grad(), 1e-5, "grad k");
    expect_close(v.grad(), vd.grad(), 1e-5, "grad v");
}

TEST(FusedOps, SwigluMatchesSiluTimesGate) {
    auto ab = randn({2, 6, 2 * 20}, 15).requires_grad_(true);
    auto probe = randn({2, 6, 20}, 16);
    auto y = fused::swiglu(ab);
    (y * probe).sum().backward();
    auto abd = ab.detach().to(torch::kDouble).requires_grad_(true);
    auto parts = abd.chunk(2, -1);
    auto yd = torch::silu(parts[0]) * parts[1];
    (yd * probe.to(torch::kDouble)).sum().backward();
    expect_close(y, yd, 1e-5, "value");
    expect_close(ab.grad(), abd.grad(), 1e-5, "grad");
}

TEST(FusedOps, CrossEntropyIsExactEvenWhereTheTargetProbabilityUnderflows) {
    auto logits = torch::zeros({2, 5});
    logits.index_put_({0, 0}, 200.0f);  // target 1 of row 0 sits 200 nats below the best logit
    auto targets = torch::tensor({1, 3}, torch::kLong);
    const double expected = (200.0 + std::log(1.0 + 4.0 * std::exp(-200.0)) + std::log(5.0)) / 2.0;
    EXPECT_NEAR(fused::cross_entropy(logits, targets).item<double>(), expected, 1e-4);
}

TEST(FusedOps, CrossEntropyMatchesNllOfLogSoftmax) {
    auto logits = (randn({37, 19}, 13) * 3).requires_grad_(true);
    auto g = at::make_generator<at::CPUGeneratorImpl>(14);
    auto targets = torch::randint(19, {37}, g, torch::kLong);
    auto loss = fused::cross_entropy(logits, targets);
    (loss * 2.5).backward();

    auto ld = logits.detach().to(torch::kDouble).requires_grad_(true);
    auto ref = torch::nn::functional::cross_entropy(ld, targets);
    (ref * 2.5).backward();
    expect_close(loss, ref, 1e-6, "value");
    expect_close(logits.grad(), ld.grad(), 1e-6, "grad");
}

}  // namespace
}  // namespace tw
