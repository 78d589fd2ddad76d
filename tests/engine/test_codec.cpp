// Codecs (engine/codec/codec.h): Top-k against a sort per chunk, the 2-bit quantiser on worked
// examples, packing round trips, SparseLoCo's error-feedback identity, exact wire sizes, int8 and
// fp4 on hand-computed values, NaN/Inf and truncated payloads, and the PyTorch reference fixture.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>

#include "engine/codec/codec.h"

namespace tw {
namespace {

// ---- an independent model of the chunk geometry (codec.h's words, not codec.cpp's code) ----------

// Flat indices of every chunk, in in-chunk order (row-major inside a tile).
std::vector<std::vector<int64_t>> ref_chunks(at::IntArrayRef shape, int64_t b) {
    std::vector<std::vector<int64_t>> chunks;
    if (shape.size() == 2) {
        const int64_t R = shape[0], C = shape[1];
        for (int64_t r0 = 0; r0 < R; r0 += b)
            for (int64_t c0 = 0; c0 < C; c0 += b) {
                std::vector<int64_t> f;
                for (int64_t r = r0; r < std::min(R, r0 + b); ++r)
                    for (int64_t c = c0; c < std::min(C, c0 + b); ++c) f.push_back(r * C + c);
                chunks.push_back(f);
            }
        return chunks;
    }
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    for (int64_t s = 0; s < n; s += b * b) {
        std::vector<int64_t> f;
        for (int64_t i = s; i < std::min(n, s + b * b); ++i) f.push_back(i);
        chunks.push_back(f);
    }
    return chunks;
}

// k_n: a full chunk keeps k; otherwise the even number nearest k·n/b² (a tie goes up), in [2, n].
int64_t ref_kept(int64_t n, int64_t k, int64_t b) {
    if (n == b * b) return std::min(n, k);
    const double x = static_cast<double>(k) * n / static_cast<double>(b * b);
    int64_t best = 0;
    for (int64_t e = 2; e <= n + 2; e += 2)
        if (std::abs(e - x) <= std::abs(best - x)) best = e;
    return std::min(n, std::max<int64_t>(2, best));
}

// Top-k by sorting every chunk on (−|x|, flat index).
std::vector<int64_t> ref_topk(const torch::Tensor& x, const TopkConfig& cfg) {
    const auto xc = x.contiguous();
    const float* p = xc.data_ptr<float>();
    std::vector<int64_t> out;
    for (auto& chunk : ref_chunks(x.sizes(), cfg.block)) {
        std::vector<std::pair<float, int64_t>> e;
        for (int64_t f : chunk) e.push_back({-std::fabs(p[f]), f});
        std::sort(e.begin(), e.end());
        std::vector<int64_t> kept;
        for (int64_t i = 0; i < ref_kept(static_cast<int64_t>(chunk.size()), cfg.k, cfg.block); ++i)
            kept.push_back(e[i].second);
        std::sort(kept.begin(), kept.end());
        out.insert(out.end(), kept.begin(), kept.end());
    }
    return out;
}

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float read_f32(const uint8_t* p) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
}

std::vector<std::unique_ptr<Codec>> all_codecs() {
    std::vector<std::unique_ptr<Codec>> c;
    c.push_back(make_dense_codec(false));
    c.push_back(make_dense_codec(true));
    c.push_back(make_int8_codec());
    c.push_back(make_fp4_codec());
    c.push_back(make_sparseloco_codec({64, 64}));
    c.push_back(make_sparseloco_codec({64, 128}));
    c.push_back(make_sparseloco_codec({16, 8}));
    c.push_back(make_sparseloco_codec({8, 2}));
    return c;
}

// ---- Top-k ---------------------------------------------------------------------------------------

TEST(Codec, TopkSelectsTheLargestMagnitudesOfEveryChunkAsASortDoes) {
    torch::manual_seed(11);
    const std::vector<std::vector<int64_t>> shapes = {{130, 75}, {64, 64}, {1, 300},    {200, 1},     {65, 129}, {8193},
                                                      {5},       {4096},   {3, 50, 70}, {2, 3, 4, 5}, {97, 64}};
    const std::vector<TopkConfig> cfgs = {{64, 64}, {64, 128}, {16, 8}, {8, 2}, {5, 4}};
    int checked = 0;
    for (const auto& s : shapes)
        for (const auto& cfg : cfgs) {
            auto x = torch::randn(s);
            auto got = topk_chunked(x, cfg);
            ASSERT_EQ(got, ref_topk(x, cfg)) << "shape " << x.sizes() << " block " << cfg.block << " k " << cfg.k;
            ++checked;
        }
    EXPECT_EQ(checked, 55);
}

TEST(Codec, TopkTiesGoToTheLowerIndex) {
    // Run of 4 (block 2), k = 2: |−3| = |3| are both kept; among three 3s the first two win.
    EXPECT_EQ(topk_chunked(torch::tensor({1.0f, -3.0f, 3.0f, 2.0f}), {2, 2}), (std::vector<int64_t>{1, 2}));
    EXPECT_EQ(topk_chunked(torch::tensor({3.0f, 1.0f, -3.0f, 3.0f}), {2, 2}), (std::vector<int64_t>{0, 2}));
    // Constant matrix: every chunk keeps its first k_n positions (row-major inside the tile).
    auto ones = torch::ones({20, 13});
    EXPECT_EQ(topk_chunked(ones, {8, 4}), ref_topk(ones, {8, 4}));
    EXPECT_EQ(topk_chunked(ones, {8, 4})[0], 0);
    EXPECT_EQ(topk_chunked(ones, {8, 4})[3], 3);  // the first tile row holds 8 entries
    // Heavy ties on random integer-valued matrices and vectors.
    torch::manual_seed(12);
    for (auto shape : std::vector<std::vector<int64_t>>{{70, 75}, {33, 130}, {5000}, {4, 9, 11}})
        for (TopkConfig cfg : {TopkConfig{64, 64}, TopkConfig{16, 8}, TopkConfig{8, 6}}) {
            auto x = torch::randint(-3, 4, shape).to(torch::kFloat32) * 0.5;
            EXPECT_EQ(topk_chunked(x, cfg), ref_topk(x, cfg)) << x.sizes() << " " << cfg.block << "/" << cfg.k;
        }
    // Signed zeros tie with each other.
    EXPECT_EQ(topk_chunked(torch::tensor({-0.0f, 0.0f, -0.0f, 1.0f}), {2, 2}), (std::vector<int64_t>{0, 3}));
}

TEST(Codec, ChunkCountsFollowTheTailRule) {
    // 100×100 in 64×64 tiles: 4096 → 64; 64×36 = 2304 → 36; 36×36 = 1296 → 20.25 → 20.
    EXPECT_EQ(chunk_counts({100, 100}, {64, 64}), (std::vector<int64_t>{64, 36, 36, 20}));
    // Vector runs of 4096: 5000 = 4096 + 904 → 64, 14.125 → 14; a tail of 192 gives exactly 3 → 4 (tie up).
    EXPECT_EQ(chunk_counts({5000}, {64, 64}), (std::vector<int64_t>{64, 14}));
    EXPECT_EQ(chunk_counts({4096 + 192}, {64, 64}), (std::vector<int64_t>{64, 4}));
    EXPECT_EQ(chunk_counts({1}, {64, 64}), (std::vector<int64_t>{1}));
    EXPECT_EQ(chunk_counts({3}, {64, 64}), (std::vector<int64_t>{2}));
    EXPECT_EQ(chunk_counts({}, {64, 64}), (std::vector<int64_t>{1}));  // a 0-d scalar
    EXPECT_TRUE(chunk_counts({0}, {64, 64}).empty());
    EXPECT_TRUE(chunk_counts({0, 7}, {64, 64}).empty());
    for (auto shape : std::vector<std::vector<int64_t>>{{130, 75}, {8193}, {3, 50, 70}, {1, 300}})
        for (TopkConfig cfg : {TopkConfig{64, 64}, TopkConfig{64, 128}, TopkConfig{16, 8}}) {
            auto chunks = ref_chunks(shape, cfg.block);
            auto got = chunk_counts(shape, cfg);
            ASSERT_EQ(got.size(), chunks.size());
            for (size_t j = 0; j < chunks.size(); ++j)
                EXPECT_EQ(got[j], ref_kept(static_cast<int64_t>(chunks[j].size()), cfg.k, cfg.block));
        }
}

TEST(Codec, FactoryRejectsTopkConfigsThatCannotTravel) {
    EXPECT_THROW(make_sparseloco_codec({64, 63}), c10::Error);  // odd k
    EXPECT_THROW(make_sparseloco_codec({65, 64}), c10::Error);  // positions ≥ 4096 do not fit 12 bits
    EXPECT_THROW(make_sparseloco_codec({4, 18}), c10::Error);   // k > block²
    EXPECT_THROW(make_sparseloco_codec({64, 0}), c10::Error);
    EXPECT_NO_THROW(make_sparseloco_codec({64, 4096}));
}

// ---- the 2-bit quantiser ------------------------------------------------------------------------

TEST(Codec, QuantizerOnAHandWorkedVector) {
    // v = [11.5, 8.5, 13, 7.5, 9.5, 10]: shift = 60/6 = 10; c = [1.5, −1.5, 3, −2.5, −0.5, 0].
    // σ² = Σc² / (K−1) = (2.25 + 2.25 + 9 + 6.25 + 0.25 + 0) / 5 = 4 → σ = 2, scale = 6·2/4 = 3.
    // c/scale + 2 = [2.5, 1.5, 3, 1.1667, 1.8333, 2] → round half to even → [2, 2, 3, 1, 2, 2]
    // (2.5 → 2, not 3: half-away-from-zero would give 3). Bin 0 is empty → lookup 0; bin 1 = {−2.5};
    // bin 2 = {1.5, −1.5, −0.5, 0} → −0.5/4 = −0.125; bin 3 = {3}. Decode = lookup + 10.
    auto q = quantize_2bit({11.5f, 8.5f, 13.0f, 7.5f, 9.5f, 10.0f});
    EXPECT_EQ(q.shift, 10.0f);
    EXPECT_EQ(q.code, (std::vector<uint8_t>{2, 2, 3, 1, 2, 2}));
    EXPECT_EQ(q.lookup[0], 0.0f);
    EXPECT_EQ(q.lookup[1], -2.5f);
    EXPECT_EQ(q.lookup[2], -0.125f);
    EXPECT_EQ(q.lookup[3], 3.0f);
    // Through the codec, with chunks that keep everything: block 2, k 4 → runs of 4 (k_n = 4) and a
    // tail of 2 (k_n = 2·floor((4·2 + 4)/8) = 2).
    auto codec = make_sparseloco_codec({2, 4});
    std::vector<uint8_t> wire;
    ASSERT_TRUE(codec->encode(torch::tensor({11.5f, 8.5f, 13.0f, 7.5f, 9.5f, 10.0f}), wire).is_ok());
    size_t off = 0;
    torch::Tensor d;
    ASSERT_TRUE(codec->decode(wire.data(), wire.size(), off, {6}, d).is_ok());
    EXPECT_TRUE(torch::equal(d, torch::tensor({9.875f, 9.875f, 13.0f, 7.5f, 9.875f, 9.875f}))) << d;
}

TEST(Codec, QuantizerClampsOutliersToTheEndCodes) {
    // v = [30, 0 ×19]: shift = 1.5; c = [28.5, −1.5 ×19]; σ² = (812.25 + 19·2.25)/19 = 45,
    // scale = 1.5·√45 ≈ 10.06; 28.5/scale + 2 ≈ 4.83 → 5 → clamped to 3; −1.5/scale + 2 ≈ 1.85 → 2.
    std::vector<float> v(20, 0.0f);
    v[0] = 30.0f;
    auto q = quantize_2bit(v);
    EXPECT_EQ(q.shift, 1.5f);
    EXPECT_EQ(q.code[0], 3);
    for (int i = 1; i < 20; ++i) EXPECT_EQ(q.code[i], 2);
    EXPECT_EQ(q.lookup[3], 28.5f);
    EXPECT_EQ(q.lookup[2], -1.5f);
    EXPECT_EQ(q.lookup[0], 0.0f);
    EXPECT_EQ(q.lookup[1], 0.0f);
}

TEST(Codec, QuantizerConstantSingleAndEmptyInput) {
    auto c = quantize_2bit({3.25f, 3.25f, 3.25f, 3.25f, 3.25f});  // σ = 0: all codes 2, exact decode
    EXPECT_EQ(c.shift, 3.25f);
    EXPECT_EQ(c.code, (std::vector<uint8_t>(5, 2)));
    EXPECT_EQ(c.lookup[2] + c.shift, 3.25f);
    for (int b : {0, 1, 3}) EXPECT_EQ(c.lookup[b], 0.0f);
    auto s = quantize_2bit({-7.0f});  // K = 1: σ = 0 by definition
    EXPECT_EQ(s.shift, -7.0f);
    EXPECT_EQ(s.code, (std::vector<uint8_t>{2}));
    EXPECT_EQ(s.lookup[2] + s.shift, -7.0f);
    auto e = quantize_2bit({});
    EXPECT_EQ(e.shift, 0.0f);
    EXPECT_TRUE(e.code.empty());
    // And through the codec (runs of 4 and 1, all kept): a constant vector decodes exactly.
    auto codec = make_sparseloco_codec({2, 4});
    std::vector<uint8_t> wire;
    auto x = torch::full({5}, 0.3f);
    ASSERT_TRUE(codec->encode(x, wire).is_ok());
    size_t off = 0;
    torch::Tensor d;
    ASSERT_TRUE(codec->decode(wire.data(), wire.size(), off, {5}, d).is_ok());
    EXPECT_TRUE(torch::equal(d, x));
}

// ---- packing ------------------------------------------------------------------------------------

TEST(Codec, Pack12RoundTripsEveryValue) {
    EXPECT_EQ(pack12({0xABC, 0x123}), (std::vector<uint8_t>{0xBC, 0x3A, 0x12}));  // the header's layout
    EXPECT_EQ(pack12({0xFED}), (std::vector<uint8_t>{0xED, 0x0F, 0x00}));         // odd: zero index pads
    std::vector<uint16_t> all(4096);
    for (int i = 0; i < 4096; ++i) all[i] = static_cast<uint16_t>((i * 2654435761u) % 4096);  // a permutation
    std::vector<uint16_t> sorted = all;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < 4096; ++i) ASSERT_EQ(sorted[i], i);
    for (size_t n : {size_t{4096}, size_t{4095}, size_t{1}, size_t{0}}) {
        std::vector<uint16_t> v(all.begin(), all.begin() + static_cast<long>(n));
        auto p = pack12(v);
        EXPECT_EQ(p.size(), 3 * ((n + 1) / 2));
        EXPECT_EQ(unpack12(p.data(), n), v) << n;
    }
    // An odd count of all values: 4095 in position order plus 4095 again, reversed.
    std::vector<uint16_t> odd;
    for (int i = 4094; i >= 0; --i) odd.push_back(static_cast<uint16_t>(i + 1));
    auto p = pack12(odd);
    EXPECT_EQ(p.size(), 3u * 2048);
    EXPECT_EQ(unpack12(p.data(), odd.size()), odd);
}

