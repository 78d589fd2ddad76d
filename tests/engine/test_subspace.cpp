// Subspace-compressed pipeline boundaries (engine/pipeline/subspace.h): the shared basis, exact
// reconstruction while the writers are constrained (and not without), wire sizes, quantisation
// bounds, AD2 and the writer names.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>

#include "engine/model/llama.h"
#include "engine/pipeline/subspace.h"

namespace tw {
namespace {

constexpr WireDtype kAllDtypes[] = {WireDtype::kFp32, WireDtype::kBf16, WireDtype::kInt8};

ModelConfig micro() {
    ModelConfig m;
    m.vocab_size = 200;
    m.d_model = 32;
    m.n_layer = 2;
    m.n_head = 2;
    m.seq_len = 16;
    return m;
}

torch::Tensor random_ids(int64_t B, int64_t T, int64_t V, uint64_t seed) {
    auto g = at::make_generator<at::CPUGeneratorImpl>(seed);
    return torch::randint(V, {B, T}, g, torch::kLong);
}

torch::Tensor normal_tensor(std::vector<int64_t> shape, uint64_t seed) {
    auto g = at::make_generator<at::CPUGeneratorImpl>(seed);
    return at::normal(0.0, 1.0, shape, g, torch::kFloat32);
}

double rel_err(const torch::Tensor& a, const torch::Tensor& b) {
    return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).norm().item<double>() /
           b.to(torch::kFloat64).norm().item<double>();
}

// Projects every residual-stream writer of `stage` onto span(U).
void project_writers(Llama& stage, const torch::Tensor& u) {
    for (auto& p : stage->named_parameters())
        if (is_residual_writer(p.key())) project_writer(p.key(), p.value(), u);
}

// Stage 0's output with the frozen embedding added, as the pipeline computes it:
// h = T_fixed[ids] + tok_emb[ids], then the stage's blocks. Gathering rows of (T_fixed + tok_emb)
// equals adding the gathered rows bit for bit, so the stage's own forward does it.
torch::Tensor stage0_output(Llama& stage, const torch::Tensor& t_fixed, const torch::Tensor& ids) {
    torch::NoGradGuard no_grad;
    auto emb = stage->named_parameters()["tok_emb"];
    const auto saved = emb.clone();
    emb.add_(t_fixed);
    auto x = stage->forward(ids);
    emb.copy_(saved);
    return x;
}

// ---- the basis -------------------------------------------------------------------------------------

TEST(SubspaceBasis, IsOrthonormal) {
    for (auto [d, k] : {std::pair<int64_t, int64_t>{32, 1}, {32, 8}, {32, 32}, {128, 16}, {200, 200}}) {
        auto u = subspace_basis(d, k, 3);
        ASSERT_EQ(u.sizes(), (std::vector<int64_t>{d, k}));
        ASSERT_EQ(u.scalar_type(), torch::kFloat32);
        const double err = (u.t().mm(u) - torch::eye(k)).abs().max().item<double>();
        EXPECT_LT(err, 1e-5) << "d " << d << " k " << k;
    }
}

TEST(SubspaceBasis, SmallerRanksArePrefixesBitForBit) {
    auto full = subspace_basis(48, 48, 11);
    for (int64_t k : {1, 5, 16, 47}) EXPECT_TRUE(torch::equal(subspace_basis(48, k, 11), full.narrow(1, 0, k))) << k;
}

TEST(SubspaceBasis, SameOnRebuildAndAcrossThreadCountsDifferentAcrossSeeds) {
    const int saved = torch::get_num_threads();
    torch::set_num_threads(1);
    auto a = subspace_basis(64, 16, 5);
    auto t1 = frozen_embedding(100, 64, 5);
    torch::set_num_threads(2);
    auto b = subspace_basis(64, 16, 5);
    auto t2 = frozen_embedding(100, 64, 5);
    torch::set_num_threads(saved);
    EXPECT_TRUE(torch::equal(a, b));
    EXPECT_TRUE(torch::equal(a, subspace_basis(64, 16, 5)));
    EXPECT_TRUE(torch::equal(t1, t2));
    EXPECT_GT((a - subspace_basis(64, 16, 6)).abs().max().item<float>(), 0.1f);
    EXPECT_GT((t1 - frozen_embedding(100, 64, 6)).abs().max().item<float>(), 0.1f);
}

TEST(SubspaceBasis, FrozenEmbeddingIsStandardNormal) {
    auto t = frozen_embedding(400, 64, 9);
    ASSERT_EQ(t.sizes(), (std::vector<int64_t>{400, 64}));
    EXPECT_NEAR(t.mean().item<double>(), 0.0, 0.02);
    EXPECT_NEAR(t.std().item<double>(), 1.0, 0.02);
}

// ---- reconstruction -------------------------------------------------------------------------------

TEST(SubspaceRoundTrip, FullRankIsLosslessForAnyActivations) {
    const int64_t B = 3, T = 7, d = 32, V = 200;
    auto u = subspace_basis(d, d, 1);
    auto t_fixed = frozen_embedding(V, d, 1);
    auto x = normal_tensor({B, T, d}, 2) * 3;  // not in any subspace
    auto ids = random_ids(B, T, V, 3);
    auto wire = encode_activations(x, ids, t_fixed, u, WireDtype::kFp32, V);
    torch::Tensor ids_back;
    auto back = decode_activations(wire, B, T, d, t_fixed, u, WireDtype::kFp32, V, &ids_back);
    ASSERT_TRUE(back) << back.message();
    EXPECT_LT((*back - x).abs().max().item<float>(), 1e-5f * x.abs().max().item<float>());
    EXPECT_TRUE(torch::equal(ids_back, ids));
}

TEST(SubspaceRoundTrip, StageZeroOutputIsRebuiltWhenWritersAreProjected) {
    ModelConfig cfg = micro();
    const int64_t B = 4, T = 16, d = cfg.d_model, V = cfg.vocab_size;
    auto t_fixed = frozen_embedding(V, d, 7);
    auto ids = random_ids(B, T, V, 8);
    for (int64_t k : {4, 8, 16}) {
        Llama stage(cfg, 7, stage_spec(cfg, 0, 2));
        auto u = subspace_basis(d, k, 7);
        project_writers(stage, u);
        auto x = stage0_output(stage, t_fixed, ids);
        auto wire = encode_activations(x, ids, t_fixed, u, WireDtype::kFp32, V);
        torch::Tensor ids_back;
        auto back = decode_activations(wire, B, T, d, t_fixed, u, WireDtype::kFp32, V, &ids_back);
        ASSERT_TRUE(back) << back.message();
        EXPECT_LT(rel_err(*back, x), 1e-5) << "k " << k;
        // Against the part that actually crosses in coordinates, not just the frozen rows.
        const auto resid = x - t_fixed.index_select(0, ids.reshape({-1})).view({B, T, d});
        EXPECT_LT((*back - x).norm().item<double>() / resid.norm().item<double>(), 1e-4) << "k " << k;
        EXPECT_TRUE(torch::equal(ids_back, ids));
    }
}

TEST(SubspaceRoundTrip, StageZeroOutputIsNotRebuiltWithoutProjection) {
    ModelConfig cfg = micro();
    const int64_t B = 4, T = 16, d = cfg.d_model, V = cfg.vocab_size;
    Llama stage(cfg, 7, stage_spec(cfg, 0, 2));
    auto u = subspace_basis(d, 8, 7);
    auto t_fixed = frozen_embedding(V, d, 7);
    auto ids = random_ids(B, T, V, 8);
    auto x = stage0_output(stage, t_fixed, ids);
    auto back = decode_activations(encode_activations(x, ids, t_fixed, u, WireDtype::kFp32, V), B, T, d, t_fixed, u,
                                   WireDtype::kFp32, V, nullptr);
    ASSERT_TRUE(back) << back.message();
    EXPECT_GT(rel_err(*back, x), 1e-3);  // 100× the projected case's bound
}

TEST(SubspaceRoundTrip, MiddleStageKeepsItsOutputInSpanToo) {
    ModelConfig cfg = micro();
    cfg.n_layer = 3;
    const int64_t B = 2, T = 16, d = cfg.d_model, V = cfg.vocab_size;
    auto u = subspace_basis(d, 8, 4);
    auto t_fixed = frozen_embedding(V, d, 4);
    auto ids = random_ids(B, T, V, 5);
    Llama s0(cfg, 4, stage_spec(cfg, 0, 3)), s1(cfg, 4, stage_spec(cfg, 1, 3));
    project_writers(s0, u);
    project_writers(s1, u);
    auto x0 = stage0_output(s0, t_fixed, ids);
    torch::Tensor ids1;
    auto in1 = decode_activations(encode_activations(x0, ids, t_fixed, u, WireDtype::kFp32, V), B, T, d, t_fixed, u,
                                  WireDtype::kFp32, V, &ids1);
    ASSERT_TRUE(in1) << in1.message();
    torch::NoGradGuard no_grad;
    auto x1 = s1->forward(*in1);
    auto in2 = decode_activations(encode_activations(x1, ids1, t_fixed, u, WireDtype::kFp32, V), B, T, d, t_fixed, u,
                                  WireDtype::kFp32, V, nullptr);
    ASSERT_TRUE(in2) << in2.message();
    EXPECT_LT(rel_err(*in2, x1), 1e-5);
}

TEST(SubspaceRoundTrip, RankZeroIsDenseAndBitExact) {
    const int64_t B = 2, T = 5, d = 16;
    auto x = normal_tensor({B, T, d}, 1);
    auto wire = encode_activations(x, random_ids(B, T, 50, 1), {}, {}, WireDtype::kInt8, 50);
    EXPECT_EQ(wire.size(), static_cast<size_t>(B * T * d * 4));
    torch::Tensor ids_out;
    auto back = decode_activations(wire, B, T, d, {}, {}, WireDtype::kInt8, 50, &ids_out);
    ASSERT_TRUE(back) << back.message();
    EXPECT_TRUE(torch::equal(*back, x));
    EXPECT_FALSE(ids_out.defined());
    auto g = normal_tensor({B, T, d}, 2);
    auto gback = decode_gradient(encode_gradient(g, {}, WireDtype::kBf16), B, T, d, {}, WireDtype::kBf16);
    ASSERT_TRUE(gback) << gback.message();
    EXPECT_TRUE(torch::equal(*gback, g));
}

TEST(SubspaceGradient, DecodeIsGTimesUUtAndGAtFullRank) {
    const int64_t B = 3, T = 4, d = 24;
    auto g = normal_tensor({B, T, d}, 9);
    for (int64_t k : {3, 12}) {
        auto u = subspace_basis(d, k, 2);
        auto back = decode_gradient(encode_gradient(g, u, WireDtype::kFp32), B, T, d, u, WireDtype::kFp32);
        ASSERT_TRUE(back) << back.message();
        auto u64 = u.to(torch::kFloat64);
        auto expect = g.to(torch::kFloat64).view({-1, d}).mm(u64).mm(u64.t()).view({B, T, d});
        EXPECT_LT((back->to(torch::kFloat64) - expect).abs().max().item<double>(), 1e-5) << k;
        EXPECT_GT((*back - g).abs().max().item<float>(), 0.1f) << "k < d must lose the out-of-span part";
    }
    auto u = subspace_basis(d, d, 2);
    auto back = decode_gradient(encode_gradient(g, u, WireDtype::kFp32), B, T, d, u, WireDtype::kFp32);
    ASSERT_TRUE(back) << back.message();
    EXPECT_LT((*back - g).abs().max().item<float>(), 1e-5f);
}

// ---- wire sizes and malformed payloads ------------------------------------------------------------

TEST(SubspaceWire, PayloadSizesMatchTheFormulas) {
    // Literal figures first, so the formula itself is pinned.
    EXPECT_EQ(forward_wire_bytes(2, 3, 32, 8, WireDtype::kFp32, 200), 6u * (32 + 2));
    EXPECT_EQ(forward_wire_bytes(2, 3, 32, 8, WireDtype::kBf16, 200), 6u * (16 + 2));
    EXPECT_EQ(forward_wire_bytes(2, 3, 32, 8, WireDtype::kInt8, 200), 6u * (8 + 4 + 2));
    EXPECT_EQ(forward_wire_bytes(2, 3, 32, 8, WireDtype::kInt8, 70000), 6u * (8 + 4 + 4));
    EXPECT_EQ(backward_wire_bytes(2, 3, 32, 8, WireDtype::kInt8), 6u * (8 + 4));
    EXPECT_EQ(backward_wire_bytes(2, 3, 32, 0, WireDtype::kInt8), 6u * 32 * 4);
    for (auto [B, T, d] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 8}, {2, 3, 32}, {4, 16, 64}})
        for (int64_t V : {200, 65536, 70000})
            for (int64_t k : {int64_t{0}, int64_t{1}, d / 4, d})
                for (WireDtype c : kAllDtypes) {
                    const uint64_t N = static_cast<uint64_t>(B * T), ib = V <= 65536 ? 2 : 4;
                    const uint64_t cb = c == WireDtype::kFp32 ? 4 : c == WireDtype::kBf16 ? 2 : 1;
                    const uint64_t sb = c == WireDtype::kInt8 ? 4 : 0;
                    const uint64_t fwd = k == 0 ? N * d * 4 : N * (k * cb + sb + ib);
                    const uint64_t bwd = k == 0 ? N * d * 4 : N * (k * cb + sb);
                    EXPECT_EQ(forward_wire_bytes(B, T, d, k, c, V), fwd);
                    EXPECT_EQ(backward_wire_bytes(B, T, d, k, c), bwd);
                    torch::Tensor u = k > 0 ? subspace_basis(d, k, 1) : torch::Tensor();
                    torch::Tensor tf = k > 0 ? frozen_embedding(V, d, 1) : torch::Tensor();
                    auto x = normal_tensor({B, T, d}, 4);
                    EXPECT_EQ(encode_activations(x, random_ids(B, T, V, 2), tf, u, c, V).size(), fwd);
                    EXPECT_EQ(encode_gradient(x, u, c).size(), bwd);
                }
}

