// Model: stage composition equals the whole model, causality, parameter count, overfitting.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/config_io.h"
#include "core/model_size.h"
#include "engine/model/llama.h"

namespace tw {
namespace {

ModelConfig micro(bool tied = true) {
    ModelConfig m;
    m.vocab_size = 97;
    m.d_model = 32;
    m.n_layer = 5;
    m.n_head = 4;
    m.seq_len = 16;
    m.tie_embeddings = tied;
    return m;
}

torch::Tensor ids(int64_t B, int64_t T, int64_t V, uint64_t seed) {
    auto g = at::make_generator<at::CPUGeneratorImpl>(seed);
    return torch::randint(V, {B, T}, g, torch::kLong);
}

class StageSplit : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(StageSplit, SeparatelyBuiltStagesComposeToTheWholeModelBitForBit) {
    const auto [S, tied] = GetParam();
    ModelConfig cfg = micro(tied);
    Llama whole(cfg, 7);
    auto x = ids(3, 16, cfg.vocab_size, 1);
    auto expected = whole->forward(x);
    torch::Tensor h = x;
    int64_t layers = 0;
    for (int s = 0; s < S; ++s) {
        Llama stage(cfg, 7, stage_spec(cfg, s, S));  // built alone, as a pipeline node would
        layers += stage->spec().last_layer - stage->spec().first_layer;
        h = stage->forward(h);
    }
    EXPECT_EQ(layers, cfg.n_layer);
    EXPECT_TRUE(torch::equal(h, expected)) << "max diff " << (h - expected).abs().max().item<float>();
}

INSTANTIATE_TEST_SUITE_P(Stages, StageSplit,
                         ::testing::Combine(::testing::Values(1, 2, 3, 5), ::testing::Values(true, false)));

TEST(StageSplit, RangesAreContiguousAndBalanced) {
    ModelConfig cfg = micro();
    cfg.n_layer = 7;
    int64_t next = 0;
    for (int s = 0; s < 3; ++s) {
        auto sp = stage_spec(cfg, s, 3);
        EXPECT_EQ(sp.first_layer, next);
        EXPECT_GE(sp.last_layer - sp.first_layer, 2);
        EXPECT_LE(sp.last_layer - sp.first_layer, 3);
        next = sp.last_layer;
    }
    EXPECT_EQ(next, 7);
}

TEST(StageSplit, StageParametersAreTheWholeModelsSlice) {
    ModelConfig cfg = micro();
    Llama whole(cfg, 3);
    Llama mid(cfg, 3, stage_spec(cfg, 1, 3));
    auto all = whole->named_parameters();
    for (auto& p : mid->named_parameters()) {
        ASSERT_TRUE(all.contains(p.key())) << p.key();
        EXPECT_TRUE(torch::equal(p.value(), all[p.key()])) << p.key();
    }
}

TEST(Model, ChangingALaterTokenLeavesEarlierLogitsUnchanged) {
    ModelConfig cfg = micro();
    Llama m(cfg, 11);
    auto x = ids(2, 16, cfg.vocab_size, 2);
    auto y = x.clone();
    y.index_put_({torch::indexing::Slice(), 9}, (x.index({torch::indexing::Slice(), 9}) + 1) % cfg.vocab_size);
    auto a = m->forward(x), b = m->forward(y);
    using torch::indexing::Slice;
    EXPECT_TRUE(torch::equal(a.index({Slice(), Slice(0, 9)}), b.index({Slice(), Slice(0, 9)})));
    EXPECT_FALSE(torch::allclose(a.index({Slice(), 9}), b.index({Slice(), 9})));  // the changed position does move
}

TEST(Model, ParameterCountMatchesTheFormulaAndTinyIsAboutOneMillion) {
    for (bool tied : {true, false}) {
        ModelConfig cfg = micro(tied);
        Llama m(cfg, 1);
        EXPECT_EQ(m->num_parameters(), count_parameters(cfg));
    }
    auto tiny = parse_config("", "d").value().model;
    tiny.vocab_size = 4096;
    EXPECT_GT(count_parameters(tiny), 800'000);
    EXPECT_LT(count_parameters(tiny), 1'600'000);
}

// The mesh takes the state a joiner or a spare receives (up to three fp32 copies of the model),
// which a round's largest frame (one copy and a margin) would not: the tiny model's 10.6 MB DiLoCo
// recovery message was dropped by a spare's socket before the mesh had its own bound.
TEST(Model, TheMeshTakesARecoveryMessageOfThreeModelCopies) {
    RunConfig c = parse_config("", "d").value();
    c.model.vocab_size = 4096;
    const auto p4 = static_cast<size_t>(count_parameters(c.model)) * 4;
    EXPECT_LT(largest_data_frame_bytes(c), 2 * p4);
    EXPECT_GE(largest_mesh_message_bytes(c), 3 * p4 + (1u << 20));
}

// The planner sizes payloads over model_tensors (core/model_size.h) without building the model:
// the same names, order and shapes as the built model's parameters.
TEST(Model, TensorShapesWithoutTorchAreTheBuiltModels) {
    for (bool tied : {true, false}) {
        ModelConfig cfg = micro(tied);
        Llama m(cfg, 1);
        const auto shapes = model_tensors(cfg);
        const auto params = m->named_parameters();
        ASSERT_EQ(shapes.size(), params.size());
        int64_t total = 0;
        for (size_t i = 0; i < shapes.size(); ++i) {
            EXPECT_EQ(shapes[i].name, params[i].key());
            EXPECT_EQ(shapes[i].shape, params[i].value().sizes().vec()) << shapes[i].name;
            total += shapes[i].numel();
        }
        EXPECT_EQ(total, count_parameters(cfg));
    }
}

TEST(Model, SameSeedSameWeightsDifferentSeedDifferentWeights) {
    ModelConfig cfg = micro();
    Llama a(cfg, 5), b(cfg, 5), c(cfg, 6);
    auto pa = a->parameters(), pb = b->parameters(), pc = c->parameters();
    for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i]));
    EXPECT_FALSE(torch::equal(pa[0], pc[0]));
}

TEST(Model, TinyModelOverfitsOneFixedBatch) {
    torch::set_num_threads(1);
    ModelConfig cfg = micro();
    Llama m(cfg, 1);
    auto batch = ids(4, 17, cfg.vocab_size, 3);
    torch::optim::AdamW opt(m->parameters(), torch::optim::AdamWOptions(1e-2).weight_decay(0));
    const double first = m->loss(batch).item<double>();
    double last = first;
    for (int i = 0; i < 150; ++i) {
        opt.zero_grad();
        auto loss = m->loss(batch);
        loss.backward();
        opt.step();
        last = loss.item<double>();
    }
    EXPECT_NEAR(first, std::log(97.0), 0.3);  // starts near uniform
    EXPECT_LT(last, 0.1);                     // memorised
}

}  // namespace
}  // namespace tw
