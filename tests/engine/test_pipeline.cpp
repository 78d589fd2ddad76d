// Pipeline stages composed against the whole model (docs/methods.md §0, §6): an uncompressed S-stage
// pipeline over micro-batches gives the whole model's loss and gradients; a compressed one with
// k = d does too; bytes per boundary per micro-batch are the formula's.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>

#include "engine/pipeline/stage.h"
#include "engine/pipeline/subspace.h"
#include "tests/engine/micro_run.h"

namespace tw {
namespace {

ModelConfig micro_model(int64_t layers) {
    auto c = testing_support::micro_run(61, 1).model;
    c.n_layer = layers;
    c.tie_embeddings = false;
    return c;
}

torch::Tensor window(int64_t B, int64_t T, int64_t V) {
    torch::manual_seed(7);
    return torch::randint(0, V, {B, T + 1}, torch::kLong);
}

std::map<std::string, torch::Tensor> grads_of(Llama& m) {
    std::map<std::string, torch::Tensor> g;
    for (auto& p : m->named_parameters()) g[p.key()] = p.value().grad().clone();
    return g;
}

struct PipelineResult {
    double loss = 0;
    std::map<std::string, torch::Tensor> grads;
    uint64_t fwd_bytes = 0, bwd_bytes = 0;  // boundary 0, one micro-batch
};

// How a boundary travels in these tests: dense (rank 0) or subspace coordinates of rank k.
struct BoundarySpec {
    int64_t rank = 0;
    WireDtype dtype = WireDtype::kFp32;
    torch::Tensor u;  // [d, k]
};

std::unique_ptr<ActivationCodec> codec_of(const ModelConfig& cfg, const BoundarySpec& b, const torch::Tensor& t_fixed) {
    if (b.rank == 0) return make_dense_codec(cfg.d_model);
    return make_subspace_codec(b.u, b.dtype, t_fixed, cfg.vocab_size);
}

// Runs one GPipe iteration of m micro-batches through S stages by handing payloads along.
PipelineResult run_pipeline(const ModelConfig& cfg, int64_t S, int m, const torch::Tensor& win,
                            const std::vector<BoundarySpec>& codecs, const torch::Tensor& t_fixed) {
    std::vector<std::unique_ptr<PipelineStage>> st;
    for (int64_t s = 0; s < S; ++s)
        st.push_back(std::make_unique<PipelineStage>(cfg, 5, s, S, s > 0 ? codec_of(cfg, codecs[s - 1], t_fixed) : nullptr,
                                                     s < S - 1 ? codec_of(cfg, codecs[s], t_fixed) : nullptr, t_fixed));
    const int64_t T = win.size(1) - 1, b = win.size(0) / m;
    PipelineResult r;
    for (int j = 0; j < m; ++j) {
        auto w = win.narrow(0, j * b, b);
        std::vector<uint8_t> payload;
        for (int64_t s = 0; s < S - 1; ++s) {
            payload = st[s]->forward(j, w.narrow(1, 0, T), payload, b).value();
            if (s == 0) r.fwd_bytes = payload.size();
        }
        r.loss += st[S - 1]->forward_loss(j, w.narrow(1, 0, T), payload, w.narrow(1, 1, T), b, 1.0 / m).value() / m;
    }
    for (int j = m - 1; j >= 0; --j) {
        std::vector<uint8_t> g;
        for (int64_t s = S - 1; s >= 0; --s) {
            g = st[s]->backward(j, g, b).value();
            if (s == 1) r.bwd_bytes = g.size();
        }
    }
    for (auto& s : st)
        for (auto& [k, v] : grads_of(s->model())) r.grads[k] = v;
    return r;
}

void expect_same(const std::map<std::string, torch::Tensor>& a, const std::map<std::string, torch::Tensor>& b,
                 double tol) {
    ASSERT_EQ(a.size(), b.size());
    for (auto& [k, v] : a) {
        ASSERT_TRUE(b.count(k)) << k;
        const double err = (v - b.at(k)).abs().max().item<double>(), scale = v.abs().max().item<double>();
        EXPECT_LE(err, tol * std::max(scale, 1e-3)) << k << " err " << err << " scale " << scale;
    }
}

TEST(Pipeline, UncompressedStagesGiveTheWholeModelsLossAndGradients) {
    const auto cfg = micro_model(3);
    auto win = window(4, cfg.seq_len, cfg.vocab_size);
    Llama whole(cfg, 5);
    auto loss = whole->loss(win);
    loss.backward();
    const auto want = grads_of(whole);
    for (int64_t S : {2, 3})
        for (int m : {1, 2, 4}) {
            auto r = run_pipeline(cfg, S, m, win, std::vector<BoundarySpec>(S - 1), torch::Tensor());
            EXPECT_NEAR(r.loss, loss.item<double>(), 1e-5) << S << " stages, " << m << " micro-batches";
            expect_same(want, r.grads, 1e-4);
            // Dense boundary: b·T·d fp32 each way.
            EXPECT_EQ(r.fwd_bytes, static_cast<uint64_t>(4 / m * cfg.seq_len * cfg.d_model * 4));
            EXPECT_EQ(r.bwd_bytes, r.fwd_bytes);
        }
}

TEST(Pipeline, FullRankSubspaceIsLosslessAndBytesFollowTheFormula) {
    const auto cfg = micro_model(2);
    auto win = window(4, cfg.seq_len, cfg.vocab_size);
    auto t_fixed = frozen_embedding(cfg.vocab_size, cfg.d_model, 11);
    Llama whole(cfg, 5);
    whole->set_frozen_embedding(t_fixed);
    auto loss = whole->loss(win);
    loss.backward();
    BoundarySpec full{cfg.d_model, WireDtype::kFp32, subspace_basis(cfg.d_model, cfg.d_model, 11)};
    auto r = run_pipeline(cfg, 2, 2, win, {full}, t_fixed);
    EXPECT_NEAR(r.loss, loss.item<double>(), 1e-5);
    expect_same(grads_of(whole), r.grads, 1e-4);
    // Rank 8 in bf16 for b = 2 sequences of T tokens: B·T·(k·2 + 2) forward (ids as uint16), B·T·k·2 back.
    BoundarySpec k8{8, WireDtype::kBf16, subspace_basis(cfg.d_model, 8, 11)};
    auto c = run_pipeline(cfg, 2, 2, win, {k8}, t_fixed);
    const uint64_t tokens = 2 * static_cast<uint64_t>(cfg.seq_len);
    EXPECT_EQ(c.fwd_bytes, tokens * (8 * 2 + 2));
    EXPECT_EQ(c.bwd_bytes, tokens * 8 * 2);
}

// Decoded relative error of stage 0's output over a rank-k boundary.
double boundary_error(PipelineStage& st, const torch::Tensor& ids, const torch::Tensor& t_fixed, const torch::Tensor& u,
                      int64_t vocab) {
    torch::NoGradGuard no_grad;
    auto x = st.model()->forward(ids);
    auto bytes = encode_activations(x, ids, t_fixed, u, WireDtype::kFp32, vocab);
    auto back = decode_activations(bytes, ids.size(0), ids.size(1), x.size(2), t_fixed, u, WireDtype::kFp32, vocab,
                                   nullptr)
                    .value();
    return ((back - x).norm() / x.norm()).item<double>();
}

void project_all(Llama& m, const torch::Tensor& u) {
    torch::NoGradGuard no_grad;
    for (auto& p : m->named_parameters())
        if (is_residual_writer(p.key())) project_writer(p.key(), p.value(), u);
}

TEST(Pipeline, BoundaryIsExactWhileTheConstraintHoldsAndAfterEachAdaptation) {
    const auto cfg = micro_model(2);
    auto win = window(2, cfg.seq_len, cfg.vocab_size);
    auto ids = win.narrow(1, 0, cfg.seq_len);
    auto t_fixed = frozen_embedding(cfg.vocab_size, cfg.d_model, 3);
    auto u = subspace_basis(cfg.d_model, 8, 3);
    PipelineStage st(cfg, 5, 0, 2, nullptr, make_subspace_codec(u, WireDtype::kFp32, t_fixed, cfg.vocab_size), t_fixed);
    project_all(st.model(), u);
    EXPECT_LT(boundary_error(st, ids, t_fixed, u, cfg.vocab_size), 1e-5);
    // An outer step of unconstrained replicas moves the writers out of span(U): the boundary breaks.
    {
        torch::NoGradGuard no_grad;
        torch::manual_seed(9);
        for (auto& p : st.model()->parameters()) p.add_(torch::randn_like(p) * 0.01);
    }
    EXPECT_GT(boundary_error(st, ids, t_fixed, u, cfg.vocab_size), 1e-3);
    // AD2: the embedding's out-of-span part moves into T_fixed (both ends use the new table): the
    // stage computes the same function, and the embedding no longer breaks the boundary.
    torch::Tensor before;
    {
        torch::NoGradGuard no_grad;
        before = st.model()->forward(ids);
        for (auto& p : st.model()->named_parameters())
            if (p.key() == "tok_emb") move_out_of_span_into_frozen(p.value(), t_fixed, u);
        EXPECT_LT(((st.model()->forward(ids) - before).norm() / before.norm()).item<double>(), 1e-5);
    }
    EXPECT_GT(boundary_error(st, ids, t_fixed, u, cfg.vocab_size), 1e-3);  // wo / w2 still out of span
    // AD1: re-projecting the writers restores an exact boundary.
    project_all(st.model(), u);
    EXPECT_LT(boundary_error(st, ids, t_fixed, u, cfg.vocab_size), 1e-5);
    // AD3 projects an error-feedback buffer shaped like a writer by the same rule: nothing out of span.
    auto ef = torch::randn({cfg.d_model, cfg.ff_width()});
    project_writer("block_0.w2", ef, u);
    EXPECT_LT(out_of_span_fraction("block_0.w2", ef, u), 1e-6);
}

}  // namespace
}  // namespace tw