TEST(SubspaceWire, WrongSizeIsAnErrorNamingExpectedAndGot) {
    const int64_t B = 2, T = 3, d = 16, k = 4, V = 100;
    auto u = subspace_basis(d, k, 1);
    auto tf = frozen_embedding(V, d, 1);
    for (WireDtype c : kAllDtypes) {
        auto wire = encode_activations(normal_tensor({B, T, d}, 1), random_ids(B, T, V, 1), tf, u, c, V);
        const std::string need = std::to_string(wire.size());
        for (int delta : {-1, +1}) {
            auto bad = wire;
            bad.resize(wire.size() + delta);
            auto r = decode_activations(bad, B, T, d, tf, u, c, V, nullptr);
            ASSERT_FALSE(r);
            EXPECT_NE(r.message().find("expected " + need), std::string::npos) << r.message();
            EXPECT_NE(r.message().find(std::to_string(bad.size()) + " bytes"), std::string::npos) << r.message();
        }
        auto gwire = encode_gradient(normal_tensor({B, T, d}, 2), u, c);
        gwire.pop_back();
        auto r = decode_gradient(gwire, B, T, d, u, c);
        ASSERT_FALSE(r);
        EXPECT_NE(r.message().find("expected " + std::to_string(gwire.size() + 1)), std::string::npos) << r.message();
        EXPECT_NE(r.message().find(std::to_string(gwire.size()) + " bytes"), std::string::npos) << r.message();
    }
}

