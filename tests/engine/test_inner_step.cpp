// The shared inner optimizer step (engine/train/inner_step.h) against AdamW worked by hand, its
// clipping rules, the schedule it sets, and parameters added later stepping as a separate AdamW.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "engine/train/inner_step.h"

namespace tw {
namespace {

TrainConfig train_cfg() {
    TrainConfig t;
    t.lr = 0.1;
    t.beta1 = 0.9;
    t.beta2 = 0.95;
    t.weight_decay = 0.5;
    t.warmup_steps = 4;
    t.steps = 100;
    t.min_lr_frac = 0.1;
    t.grad_clip = 0;
    return t;
}

TEST(InnerStep, OneStepIsAdamWWorkedByHand) {
    // First AdamW step: m̂ = g, v̂ = g², so θ ← θ·(1 − lr·wd) − lr·g / (|g| + eps) for the matrix, and
    // without the decay for the vector (weight decay on matrices only).
    auto w = torch::tensor({{1.0f, -2.0f}, {0.5f, 3.0f}}).requires_grad_(true);
    auto b = torch::tensor({0.25f, -1.0f}).requires_grad_(true);
    InnerOptimizer opt({w, b}, train_cfg());
    const double lr = opt.set_lr(0);  // warm-up: lr·(0 + 1)/4
    EXPECT_DOUBLE_EQ(lr, 0.1 / 4);
    w.mutable_grad() = torch::tensor({{0.5f, -0.25f}, {2.0f, 0.0f}});
    b.mutable_grad() = torch::tensor({-4.0f, 1.0f});
    opt.step();
    const double eps = 1e-8;
    auto expect = [&](double theta, double g, double wd) {
        return theta * (1 - lr * wd) - (g == 0 ? 0.0 : lr * g / (std::fabs(g) + eps));
    };
    const double w0[] = {1.0, -2.0, 0.5, 3.0}, gw[] = {0.5, -0.25, 2.0, 0.0};
    for (int i = 0; i < 4; ++i)
        EXPECT_NEAR(w.view({-1})[i].item<double>(), expect(w0[i], gw[i], 0.5), 1e-6) << i;
    EXPECT_NEAR(b[0].item<double>(), expect(0.25, -4.0, 0.0), 1e-6);
    EXPECT_NEAR(b[1].item<double>(), expect(-1.0, 1.0, 0.0), 1e-6);
    // After warm-up the cosine: at the last step lr·min_lr_frac.
    EXPECT_NEAR(opt.set_lr(100), 0.1 * 0.1, 1e-12);
}

TEST(InnerStep, ClippingByTheLocalNormAndByAGlobalNorm) {
    TrainConfig t = train_cfg();
    t.grad_clip = 1.0;
    auto w = torch::zeros({2, 2}).requires_grad_(true);
    InnerOptimizer opt({w}, t);
    w.mutable_grad() = torch::tensor({{3.0f, 0.0f}, {0.0f, 4.0f}});  // norm 5
    EXPECT_NEAR(opt.clip(), 5.0, 1e-6);
    EXPECT_NEAR(w.grad().norm().item<double>(), 1.0, 1e-5);
    // A norm computed over several stages: scaled by clip / (norm + 1e-6) when below 1, else untouched.
    w.mutable_grad() = torch::tensor({{3.0f, 0.0f}, {0.0f, 4.0f}});
    opt.clip_to(10.0);
    EXPECT_NEAR(w.grad()[0][0].item<double>(), 3.0 / (10.0 + 1e-6), 1e-7);
    w.mutable_grad() = torch::tensor({{0.3f, 0.0f}, {0.0f, 0.4f}});
    opt.clip_to(0.5);
    EXPECT_EQ(w.grad()[1][1].item<float>(), 0.4f);
}

TEST(InnerStep, AddedParametersStepExactlyAsASeparateAdamW) {
    // `reparam`'s Z joins the stage's optimizer: bit for bit the separate optimizer it used to have.
    const TrainConfig t = train_cfg();
    torch::manual_seed(2);
    auto a = torch::randn({3, 4}).requires_grad_(true), z = torch::randn({2, 4}).requires_grad_(true);
    auto z_alone = z.detach().clone().requires_grad_(true);
    InnerOptimizer together({a}, t);
    together.add_params({z});
    auto alone = make_adamw({z_alone}, t);
    for (int step = 0; step < 3; ++step) {
        auto g = torch::randn({2, 4});
        a.mutable_grad() = torch::randn({3, 4});
        z.mutable_grad() = g.clone();
        z_alone.mutable_grad() = g.clone();
        const double lr = together.set_lr(step);
        set_learning_rate(*alone, lr);
        together.step();
        alone->step();
        EXPECT_TRUE(torch::equal(z, z_alone)) << "step " << step;
    }
    EXPECT_EQ(together.params().size(), 2u);
}

}  // namespace
}  // namespace tw
