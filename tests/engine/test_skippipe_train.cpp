// SkipPipe training (engine/train/skippipe_step.h, docs/methods.md §8): forward_path against forward and
// against the blocks run by hand, one training step that leaves unvisited stages untouched, and the
// per-stage compute times the scheduler is given (measure_stage_times).
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <set>

#include "core/skippipe.h"
#include "engine/model/fused_ops.h"
#include "engine/train/schedule.h"
#include "engine/train/skippipe_step.h"
#include "engine/train/trainer.h"
#include "tests/engine/micro_run.h"

namespace tw {
namespace {
namespace F = torch::nn::functional;

constexpr int64_t kVocab = 61;
constexpr int64_t kStages = 4;

// The micro model with 4 layers, so 4 stages hold one block each.
RunConfig four_layer_run() {
    RunConfig c = testing_support::micro_run(kVocab, 4);
    c.model.n_layer = 4;
    c.train.eval_batches = 2;
    c.train.eval_every = 0;
    return c;
}

torch::Tensor random_windows(int64_t b, int64_t T, uint64_t seed) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    return at::randint(0, kVocab, {b, T + 1}, gen, torch::kLong);
}

std::map<std::string, torch::Tensor> snapshot(Llama& m) {
    std::map<std::string, torch::Tensor> out;
    for (auto& kv : m->named_parameters()) out[kv.key()] = kv.value().detach().clone();
    return out;
}

// The stage a "block_L.xxx" parameter belongs to with one layer per stage; −1 for embedding/head.
int stage_of(const std::string& name) {
    if (name.rfind("block_", 0) != 0) return -1;
    return std::stoi(name.substr(6, name.find('.') - 6));
}

TEST(ForwardPath, FullInOrderPathIsForwardBitForBit) {
    const RunConfig c = four_layer_run();
    Llama model(c.model, 7);
    auto window = random_windows(3, c.model.seq_len, 1);
    auto ids = window.narrow(1, 0, c.model.seq_len);
    torch::NoGradGuard no_grad;
    EXPECT_TRUE(torch::equal(model->forward_path(ids, {0, 1, 2, 3}, kStages), model->forward(ids)));
    EXPECT_TRUE(torch::equal(model->forward_path(ids, {0, 1}, 2), model->forward(ids)));
    EXPECT_EQ(path_loss(model, window, {0, 1, 2, 3}, kStages).item<double>(), model->loss(window).item<double>());
    // Leaving a stage out changes the output (so the equalities above can fail).
    EXPECT_FALSE(torch::allclose(model->forward_path(ids, {0, 1, 3}, kStages), model->forward(ids)));
}

TEST(ForwardPath, PartialSwappedPathRunsExactlyThoseBlocks) {
    const RunConfig c = four_layer_run();
    const uint64_t seed = 7;
    Llama model(c.model, seed);
    auto ids = random_windows(2, c.model.seq_len, 2).narrow(1, 0, c.model.seq_len);
    // Blocks-only modules (a middle stage's spec: no embedding, no head) hold layer l's weights: init
    // is seeded by (seed, parameter name), whichever module builds it.
    auto block = [&](int64_t l) { return Llama(c.model, seed, StageSpec{1, 3, l, l + 1}); };
    Llama b0 = block(0), b3 = block(3), b2 = block(2);
    auto params = model->named_parameters();
    torch::NoGradGuard no_grad;
    // Path 0 → 3 → 2 (stage 1 left out, one swap) by hand: embedding, blocks 0, 3, 2, norm, tied head.
    auto h = F::embedding(ids, params["tok_emb"]);
    h = b2->forward(b3->forward(b0->forward(h)));
    auto by_hand = F::linear(fused::rms_norm(h, params["norm_f"], c.model.norm_eps), params["tok_emb"]);
    auto got = model->forward_path(ids, {0, 3, 2}, kStages);
    EXPECT_LT((got - by_hand).abs().max().item<double>(), 1e-6);
    // The order matters: 0 → 2 → 3 is a different model.
    EXPECT_GT((model->forward_path(ids, {0, 2, 3}, kStages) - by_hand).abs().max().item<double>(), 1e-4);
}

TEST(SkipPipeStep, UnvisitedStagesKeepTheirParametersBitForBit) {
    RunConfig c = four_layer_run();
    ASSERT_GT(c.train.weight_decay, 0) << "the test must show that not even weight decay touches them";
    // Two micro-batches scheduled with L = 2 of S = 4: together they visit at most two of stages 1–3.
    SkipPipeProblem p;
    p.stages = kStages, p.replicas = 1, p.path_stages = 2, p.micro_batches = 2, p.memory_per_node = 2;
    p.fwd_s = {1, 1, 1, 1}, p.bwd_s = {2, 2, 2, 2};
    auto sched = schedule_skippipe(p, 3);
    ASSERT_TRUE(sched.is_ok()) << sched.message();
    ASSERT_EQ(check_schedule(p, *sched), "");
    std::vector<std::vector<int64_t>> paths;
    std::set<int64_t> visited;
    for (const SkipPath& sp : sched->paths) {
        paths.push_back(path_stages_of(sp));
        visited.insert(paths.back().begin(), paths.back().end());
    }
    ASSERT_LT(visited.size(), 4u);

    Llama model(c.model, 11);
    auto optim = make_adamw(model, c.train);
    const auto before = snapshot(model);
    std::vector<torch::Tensor> windows = {random_windows(2, c.model.seq_len, 3), random_windows(2, c.model.seq_len, 4)};
    const SkipStepResult r = skippipe_step(model, *optim, windows, paths, kStages, 1e-2, c.train.grad_clip);
    EXPECT_TRUE(std::isfinite(r.loss) && r.grad_norm > 0);
    int unchanged = 0, changed = 0;
    for (auto& kv : model->named_parameters()) {
        const int s = stage_of(kv.key());
        const bool same = torch::equal(kv.value(), before.at(kv.key()));
        if (s >= 0 && !visited.count(s)) {
            EXPECT_TRUE(same) << kv.key() << " belongs to unvisited stage " << s;
            EXPECT_FALSE(kv.value().grad().defined()) << kv.key();
            ++unchanged;
        } else {
            EXPECT_FALSE(same) << kv.key() << " was on a path and should have stepped";
            ++changed;
        }
    }
    EXPECT_GE(unchanged, 6);  // a block has 6 parameter tensors
    EXPECT_GT(changed, 6);
}

TEST(SkipPipeStep, OneFullPathMicroBatchIsATrainerStep) {
    RunConfig c = four_layer_run();
    auto toks = std::make_shared<std::vector<uint16_t>>(6000);
    std::mt19937 rng(5);
    for (auto& x : *toks) x = static_cast<uint16_t>(rng() % kVocab);
    WindowLoader train(toks, {{0, 5000}}, c.model.seq_len, c.train.batch_size, c.run.seed);
    Trainer trainer(c, train, WindowLoader(toks, {{5000, 1000}}, c.model.seq_len, c.train.batch_size, c.run.seed));
    Llama model(c.model, static_cast<uint64_t>(c.run.seed));
    auto optim = make_adamw(model, c.train);
    for (int64_t step = 0; step < 2; ++step) {
        const double lr = lr_at(step, c.train.steps, c.train.lr, c.train.warmup_steps, c.train.min_lr_frac);
        const SkipStepResult r =
            skippipe_step(model, *optim, {train.batch(step)}, {{0, 1, 2, 3}}, kStages, lr, c.train.grad_clip);
        const StepReport t = trainer.step();
        EXPECT_EQ(r.loss, t.loss) << "step " << step;
        EXPECT_EQ(r.grad_norm, t.grad_norm) << "step " << step;
    }
    auto theirs = trainer.model()->named_parameters();
    for (auto& kv : model->named_parameters()) EXPECT_TRUE(torch::equal(kv.value(), theirs[kv.key()])) << kv.key();
}

// ---- per-stage compute times ---------------------------------------------------------------------------

// stage_spec's split puts the remainder on the first stages: 6 layers on 4 stages → 2, 2, 1, 1;
// 7 on 3 → 3, 2, 2; 4 on 4 → one each.
TEST(SkipPipeStageTimes, BlockCountsPerStage) {
    RunConfig c = four_layer_run();
    EXPECT_EQ(stage_block_counts(c.model, 4), (std::vector<int64_t>{1, 1, 1, 1}));
    c.model.n_layer = 6;
    EXPECT_EQ(stage_block_counts(c.model, 4), (std::vector<int64_t>{2, 2, 1, 1}));
    c.model.n_layer = 7;
    EXPECT_EQ(stage_block_counts(c.model, 3), (std::vector<int64_t>{3, 2, 2}));
}

// Both times given (as experiments/skippipe.toml pins them): nothing is measured. 6 layers on 4 stages
// with block 1 ms + 2 ms and head op 4 ms + 8 ms: fwd 6, 2, 1, 1 ms, bwd 12, 4, 2, 2 ms, head share 2/3.
TEST(SkipPipeStageTimes, GivenTimesOnSixLayersByHand) {
    RunConfig c = four_layer_run();
    c.model.n_layer = 6;
    Llama model(c.model, 3);
    const SkipStageTimes st = measure_stage_times(c.model, 3, model, random_windows(2, c.model.seq_len, 5), 4,
                                                  FwdBwd{1e-3, 2e-3}, FwdBwd{4e-3, 8e-3});
    const std::vector<double> fwd = {6e-3, 2e-3, 1e-3, 1e-3}, bwd = {12e-3, 4e-3, 2e-3, 2e-3};
    ASSERT_EQ(st.fwd_s.size(), 4u);
    for (size_t s = 0; s < 4; ++s) {
        EXPECT_NEAR(st.fwd_s[s], fwd[s], 1e-15) << "stage " << s;
        EXPECT_NEAR(st.bwd_s[s], bwd[s], 1e-15) << "stage " << s;
    }
    EXPECT_NEAR(st.head_fraction, 2.0 / 3.0, 1e-12);
}

// Measured: positive times, stages of equal size exactly equal (one block time shared by all), stage 0
// dearer by the head op, and no gradient left on the model.
TEST(SkipPipeStageTimes, MeasuredTimesShareOneBlockTimeAndLeaveNoGradient) {
    RunConfig c = four_layer_run();
    Llama model(c.model, 3);
    const SkipStageTimes st =
        measure_stage_times(c.model, 3, model, random_windows(2, c.model.seq_len, 5), 4, std::nullopt, std::nullopt, 2);
    EXPECT_GT(st.block.fwd_s, 0);
    EXPECT_GT(st.block.bwd_s, 0);
    EXPECT_GT(st.head.fwd_s, 0);
    for (size_t s = 1; s < 4; ++s) {
        EXPECT_EQ(st.fwd_s[s], st.block.fwd_s);
        EXPECT_EQ(st.bwd_s[s], st.block.bwd_s);
    }
    EXPECT_EQ(st.fwd_s[0], st.block.fwd_s + st.head.fwd_s);
    EXPECT_GT(st.head_fraction, 0);
    EXPECT_LT(st.head_fraction, 1);
    for (auto& p : model->parameters()) EXPECT_FALSE(p.grad().defined());
}

}  // namespace
}  // namespace tw