TEST(SubspaceWire, CorruptIdsAndScalesAreErrors) {
    const int64_t B = 1, T = 2, d = 8, k = 2, V = 100;
    auto u = subspace_basis(d, k, 1);
    auto tf = frozen_embedding(V, d, 1);
    auto ids = random_ids(B, T, V, 1);
    auto wire = encode_activations(normal_tensor({B, T, d}, 1), ids, tf, u, WireDtype::kInt8, V);
    auto bad_id = wire;
    const uint16_t big = 100;  // == vocab
    std::memcpy(bad_id.data() + bad_id.size() - 2, &big, 2);
    auto r = decode_activations(bad_id, B, T, d, tf, u, WireDtype::kInt8, V, nullptr);
    ASSERT_FALSE(r);
    EXPECT_NE(r.message().find("token id 100"), std::string::npos) << r.message();
    auto bad_scale = wire;
    const float nan = std::nanf("");
    std::memcpy(bad_scale.data() + 4, &nan, 4);  // token 1's scale
    r = decode_activations(bad_scale, B, T, d, tf, u, WireDtype::kInt8, V, nullptr);
    ASSERT_FALSE(r);
    EXPECT_NE(r.message().find("scale of token 1"), std::string::npos) << r.message();
}

TEST(SubspaceWire, LargeVocabulariesCarryFourByteIds) {
    const int64_t B = 2, T = 4, d = 8, V = 70000;
    auto u = subspace_basis(d, 4, 1);
    auto tf = frozen_embedding(V, d, 1);
    auto ids = random_ids(B, T, V, 3);
    ids[0][0] = V - 1;  // above 65535
    auto x = tf.index_select(0, ids.reshape({-1})).view({B, T, d});  // zero residual
    torch::Tensor ids_back;
    auto back = decode_activations(encode_activations(x, ids, tf, u, WireDtype::kBf16, V), B, T, d, tf, u,
                                   WireDtype::kBf16, V, &ids_back);
    ASSERT_TRUE(back) << back.message();
    EXPECT_TRUE(torch::equal(ids_back, ids));
    EXPECT_TRUE(torch::equal(*back, x));  // zero coordinates: the frozen rows exactly
}