TEST(Codec, Pack2PutsEveryValueInEveryPosition) {
    for (int pos = 0; pos < 4; ++pos)
        for (uint8_t v = 0; v < 4; ++v) {
            std::vector<uint8_t> codes(4, 0);
            codes[pos] = v;
            auto p = pack2(codes);
            ASSERT_EQ(p.size(), 1u);
            EXPECT_EQ(p[0], v << (2 * pos));  // first code in the low bits
            EXPECT_EQ(unpack2(p.data(), 4), codes);
        }
    for (int byte = 0; byte < 256; ++byte) {  // all 4^4 combinations
        std::vector<uint8_t> codes = {uint8_t(byte & 3), uint8_t((byte >> 2) & 3), uint8_t((byte >> 4) & 3),
                                      uint8_t(byte >> 6)};
        ASSERT_EQ(pack2(codes), (std::vector<uint8_t>{uint8_t(byte)}));
    }
    for (size_t n = 0; n <= 9; ++n) {
        std::vector<uint8_t> codes;
        for (size_t i = 0; i < n; ++i) codes.push_back(static_cast<uint8_t>((i * 7 + 1) % 4));
        auto p = pack2(codes);
        EXPECT_EQ(p.size(), (n + 3) / 4);
        EXPECT_EQ(unpack2(p.data(), n), codes);
        if (n % 4 != 0 && !p.empty()) {
            EXPECT_EQ(p.back() >> (2 * (n % 4)), 0) << "padding bits are zero";
        }
    }
}

