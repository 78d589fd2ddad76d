// Activation codecs (engine/pipeline/activation_codec.h): dense boundaries round-trip bit for bit,
// subspace boundaries send the README's bytes (B·T·(k·c + id bytes) forward, B·T·k·c back) and
// rebuild X exactly while X − T_fixed[ids] lies in span(U), and a payload of the wrong size is an
// error naming the size expected.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "engine/pipeline/activation_codec.h"
#include "engine/pipeline/subspace.h"

namespace tw {
namespace {

constexpr int64_t kB = 3, kT = 5, kD = 16, kV = 40;

TEST(ActivationCodec, DenseRoundTripIsExact) {
    auto codec = make_dense_codec(kD);
    EXPECT_EQ(codec->rank(), 0);
    EXPECT_FALSE(codec->needs_ids());
    torch::manual_seed(3);
    auto x = torch::randn({kB, kT, kD});
    auto bytes = codec->encode_activations(x, torch::Tensor());
    EXPECT_EQ(bytes.size(), static_cast<size_t>(kB * kT * kD * 4));
    EXPECT_EQ(codec->forward_bytes(kB, kT), bytes.size());
    auto back = codec->decode_activations(bytes, kB, kT, nullptr);
    ASSERT_TRUE(back) << back.message();
    EXPECT_TRUE(torch::equal(*back, x));
    auto g = torch::randn({kB, kT, kD});
    auto gb = codec->encode_gradient(g);
    EXPECT_EQ(gb.size(), codec->backward_bytes(kB, kT));
    auto gback = codec->decode_gradient(gb, kB, kT);
    ASSERT_TRUE(gback) << gback.message();
    EXPECT_TRUE(torch::equal(*gback, g));
    gb.pop_back();
    auto bad = codec->decode_gradient(gb, kB, kT);
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.message().find("expected 960"), std::string::npos) << bad.message();
}

TEST(ActivationCodec, SubspaceBytesAreTheFormulaAndTheBoundaryIsExactInSpan) {
    const int64_t k = 4;
    auto u = subspace_basis(kD, k, 7);
    auto t_fixed = frozen_embedding(kV, kD, 7);
    auto codec = make_subspace_codec(u, WireDtype::kFp32, t_fixed, kV);
    EXPECT_EQ(codec->rank(), k);
    EXPECT_TRUE(codec->needs_ids());
    EXPECT_EQ(codec->name(), "subspace k=4 fp32");
    // Forward: B·T·(k·4 + 2) (fp32 coordinates, ids as uint16); backward: B·T·k·4.
    EXPECT_EQ(codec->forward_bytes(kB, kT), static_cast<uint64_t>(kB * kT * (k * 4 + 2)));
    EXPECT_EQ(codec->backward_bytes(kB, kT), static_cast<uint64_t>(kB * kT * k * 4));
    torch::manual_seed(4);
    auto ids = torch::randint(0, kV, {kB, kT}, torch::kLong);
    auto coords = torch::randn({kB, kT, k});
    auto x = torch::matmul(coords, u.t()) + t_fixed.index_select(0, ids.reshape({-1})).view({kB, kT, kD});
    auto bytes = codec->encode_activations(x, ids);
    ASSERT_EQ(bytes.size(), codec->forward_bytes(kB, kT));
    torch::Tensor ids_back;
    auto back = codec->decode_activations(bytes, kB, kT, &ids_back);
    ASSERT_TRUE(back) << back.message();
    EXPECT_TRUE(torch::equal(ids_back, ids));
    EXPECT_LT((*back - x).abs().max().item<double>(), 1e-5);
    // The codec's bytes are subspace.h's layout, byte for byte.
    EXPECT_EQ(bytes, encode_activations(x, ids, t_fixed, u, WireDtype::kFp32, kV));
    auto g = torch::randn({kB, kT, kD});
    auto gb = codec->encode_gradient(g);
    ASSERT_EQ(gb.size(), codec->backward_bytes(kB, kT));
    auto gback = codec->decode_gradient(gb, kB, kT);
    ASSERT_TRUE(gback) << gback.message();
    EXPECT_LT((*gback - torch::matmul(torch::matmul(g, u), u.t())).abs().max().item<double>(), 1e-5);
    // bf16 coordinates: B·T·(k·2 + 2) forward.
    EXPECT_EQ(make_subspace_codec(u, WireDtype::kBf16, t_fixed, kV)->forward_bytes(kB, kT),
              static_cast<uint64_t>(kB * kT * (k * 2 + 2)));
    bytes.resize(bytes.size() - 1);
    auto bad = codec->decode_activations(bytes, kB, kT, nullptr);
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.message().find("expected " + std::to_string(kB * kT * (k * 4 + 2))), std::string::npos)
        << bad.message();
}

TEST(ActivationCodec, TheCodecSeesInPlaceUpdatesOfTheSharedFrozenEmbedding) {
    // AD2 changes T_fixed in place on every node: the codec holds the same tensor, not a copy.
    auto u = subspace_basis(kD, 4, 7);
    auto t_fixed = frozen_embedding(kV, kD, 7);
    auto codec = make_subspace_codec(u, WireDtype::kFp32, t_fixed, kV);
    auto ids = torch::zeros({1, 1}, torch::kLong);
    auto x = t_fixed[0].view({1, 1, kD}).clone();  // coordinates 0
    auto bytes = codec->encode_activations(x, ids);
    t_fixed[0].add_(1.0);
    auto back = codec->decode_activations(bytes, 1, 1, nullptr);
    ASSERT_TRUE(back);
    EXPECT_TRUE(torch::allclose(*back, x + 1.0));
}

}  // namespace
}  // namespace tw