// ---- quantised coordinates ------------------------------------------------------------------------

// Activations with known coordinates: X = T_fixed[ids] + C·Uᵀ, C ~ N(0, 1) per token with one
// all-zero token (scale 0) at index 0.
struct SubspaceQuantised : ::testing::Test {
    static constexpr int64_t B = 3, T = 8, d = 64, k = 16, V = 300, N = B * T;
    torch::Tensor u = subspace_basis(d, k, 2), tf = frozen_embedding(V, d, 2), ids = random_ids(B, T, V, 2);
    torch::Tensor coords = normal_tensor({N, k}, 3).index_put_({0}, 0.0f);
    torch::Tensor x() const { return (tf.index_select(0, ids.reshape({-1})) + coords.mm(u.t())).view({B, T, d}); }
    // Coordinates of a decoded X (UᵀU = I), [N, k].
    torch::Tensor coords_of(const torch::Tensor& xd) const {
        return (xd.view({N, d}) - tf.index_select(0, ids.reshape({-1}))).mm(u);
    }
};

TEST_F(SubspaceQuantised, Bf16IsWithinHalfAnUlpPerCoordinate) {
    auto back = decode_activations(encode_activations(x(), ids, tf, u, WireDtype::kBf16, V), B, T, d, tf, u,
                                   WireDtype::kBf16, V, nullptr);
    ASSERT_TRUE(back) << back.message();
    // bf16 keeps 8 significant bits: round to nearest is within half an ulp, ≤ 2^-8 relative; 1e-5 covers the fp32
    // arithmetic around it. The coordinates of X itself carry that fp32 noise too, hence coords_of(x()).
    const auto ref = coords_of(x());
    const auto err = (coords_of(*back) - ref).abs();
    EXPECT_TRUE((err <= ref.abs() * std::ldexp(1.0, -8) + 1e-5).all().item<bool>()) << err.max().item<float>();
    EXPECT_GT(err.max().item<float>(), 1e-4f) << "bf16 must actually round";
    auto g = normal_tensor({B, T, d}, 5);
    auto gb = decode_gradient(encode_gradient(g, u, WireDtype::kBf16), B, T, d, u, WireDtype::kBf16);
    ASSERT_TRUE(gb) << gb.message();
    const auto gc = g.view({N, d}).mm(u);
    EXPECT_TRUE(((gb->view({N, d}).mm(u) - gc).abs() <= gc.abs() * std::ldexp(1.0, -8) + 1e-5).all().item<bool>());
}