// ---- SparseLoCo codec ---------------------------------------------------------------------------

TEST(Codec, SparseLoCoSendsTheQuantisedTopk) {
    torch::manual_seed(13);
    auto codec = make_sparseloco_codec({64, 64});
    auto x = torch::randn({150, 90});
    std::vector<uint8_t> wire;
    ASSERT_TRUE(codec->encode(x, wire).is_ok());
    size_t off = 0;
    SparsePayload sp;
    ASSERT_TRUE(codec->decode_sparse(wire.data(), wire.size(), off, x.sizes(), sp).is_ok());
    EXPECT_EQ(off, wire.size());
    EXPECT_EQ(sp.index, ref_topk(x, {64, 64}));
    std::vector<float> v;
    for (int64_t i : sp.index) v.push_back(x.view(-1)[i].item<float>());
    auto q = quantize_2bit(v);
    ASSERT_EQ(sp.value.size(), v.size());
    for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(bits(sp.value[i]), bits(q.lookup[q.code[i]] + q.shift)) << i;
    // The dense decode is the same payload scattered over zeros.
    off = 0;
    torch::Tensor d;
    ASSERT_TRUE(codec->decode(wire.data(), wire.size(), off, x.sizes(), d).is_ok());
    auto expect = torch::zeros_like(x);
    for (size_t i = 0; i < v.size(); ++i) expect.view(-1)[sp.index[i]] = sp.value[i];
    EXPECT_TRUE(torch::equal(d, expect));
    // On the wire: shift and lookup first, then the in-chunk positions (row-major in the tile).
    EXPECT_EQ(read_f32(wire.data()), q.shift);
    for (int b = 0; b < 4; ++b) EXPECT_EQ(read_f32(wire.data() + 4 + 4 * b), q.lookup[b]);
    const int64_t first = sp.index[0];  // tile (0, 0): position = r·64 + c
    EXPECT_EQ(unpack12(wire.data() + 20, 1)[0], (first / 90) * 64 + first % 90);
    // Every position on the wire is the entry's place in its chunk's row-major order, edge tiles
    // (64 × 26, 22 × 64, 22 × 26 here) counting rows of their own width.
    const auto positions = unpack12(wire.data() + 20, sp.index.size());
    size_t t = 0;
    for (const auto& chunk : ref_chunks(x.sizes(), 64)) {
        const int64_t kn = ref_kept(static_cast<int64_t>(chunk.size()), 64, 64);
        for (int64_t i = 0; i < kn; ++i, ++t) {
            const auto at = std::find(chunk.begin(), chunk.end(), sp.index[t]);
            ASSERT_NE(at, chunk.end());
            ASSERT_EQ(positions[t], at - chunk.begin()) << "kept entry " << t;
        }
    }
    EXPECT_EQ(t, sp.index.size());
}

