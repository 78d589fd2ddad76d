// DeMo's codec (engine/codec/dct_topk.h): the DCT-II against its closed form on hand-computed
// values, DCT then inverse is the identity, Top-k picks the largest coefficients of every chunk (ties
// to the lower position), the chunk counts of edge tiles and runs by hand, wire bytes equal the
// formula, decode gives back what was kept (values, or signs), and malformed input is an error.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "engine/codec/dct_topk.h"

namespace tw {
namespace {

// x = [1, 2, 3, 4]: X_0 = 10/√4 = 5; X_f = √(2/4)·Σ x_n cos(π(2n+1)f/8). With c1 = cos(π/8),
// c3 = cos(3π/8) (cos(5π/8) = −c3, cos(7π/8) = −c1, cos(9π/8) = −c1, cos(15π/8) = c1,
// cos(21π/8) = −c3): X_1 = √½·(c1 + 2·c3 − 3·c3 − 4·c1) = −2.2304425, X_2 = √½·cos(π/4)·(1 − 2 − 3 + 4)
// = 0, X_3 = √½·(c3 − 2·c1 + 3·c1 − 4·c3) = √½·(c1 − 3·c3) = −0.1585127.
TEST(DctTopk, DctTwoOfARampMatchesTheClosedForm) {
    auto x = torch::tensor({1.0f, 2.0f, 3.0f, 4.0f});
    auto c = chunked_dct(x, 4);
    const double c1 = std::cos(M_PI / 8), c3 = std::cos(3 * M_PI / 8), h = std::sqrt(0.5);
    const double X1 = h * (1 * c1 + 2 * c3 - 3 * c3 - 4 * c1);
    const double X3 = h * (1 * c3 - 2 * c1 + 3 * c1 - 4 * c3);
    EXPECT_NEAR(X1, -2.2304425, 1e-6);
    EXPECT_NEAR(X3, -0.1585127, 1e-6);
    EXPECT_NEAR(c[0].item<float>(), 5.0, 1e-6);
    EXPECT_NEAR(c[1].item<float>(), X1, 1e-6);
    EXPECT_NEAR(c[2].item<float>(), 0.0, 1e-6);
    EXPECT_NEAR(c[3].item<float>(), X3, 1e-6);
    // A constant run has only its DC coefficient: √n·value.
    auto k = chunked_dct(torch::full({8}, 3.0f), 8);
    EXPECT_NEAR(k[0].item<float>(), 3.0 * std::sqrt(8.0), 1e-5);
    EXPECT_LT(k.slice(0, 1).abs().max().item<float>(), 1e-5);
}

TEST(DctTopk, MatrixIsOrthonormalAndTwoDTilesAreSeparable) {
    for (int64_t n : {1, 3, 8, 64}) {
        auto d = dct_matrix(n);
        EXPECT_TRUE(torch::allclose(d.mm(d.t()), torch::eye(n), 1e-5, 1e-5)) << n;
    }
    // The 2-D DCT of an outer product u·vᵀ is (D·u)(D·v)ᵀ.
    auto u = torch::tensor({1.0f, -2.0f, 0.5f}), v = torch::tensor({3.0f, 1.0f});
    auto tile = torch::outer(u, v);
    auto expect = torch::outer(dct_matrix(3).mv(u), dct_matrix(2).mv(v));
    EXPECT_TRUE(torch::allclose(chunked_dct(tile, 4), expect, 1e-5, 1e-5));
}

TEST(DctTopk, DctThenInverseIsTheIdentityOnTilesRunsAndEdges) {
    torch::manual_seed(3);
    for (auto shape : std::vector<std::vector<int64_t>>{{10, 12}, {64, 64}, {130, 70}, {20}, {3, 5, 7}, {}}) {
        auto x = torch::randn(shape);
        for (int64_t s : {2, 8, 64}) {
            auto back = chunked_idct(chunked_dct(x, s), s);
            EXPECT_TRUE(torch::allclose(back, x, 1e-5, 1e-5)) << "chunk " << s << " dims " << shape.size();
        }
    }
}

// [10, 12] at s = 8, k = 4: tiles 8×8 (64 → 4), 8×4 (32 → ⌈128/64⌉ = 2), 2×8 (16 → 1), 2×4 (8 → 1).
// A vector of 20: runs 8, 8, 4 → ⌈32/64⌉ = 1, 1, ⌈16/64⌉ = 1.
TEST(DctTopk, ChunkCountsByHand) {
    DctTopkConfig cfg{8, 4, DctValues::kFp32};
    EXPECT_EQ(dct_chunk_counts({10, 12}, cfg), (std::vector<int64_t>{4, 2, 1, 1}));
    EXPECT_EQ(dct_chunk_counts({20}, cfg), (std::vector<int64_t>{1, 1, 1}));
    EXPECT_EQ(dct_kept({10, 12}, cfg), 8);
    cfg.k = 64;  // every coefficient of a full tile; partial ones keep all of theirs
    EXPECT_EQ(dct_kept({10, 12}, cfg), 120);
    EXPECT_EQ(dct_kept({}, cfg), 1);  // a 0-d tensor is a run of 1
    EXPECT_EQ(dct_kept({0}, cfg), 0);
}

TEST(DctTopk, TopkPicksTheLargestMagnitudesOfEveryChunkTiesToTheLowerPosition) {
    // A 4×6 coefficient tensor at s = 4, k = 3: tiles 4×4 (keeps 3) and 4×2 (keeps ⌈3·8/16⌉ = 2).
    auto c = torch::zeros({4, 6});
    c[0][1] = -9;  // tile 0, position 1
    c[2][3] = 7;   // position 11
    c[3][0] = 7;   // position 12
    c[1][1] = 6.5;
    c[1][4] = 2;   // tile 1 (columns 4–5): position 2·1 + 0 = 2
    c[3][5] = -2;  // position 7: a tie with 2, both kept (count 2)
    c[0][5] = 1;
    DctTopkConfig cfg{4, 3, DctValues::kFp32};
    EXPECT_EQ(dct_topk_indices(c, cfg), (std::vector<int64_t>{1, 15, 18, 10, 23}));
    // Three equal magnitudes for two places: the lower positions win.
    c[0][5] = 2;
    EXPECT_EQ(dct_topk_indices(c, cfg), (std::vector<int64_t>{1, 15, 18, 5, 10}));
}

TEST(DctTopk, WireBytesEqualTheFormulaAndEncodeAppendsExactlyThat) {
    torch::manual_seed(4);
    for (DctValues v : {DctValues::kFp32, DctValues::kSign})
        for (auto shape : std::vector<std::vector<int64_t>>{{10, 12}, {64, 64}, {130, 70}, {20}, {3, 5, 7}, {}, {0}})
            for (int64_t k : {1, 3, 4, 64}) {
                DctTopkConfig cfg{8, k, v};
                DctTopkCodec codec(cfg);
                const uint64_t K = static_cast<uint64_t>(dct_kept(shape, cfg));
                const uint64_t expect = 3 * ((K + 1) / 2) + (v == DctValues::kFp32 ? 4 * K : (K + 7) / 8);
                EXPECT_EQ(codec.wire_bytes(shape), expect);
                std::vector<uint8_t> out{0xAB};  // appends after what is there
                ASSERT_TRUE(codec.encode(torch::randn(shape), out));
                EXPECT_EQ(out.size(), 1 + expect);
            }
}

TEST(DctTopk, DecodeGivesTheKeptCoefficientsOrTheirSigns) {
    torch::manual_seed(5);
    auto x = torch::randn({10, 12});
    auto coeffs = chunked_dct(x, 8);
    for (DctValues v : {DctValues::kFp32, DctValues::kSign}) {
        DctTopkCodec codec({8, 4, v});
        std::vector<uint8_t> out;
        SparsePayload kept, dec;
        ASSERT_TRUE(codec.encode_coefficients(coeffs, out, &kept));
        EXPECT_EQ(kept.index, dct_topk_indices(coeffs, codec.config()));
        size_t off = 0;
        ASSERT_TRUE(codec.decode_sparse(out.data(), out.size(), off, coeffs.sizes(), dec));
        EXPECT_EQ(off, out.size());
        EXPECT_EQ(dec.index, kept.index);
        const float* c = coeffs.data_ptr<float>();
        for (size_t i = 0; i < kept.index.size(); ++i) {
            EXPECT_EQ(kept.value[i], c[kept.index[i]]);
            EXPECT_EQ(dec.value[i], v == DctValues::kFp32 ? kept.value[i] : (kept.value[i] < 0 ? -1.0f : 1.0f));
        }
    }
}

TEST(DctTopk, TruncatedMalformedAndNonFiniteInputAreErrors) {
    DctTopkCodec codec({8, 4, DctValues::kSign});
    auto x = torch::randn({10, 12});
    std::vector<uint8_t> out;
    ASSERT_TRUE(codec.encode(x, out));
    for (size_t n = 0; n < out.size(); ++n) {
        size_t off = 0;
        SparsePayload dec;
        Status s = codec.decode_sparse(out.data(), n, off, x.sizes(), dec);
        EXPECT_FALSE(s) << n;
        EXPECT_EQ(off, 0u);
    }
    auto bad = out;
    bad[0] = 0xFF, bad[1] |= 0x0F;  // position 4095 in an 8×8 tile
    size_t off = 0;
    SparsePayload dec;
    EXPECT_FALSE(codec.decode_sparse(bad.data(), bad.size(), off, x.sizes(), dec));
    x[3][4] = NAN;
    std::vector<uint8_t> none;
    Status s = codec.encode(x, none);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("flat index 40"), std::string::npos) << s.message();
    EXPECT_TRUE(none.empty());
    EXPECT_FALSE(make_dct_topk_codec({65, 4, DctValues::kFp32}));
    EXPECT_FALSE(make_dct_topk_codec({8, 65, DctValues::kFp32}));
}

}  // namespace
}  // namespace tw