TEST_F(SubspaceQuantised, Int8IsWithinHalfAStepPerCoordinate) {
    auto wire = encode_activations(x(), ids, tf, u, WireDtype::kInt8, V);
    auto back = decode_activations(wire, B, T, d, tf, u, WireDtype::kInt8, V, nullptr);
    ASSERT_TRUE(back) << back.message();
    // Pinned bound: |ĉ − c| ≤ absmax_token/127/2 per coordinate (+1e-5 for the fp32 arithmetic).
    const auto ref = coords_of(x());
    const auto step = ref.abs().amax(1, true) / 127.0;
    const auto err = (coords_of(*back) - ref).abs();
    EXPECT_TRUE((err <= step / 2 + 1e-5).all().item<bool>()) << (err - step / 2).max().item<float>();
    EXPECT_GT((err / step).narrow(0, 1, N - 1).max().item<float>(), 0.25f) << "int8 must actually round";
    // The all-zero token has scale 0 and comes back as its frozen row exactly.
    float scale0;
    std::memcpy(&scale0, wire.data(), 4);
    EXPECT_EQ(scale0, 0.0f);
    EXPECT_TRUE(torch::equal(back->view({N, d})[0], tf[ids[0][0].item<int64_t>()]));
    auto g = normal_tensor({B, T, d}, 5);
    auto gb = decode_gradient(encode_gradient(g, u, WireDtype::kInt8), B, T, d, u, WireDtype::kInt8);
    ASSERT_TRUE(gb) << gb.message();
    const auto gc = g.view({N, d}).mm(u);
    const auto gstep = gc.abs().amax(1, true) / 127.0;
    EXPECT_TRUE(((gb->view({N, d}).mm(u) - gc).abs() <= gstep / 2 + 1e-5).all().item<bool>());
}