TEST(Codec, ErrorFeedbackKeepsWhatWasNotSent) {
    // SparseLoCo: e = β·e_prev + Δ; sent = encode(e); e_new = e − decode(sent). Off the selected
    // indices decode is exactly 0, so e_new = e and e_new + decode = e bitwise. At the selected ones
    // e_new is the fp32 difference (checked against a scalar loop), and e_new + decode = e bitwise
    // wherever that subtraction was exact; elsewhere fp32 rounding (half an ulp of e_new) separates
    // them, which is the identity's only inexactness. With one scale per tensor (Gaussian) every kept
    // value lies within a factor 2 of its decoded value, so by Sterbenz's lemma the subtraction is
    // exact and the identity holds everywhere; a tensor whose chunks differ in scale by 10^4 has kept
    // entries far from their bin's mean, where it does not.
    torch::manual_seed(14);
    const float beta = 0.95f;
    auto codec = make_sparseloco_codec({64, 64});
    int64_t inexact = 0, selected = 0, total = 0;
    for (auto shape : std::vector<std::vector<int64_t>>{{200, 130}, {10000}, {3, 40, 50}, {256, 256}}) {
        const bool mixed = shape[0] == 256;  // rows in 4 bands of scale 1, 10, 100, 1000 → 10^4 between tiles
        auto e_prev = torch::randn(shape) * 0.1, delta = torch::randn(shape);
        if (mixed) delta *= torch::pow(10.0, torch::arange(256).div(64, "floor")).to(torch::kFloat32).unsqueeze(1);
        auto e = beta * e_prev + delta;
        std::vector<uint8_t> sent;
        ASSERT_TRUE(codec->encode(e, sent).is_ok());
        size_t off = 0;
        torch::Tensor dec;
        ASSERT_TRUE(codec->decode(sent.data(), sent.size(), off, e.sizes(), dec).is_ok());
        off = 0;
        SparsePayload sp;
        ASSERT_TRUE(codec->decode_sparse(sent.data(), sent.size(), off, e.sizes(), sp).is_ok());
        auto e_new = e - dec;
        const float* pe = e.data_ptr<float>();
        const float* pd = dec.data_ptr<float>();
        const float* pn = e_new.data_ptr<float>();
        std::vector<char> is_sel(static_cast<size_t>(e.numel()), 0);
        for (size_t i = 0; i < sp.index.size(); ++i) {
            const int64_t f = sp.index[i];
            is_sel[f] = 1;
            const float expect = pe[f] - sp.value[i];  // scalar fp32, independent of torch's sub
            ASSERT_EQ(bits(pn[f]), bits(expect)) << f;
        }
        for (int64_t f = 0; f < e.numel(); ++f) {
            const float back = pn[f] + pd[f];
            if (!is_sel[f]) {
                ASSERT_EQ(pd[f], 0.0f) << f;
                ASSERT_EQ(bits(pn[f]), bits(pe[f])) << f;
                ASSERT_EQ(bits(back), bits(pe[f])) << f;
                continue;
            }
            const bool exact_sub =
                static_cast<double>(pe[f]) - static_cast<double>(pd[f]) == static_cast<double>(pn[f]);
            if (exact_sub) {
                ASSERT_EQ(bits(back), bits(pe[f])) << f;
            }
            if (bits(back) != bits(pe[f])) {
                ++inexact;
                ASSERT_FALSE(exact_sub);
                ASSERT_LE(std::fabs(static_cast<double>(back) - pe[f]), std::ldexp(std::fabs(pn[f]), -23)) << f;
            }
        }
        selected += static_cast<int64_t>(sp.index.size());
        total += e.numel();
        if (!mixed) {  // the mixed tensor comes last, so the count so far is the Gaussian ones'
            EXPECT_EQ(inexact, 0) << "Gaussian tensor of one scale: e − decode is exact";
        }
    }
    EXPECT_GT(inexact, 0) << "mixed-scale tensor: some subtractions round";
    std::printf(
        "error feedback: %lld of %lld entries selected; identity exact off them, and at %lld of them "
        "(the other %lld differ by fp32 rounding of e − decode)\n",
        (long long)selected, (long long)total, (long long)(selected - inexact), (long long)inexact);
    EXPECT_GT(selected, 0);
}

// ---- wire sizes -----------------------------------------------------------------------------------

TEST(Codec, WireBytesEqualEncodeAndTheFormulas) {
    torch::manual_seed(15);
    const std::vector<std::vector<int64_t>> shapes = {{},        {0},       {1},        {7},          {4096},
                                                      {4097},    {3, 5, 7}, {64, 64},   {65, 63},     {1, 1000},
                                                      {1000, 1}, {0, 5},    {130, 200}, {2, 3, 4, 5}, {128, 4096}};
    // SparseLoCo: 20 + 3·ceil(K/2) + ceil(K/4), K = Σ k_n from the independent chunk model.
    auto sparse_formula = [](TopkConfig cfg) {
        return [cfg](at::IntArrayRef s, uint64_t) {
            uint64_t K = 0;
            for (auto& ch : ref_chunks(s, cfg.block))
                K += static_cast<uint64_t>(ref_kept(static_cast<int64_t>(ch.size()), cfg.k, cfg.block));
            return 20 + 3 * ((K + 1) / 2) + (K + 3) / 4;
        };
    };
    using Formula = std::function<uint64_t(at::IntArrayRef, uint64_t)>;
    std::vector<std::pair<std::unique_ptr<Codec>, Formula>> cases;
    cases.emplace_back(make_dense_codec(false), [](at::IntArrayRef, uint64_t n) { return 4 * n; });
    cases.emplace_back(make_dense_codec(true), [](at::IntArrayRef, uint64_t n) { return 2 * n; });
    cases.emplace_back(make_int8_codec(), [](at::IntArrayRef, uint64_t n) { return 4 + n; });
    cases.emplace_back(make_fp4_codec(), [](at::IntArrayRef, uint64_t n) { return 4 + (n + 1) / 2; });
    for (TopkConfig cfg : {TopkConfig{64, 64}, TopkConfig{64, 128}, TopkConfig{16, 8}, TopkConfig{8, 2}})
        cases.emplace_back(make_sparseloco_codec(cfg), sparse_formula(cfg));
    int checked = 0;
    for (auto& [codec, formula] : cases)
        for (const auto& s : shapes) {
            auto x = torch::randn(s);
            std::vector<uint8_t> out = {1, 2, 3};  // encode appends
            ASSERT_TRUE(codec->encode(x, out).is_ok()) << codec->name();
            EXPECT_EQ((std::vector<uint8_t>(out.begin(), out.begin() + 3)), (std::vector<uint8_t>{1, 2, 3}));
            const uint64_t wb = codec->wire_bytes(x.sizes());
            EXPECT_EQ(wb, out.size() - 3) << codec->name() << " " << x.sizes();
            EXPECT_EQ(wb, formula(x.sizes(), static_cast<uint64_t>(x.numel()))) << codec->name() << " " << x.sizes();
            ++checked;
        }
    EXPECT_EQ(checked, 8 * 15);
}

TEST(Codec, SparseLoCoIs146TimesSmallerThanFp32AtDefaultDensity) {
    // 4096 × 4096 at k = 64 of 64×64: K = 4096 tiles · 64 = 262144 → 20 + 393216 + 65536 bytes.
    auto codec = make_sparseloco_codec({64, 64});
    const uint64_t sparse = codec->wire_bytes({4096, 4096});
    const uint64_t dense = make_dense_codec(false)->wire_bytes({4096, 4096});
    EXPECT_EQ(sparse, 458772u);
    EXPECT_EQ(dense, 67108864u);
    const double ratio = static_cast<double>(dense) / static_cast<double>(sparse);
    // docs/methods.md §3: P·d·(2 + 12)/8 + 20 → 4 / (0.015625 · 14 / 8) = 146.3 without the 20 bytes.
    const double formula = 4.0 * 4096 * 4096 / (4096.0 * 4096 * 0.015625 * 14 / 8 + 20);
    std::printf("sparseloco 4096x4096 k=64: %llu bytes vs fp32 %llu: %.2fx smaller (formula %.2fx)\n",
                (unsigned long long)sparse, (unsigned long long)dense, ratio, formula);
    EXPECT_NEAR(ratio, formula, 1e-9);
    EXPECT_NEAR(ratio, 146.28, 0.01);
    std::vector<uint8_t> out;
    ASSERT_TRUE(codec->encode(torch::randn({4096, 4096}), out).is_ok());
    EXPECT_EQ(out.size(), sparse);
}

// ---- dense codecs -------------------------------------------------------------------------------