// ---- writers and AD2 ------------------------------------------------------------------------------

TEST(SubspaceWriters, NamesAreThoseLlamaRegistersForWoW2AndTokEmb) {
    ModelConfig cfg = micro();
    cfg.tie_embeddings = false;  // a `head` to tell apart
    Llama whole(cfg, 1);
    std::set<std::string> writers, all;
    for (auto& p : whole->named_parameters()) {
        all.insert(p.key());
        if (is_residual_writer(p.key())) writers.insert(p.key());
    }
    EXPECT_EQ(writers, (std::set<std::string>{"tok_emb", "block_0.wo", "block_0.w2", "block_1.wo", "block_1.w2"}));
    EXPECT_TRUE(all.count("head") && all.count("block_1.w13") && all.count("block_0.wqkv") && all.count("norm_f"));
    for (const char* n : {"head", "block_.wo", "block_x.wo", "block_0.wo2", "block_0.w13", "tok_emb2", "block_0"})
        EXPECT_FALSE(is_residual_writer(n)) << n;
}

TEST(SubspaceWriters, ProjectionPutsEachWriterInSpanByItsOwnRule) {
    ModelConfig cfg = micro();
    Llama stage(cfg, 3, stage_spec(cfg, 0, 2));
    const int64_t d = cfg.d_model, k = 8;
    auto u = subspace_basis(d, k, 3);
    auto complement = torch::eye(d) - u.mm(u.t());  // I − U·Uᵀ
    for (auto& p : stage->named_parameters()) {
        if (!is_residual_writer(p.key())) continue;
        auto w = p.value();
        EXPECT_GT(out_of_span_fraction(p.key(), w, u), 0.5) << p.key();  // random init: (d−k)/d of it outside
        project_writer(p.key(), w, u);
        EXPECT_LT(out_of_span_fraction(p.key(), w, u), 1e-6) << p.key();
        // The rule's side: the embedding's rows live in span(U), the projections' columns do.
        auto outside = p.key() == "tok_emb" ? w.mm(complement) : complement.mm(w);
        EXPECT_LT(outside.abs().max().item<float>(), 1e-5f * w.abs().max().item<float>()) << p.key();
    }
}

TEST(SubspaceAd2, MovingTheOutOfSpanPartKeepsTheSumAndLeavesTsInSpan) {
    const int64_t V = 120, d = 32;
    auto u = subspace_basis(d, 6, 8);
    auto t_fixed = frozen_embedding(V, d, 8);
    auto t_s = normal_tensor({V, d}, 9) * 0.02;
    const auto sum = t_fixed + t_s;
    const auto t_fixed_before = t_fixed.clone();
    EXPECT_GT(out_of_span_fraction("tok_emb", t_s, u), 0.5);
    move_out_of_span_into_frozen(t_s, t_fixed, u);
    EXPECT_LT((t_fixed + t_s - sum).abs().max().item<float>(), 1e-6f);
    EXPECT_LT(out_of_span_fraction("tok_emb", t_s, u), 1e-6);
    EXPECT_GT((t_fixed - t_fixed_before).abs().max().item<float>(), 1e-3f);  // something moved
}

TEST(SubspaceDtype, ParsesTheThreeNamesAndNamesABadOne) {
    EXPECT_EQ(parse_coord_dtype("fp32").value(), WireDtype::kFp32);
    EXPECT_EQ(parse_coord_dtype("bf16").value(), WireDtype::kBf16);
    EXPECT_EQ(parse_coord_dtype("int8").value(), WireDtype::kInt8);
    auto bad = parse_coord_dtype("fp16");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.message().find("\"fp16\""), std::string::npos) << bad.message();
    for (WireDtype c : kAllDtypes) EXPECT_EQ(parse_coord_dtype(to_string(c)).value(), c);
}

}  // namespace
}  // namespace tw