torch::Tensor roundtrip(const Codec& c, const torch::Tensor& x, std::vector<uint8_t>* wire_out = nullptr) {
    std::vector<uint8_t> wire;
    EXPECT_TRUE(c.encode(x, wire).is_ok()) << c.name();
    size_t off = 0;
    torch::Tensor d;
    EXPECT_TRUE(c.decode(wire.data(), wire.size(), off, x.sizes(), d).is_ok()) << c.name();
    EXPECT_EQ(off, wire.size());
    if (wire_out) *wire_out = wire;
    return d;
}

TEST(Codec, Fp32IsExactAndBf16RoundsAsTorchDoes) {
    torch::manual_seed(16);
    auto x = torch::randn({33, 77}) * 1e3;
    EXPECT_TRUE(torch::equal(roundtrip(*make_dense_codec(false), x), x));
    // bf16: round to nearest even, as torch's own conversion; a tie (low half exactly 0x8000) included.
    auto y = torch::cat({x.view(-1), torch::tensor({1.0f + 1.0f / 256, 1.0f + 3.0f / 256, -0.0f})});
    auto d = roundtrip(*make_dense_codec(true), y);
    EXPECT_TRUE(torch::equal(d, y.to(torch::kBFloat16).to(torch::kFloat32)));
    EXPECT_EQ(d[-3].item<float>(), 1.0f);               // 1 + 2^−8 ties to even 1
    EXPECT_EQ(d[-2].item<float>(), 1.0f + 4.0f / 256);  // 1 + 3·2^−8 ties to even 1 + 2^−6
    EXPECT_TRUE(std::signbit(d[-1].item<float>()));
}

TEST(Codec, Int8OnHandComputedValues) {
    // max|x| = 127 → s = 1; q = round_half_even(x): −63.5 → −64, 62.5 → 62, 0.5 → 0, 1.5 → 2.
    auto codec = make_int8_codec();
    auto x = torch::tensor({127.0f, -63.5f, 62.5f, 0.5f, -0.5f, 1.5f, -127.0f, 0.49f});
    std::vector<uint8_t> wire;
    auto d = roundtrip(*codec, x, &wire);
    ASSERT_EQ(wire.size(), 12u);
    EXPECT_EQ(read_f32(wire.data()), 1.0f);
    const std::vector<int8_t> q(wire.begin() + 4, wire.end());
    EXPECT_EQ(q, (std::vector<int8_t>{127, -64, 62, 0, 0, 2, -127, 0}));
    EXPECT_TRUE(torch::equal(d, torch::tensor({127.0f, -64.0f, 62.0f, 0.0f, 0.0f, 2.0f, -127.0f, 0.0f})));
    // s = max/127 in fp32; decode = s·q in fp32; all-zero input has s = 0.
    auto y = torch::tensor({2.54f, -1.0f, 0.01f});
    d = roundtrip(*codec, y, &wire);
    const float s = 2.54f / 127.0f;
    EXPECT_EQ(bits(read_f32(wire.data())), bits(s));
    EXPECT_EQ(static_cast<int8_t>(wire[5]), static_cast<int8_t>(std::nearbyint(-1.0f / s)));
    EXPECT_EQ(d[1].item<float>(), s * static_cast<float>(static_cast<int8_t>(wire[5])));
    EXPECT_TRUE(torch::equal(roundtrip(*codec, torch::zeros({5}), &wire), torch::zeros({5})));
    EXPECT_EQ(read_f32(wire.data()), 0.0f);
}

TEST(Codec, Fp4OnHandComputedValues) {
    // s = max|x| = 8; levels 8·2^(e−7): e = 1..7 → 0.125, 0.25, 0.5, 1, 2, 4, 8; e = 0 → 0.
    // Thresholds: zero below 8·2^−7 = 0.0625 (0.0625 itself ties up to 0.125); between levels the
    // log2 midpoints 8·2^(e−7.5): 4|8 at 5.657, 2|4 at 2.828, 1|2 at 1.414, 0.125|0.25 at 0.1768.
    auto codec = make_fp4_codec();
    auto x = torch::tensor({8.0f, -8.0f, 0.0f, 0.0625f, 0.0624f, 5.6f, 5.7f, -3.0f, 1.4f, 0.17f, -0.01f});
    std::vector<uint8_t> wire;
    auto d = roundtrip(*codec, x, &wire);
    ASSERT_EQ(wire.size(), 4u + 6);
    EXPECT_EQ(read_f32(wire.data()), 8.0f);
    // codes: 7, 15, 0, 1, 0, 6, 7, 14, 4, 1, 0 (a tiny negative is code 0, never sign + zero)
    EXPECT_EQ(std::vector<uint8_t>(wire.begin() + 4, wire.end()),
              (std::vector<uint8_t>{0xF7, 0x10, 0x60, 0xE7, 0x14, 0x00}));
    EXPECT_TRUE(
        torch::equal(d, torch::tensor({8.0f, -8.0f, 0.0f, 0.125f, 0.0f, 4.0f, 8.0f, -4.0f, 1.0f, 0.125f, 0.0f})));
    // Every decoded magnitude is a level, and the chosen level is log2-nearest, on random data.
    torch::manual_seed(17);
    auto r = torch::randn({4001});
    d = roundtrip(*codec, r);
    const float s = r.abs().max().item<float>();
    for (int64_t i = 0; i < r.numel(); ++i) {
        const double a = std::fabs(r[i].item<float>()), got = std::fabs(d[i].item<float>());
        double best = 0, best_dist = 1e300;
        for (int e = 1; e <= 7; ++e) {
            const double level = std::ldexp(static_cast<double>(s), e - 7);
            const double dist = std::fabs(std::log2(a / level));
            if (dist < best_dist) best = level, best_dist = dist;
        }
        if (a < std::ldexp(static_cast<double>(s), -7)) best = 0;
        ASSERT_EQ(got, best) << i << " " << a;
    }
}

// ---- failures -------------------------------------------------------------------------------------

TEST(Codec, NanAndInfAreRejectedByEveryCodec) {
    for (auto& codec : all_codecs())
        for (float bad : {std::nanf(""), INFINITY, -INFINITY}) {
            // Two bad values: (3, 70) = flat 370 lies in tile (0, 1), (60, 5) = flat 6005 in tile (0, 0),
            // which a tiled codec visits first; the error must still name the first flat index.
            auto x = torch::randn({100, 100});
            x[3][70] = bad;
            x[60][5] = INFINITY;
            std::vector<uint8_t> out = {9, 9};
            Status s = codec->encode(x, out);
            ASSERT_FALSE(s.is_ok()) << codec->name();
            EXPECT_NE(s.message().find(codec->name()), std::string::npos) << s.message();
            EXPECT_NE(s.message().find("index 370 "), std::string::npos) << s.message();
            EXPECT_NE(s.message().find(std::isnan(bad) ? "NaN" : "Inf"), std::string::npos) << s.message();
            EXPECT_EQ(out, (std::vector<uint8_t>{9, 9})) << "out left as it was";
        }
    // bf16: a finite fp32 that rounds to Inf is refused too.
    std::vector<uint8_t> out;
    EXPECT_FALSE(make_dense_codec(true)->encode(torch::tensor({1.0f, 3.4e38f}), out).is_ok());
    EXPECT_TRUE(out.empty());
    // SparseLoCo: finite values whose statistics overflow fp32 (all three kept: k_n = min(3, 4)).
    EXPECT_FALSE(make_sparseloco_codec({2, 4})->encode(torch::tensor({3.4e38f, 3.4e38f, -3.4e38f}), out).is_ok());
    EXPECT_TRUE(out.empty());
    // A payload carrying NaN is refused on decode.
    std::vector<uint8_t> nan_wire(8);
    const float q = std::nanf("");
    std::memcpy(nan_wire.data() + 4, &q, 4);
    size_t off = 0;
    torch::Tensor d;
    EXPECT_FALSE(make_dense_codec(false)->decode(nan_wire.data(), nan_wire.size(), off, {2}, d).is_ok());
    EXPECT_EQ(off, 0u);
    EXPECT_FALSE(d.defined());
}

TEST(Codec, TruncatedPayloadsAreRejectedWithOffsetUnchanged) {
    torch::manual_seed(18);
    for (auto& codec : all_codecs()) {
        auto a = torch::randn({70, 45}), b = torch::randn({301});
        std::vector<uint8_t> wire;
        ASSERT_TRUE(codec->encode(a, wire).is_ok());
        const size_t first = wire.size();
        ASSERT_TRUE(codec->encode(b, wire).is_ok());
        // Two tensors back to back decode in sequence.
        size_t off = 0;
        torch::Tensor da, db;
        ASSERT_TRUE(codec->decode(wire.data(), wire.size(), off, a.sizes(), da).is_ok());
        EXPECT_EQ(off, first);
        ASSERT_TRUE(codec->decode(wire.data(), wire.size(), off, b.sizes(), db).is_ok());
        EXPECT_EQ(off, wire.size());
        // Every cut of the second payload fails and leaves offset and outputs alone.
        for (size_t cut = first; cut < wire.size(); cut += std::max<size_t>(1, (wire.size() - first) / 97)) {
            size_t o = first;
            torch::Tensor t;
            SparsePayload sp;
            EXPECT_FALSE(codec->decode(wire.data(), cut, o, b.sizes(), t).is_ok()) << codec->name() << " " << cut;
            EXPECT_FALSE(codec->decode_sparse(wire.data(), cut, o, b.sizes(), sp).is_ok()) << codec->name();
            EXPECT_EQ(o, first);
            EXPECT_FALSE(t.defined());
            EXPECT_TRUE(sp.index.empty());
        }
        size_t past = wire.size() + 5;
        torch::Tensor t;
        EXPECT_FALSE(codec->decode(wire.data(), wire.size(), past, b.sizes(), t).is_ok());
        EXPECT_EQ(past, wire.size() + 5);
    }
}

TEST(Codec, MalformedSparsePayloadsAreRejected) {
    // 10 × 70 at block 8, k 2: tile (0, 8) is 8 × 6 = 48 entries, so in-chunk position 50 is out of range.
    auto codec = make_sparseloco_codec({8, 2});
    torch::manual_seed(19);
    auto x = torch::randn({10, 70});
    std::vector<uint8_t> wire;
    ASSERT_TRUE(codec->encode(x, wire).is_ok());
    auto counts = chunk_counts(x.sizes(), {8, 2});
    int64_t before = 0;
    for (int j = 0; j < 8; ++j) before += counts[j];
    ASSERT_EQ(before % 2, 0);
    auto decode_fails = [&](std::vector<uint8_t> w, const std::string& what) {
        size_t off = 0;
        torch::Tensor d;
        Status s = codec->decode(w.data(), w.size(), off, x.sizes(), d);
        EXPECT_FALSE(s.is_ok()) << what;
        EXPECT_EQ(off, 0u);
        EXPECT_FALSE(d.defined());
        return s.message();
    };
    auto bad = wire;
    uint8_t* pair = bad.data() + 20 + 3 * (before / 2);  // chunk 8's first index, low half of a pair
    pair[0] = 50;
    pair[1] &= 0xF0;
    EXPECT_NE(decode_fails(bad, "out of range").find("out of range"), std::string::npos);
    bad = wire;
    pair = bad.data() + 20 + 3 * (before / 2);
    std::vector<uint16_t> two = unpack12(pair, 2);
    std::swap(two[0], two[1]);  // descending inside the chunk
    auto repacked = pack12(two);
    std::copy(repacked.begin(), repacked.end(), pair);
    EXPECT_NE(decode_fails(bad, "descending").find("not ascending"), std::string::npos);
    bad = wire;
    const float nan = std::nanf("");
    std::memcpy(bad.data() + 8, &nan, 4);
    decode_fails(bad, "NaN lookup");
    // Out-of-range in-chunk positions in a full tile too (4095 ≥ 64 entries of an 8 × 8 tile).
    bad = wire;
    bad[20] = 0xFF;
    bad[21] |= 0x0F;
    decode_fails(bad, "4095 in a tile of 64");
}

// ---- the PyTorch reference ------------------------------------------------------------------------

// ctest names the folder (TW_ENGINE_TEST_DIR); __FILE__ is the fallback for a binary run by hand,
// and is relative when a compiler cache rewrote the paths, so it is not relied on under ctest.
std::string source_dir() {
    if (const char* dir = std::getenv("TW_ENGINE_TEST_DIR")) return dir;
    std::string f = __FILE__;  // …/tests/engine/test_codec.cpp
    return f.substr(0, f.rfind('/'));
}

template <class T>
bool read_pod(std::ifstream& in, T& v) {
    return static_cast<bool>(in.read(reinterpret_cast<char*>(&v), sizeof(T)));
}

TEST(Codec, MatchesPyTorchReferenceFixture) {
    // The fixture holds inputs and what tests/bench/reference_sparseloco.py (PyTorch ops, written
    // independently) keeps and decodes. WRITE_FIXTURE=1 reruns the reference to regenerate it.
    // Comparison is exact (bitwise): every fp32 quantity both sides compute is either a single
    // IEEE fp32 operation (c = v − shift, c/scale, + 2, lookup + shift; round half to even) or a
    // statistic accumulated in double and rounded once to fp32 (shift, scale, lookups), where the
    // two sides' different summation orders differ by ~1e−16 relative, far below fp32's rounding
    // step; a flip would need a double sum within that distance of an fp32 rounding midpoint.
    const std::string path = source_dir() + "/fixtures/sparseloco_reference.bin";
    if (const char* w = std::getenv("WRITE_FIXTURE"); w && std::string(w) == "1") {
        const std::string cmd =
            "/usr/bin/python3 " + source_dir() + "/../bench/reference_sparseloco.py --fixture " + path;
        ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    }
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << "missing " << path << " (WRITE_FIXTURE=1 regenerates it)";
    char magic[8];
    in.read(magic, 8);
    ASSERT_EQ(std::string(magic, 8), "TWSLREF1");
    uint32_t n_cases = 0;
    ASSERT_TRUE(read_pod(in, n_cases));
    ASSERT_GE(n_cases, 8u);
    int64_t total_kept = 0;
    for (uint32_t c = 0; c < n_cases; ++c) {
        int64_t block = 0, k = 0;
        uint32_t ndim = 0;
        ASSERT_TRUE(read_pod(in, block) && read_pod(in, k) && read_pod(in, ndim));
        std::vector<int64_t> shape(ndim);
        for (auto& d : shape) ASSERT_TRUE(read_pod(in, d));
        int64_t n = 1;
        for (auto d : shape) n *= d;
        auto x = torch::empty(shape, torch::kFloat32);
        in.read(reinterpret_cast<char*>(x.data_ptr<float>()), 4 * n);
        int64_t K = 0;
        ASSERT_TRUE(read_pod(in, K));
        std::vector<int64_t> ref_index(static_cast<size_t>(K));
        std::vector<float> ref_value(static_cast<size_t>(K));
        in.read(reinterpret_cast<char*>(ref_index.data()), 8 * K);
        in.read(reinterpret_cast<char*>(ref_value.data()), 4 * K);
        float ref_shift = 0, ref_lookup[4];
        ASSERT_TRUE(read_pod(in, ref_shift));
        in.read(reinterpret_cast<char*>(ref_lookup), 16);
        ASSERT_TRUE(in) << "fixture truncated in case " << c;

        auto codec = make_sparseloco_codec({block, k});
        std::vector<uint8_t> wire;
        ASSERT_TRUE(codec->encode(x, wire).is_ok());
        EXPECT_EQ(bits(read_f32(wire.data())), bits(ref_shift)) << "case " << c;
        for (int b = 0; b < 4; ++b)
            EXPECT_EQ(bits(read_f32(wire.data() + 4 + 4 * b)), bits(ref_lookup[b])) << "case " << c;
        size_t off = 0;
        SparsePayload sp;
        ASSERT_TRUE(codec->decode_sparse(wire.data(), wire.size(), off, x.sizes(), sp).is_ok());
        ASSERT_EQ(sp.index, ref_index) << "case " << c << " shape " << x.sizes();
        for (int64_t i = 0; i < K; ++i)
            ASSERT_EQ(bits(sp.value[i]), bits(ref_value[i])) << "case " << c << " entry " << i;
        off = 0;
        torch::Tensor dense;
        ASSERT_TRUE(codec->decode(wire.data(), wire.size(), off, x.sizes(), dense).is_ok());
        auto expect = torch::zeros_like(x);
        for (int64_t i = 0; i < K; ++i) expect.view(-1)[ref_index[i]] = ref_value[i];
        EXPECT_TRUE(torch::equal(dense, expect)) << "case " << c;
        total_kept += K;
    }
    EXPECT_GT(total_kept, 500);
    EXPECT_EQ(in.peek(), EOF);
}

}  // namespace
}  // namespace tw
