// The ring all-reduce (outer.topology = "ring", engine/algo/ring_allreduce.h) over real
// ZmqCollectives on inproc://, members as threads: bytes on the wire equal the schedule's exactly
// (and 2·(R−1)/R·P·b when R divides P), the mean equals the mesh's within fp32 summation order,
// quantised payloads are re-encoded at every hop (pinned on hand-computed cases), any ordered subset
// of the members can form the ring (over the mesh and over a MemberView), and the algorithms
// over the ring: DiLoCo's bytes, clocks and agreement; mesh runs bit-identical to the code before
// the ring existed.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <zmq.hpp>

#include "core/algorithm.h"
#include "core/member_view.h"
#include "core/ring_schedule.h"
#include "engine/algo/outer.h"
#include "engine/algo/ring_allreduce.h"
#include "engine/algo/state_hash.h"
#include "engine/algo/streaming_diloco.h"
#include "engine/codec/codec.h"
#include "remote/zmq_collective.h"
#include "tests/engine/micro_run.h"
#include "tests/engine/replica_threads.h"

namespace tw {
namespace {

using testing_support::expect_no_errors;
using testing_support::on_threads;
constexpr int kOuter = static_cast<int>(LinkClass::kOuterSync);

struct Mesh {
    std::shared_ptr<zmq::context_t> ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps;
    Mesh(const std::string& name, int R) {
        static int n = 0;
        for (int r = 0; r < R; ++r) eps.push_back("inproc://ring-" + name + "-" + std::to_string(n) + "-" + std::to_string(r));
        ++n;
    }
    std::unique_ptr<ZmqCollective> member(int r) { return ZmqCollective::create(ctx, eps, r, 20000).value(); }
};

std::vector<int> iota_members(int R) {
    std::vector<int> m(static_cast<size_t>(R));
    for (int r = 0; r < R; ++r) m[static_cast<size_t>(r)] = r;
    return m;
}

// Every member's vector: N(0, 1) scaled per member, from a fixed seed.
std::vector<torch::Tensor> member_vectors(int R, int64_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<torch::Tensor> out;
    for (int r = 0; r < R; ++r) {
        std::vector<float> v(static_cast<size_t>(n));
        for (auto& x : v) x = nd(rng) * (1.0f + 0.5f * static_cast<float>(r));
        out.push_back(torch::from_blob(v.data(), {n}, torch::kFloat32).clone());
    }
    return out;
}

// The mesh's arithmetic: a zero vector plus every member's values in rank order, divided by R.
torch::Tensor mesh_mean(const std::vector<torch::Tensor>& xs) {
    auto sum = torch::zeros_like(xs[0]);
    for (auto& x : xs) sum += x;
    sum /= static_cast<double>(xs.size());
    return sum;
}

struct RingRun {
    std::vector<torch::Tensor> result;  // per member
    std::vector<RingReport> reports;
    std::vector<ByteCounters> counters;
};

// One ring all-reduce of `xs` over a mesh of `mesh_size` members, `ring` members (in ring order)
// taking part; members outside the ring do nothing.
RingRun run_ring(const std::vector<torch::Tensor>& xs, const std::vector<int>& ring, int mesh_size,
                 const std::string& codec_name, std::vector<int64_t> segments = {}, RingGuard guard = {}) {
    Mesh mesh(codec_name, mesh_size);
    RingRun out;
    out.result.resize(static_cast<size_t>(mesh_size));
    out.reports.resize(static_cast<size_t>(mesh_size));
    out.counters.resize(static_cast<size_t>(mesh_size));
    if (segments.empty()) segments = {xs[0].numel()};
    expect_no_errors(on_threads(mesh_size, [&](int r) -> std::string {
        auto coll = mesh.member(r);
        if (std::find(ring.begin(), ring.end(), r) == ring.end()) return "";
        auto codec = make_wire_codec(codec_name);
        if (!codec) return codec.message();
        RingSpec spec{ring, segments, codec->get(), LinkClass::kOuterSync, "test"};
        auto x = xs[static_cast<size_t>(r)].clone();
        auto rep = ring_allreduce_mean(*coll, spec, x, 1.5 * r, guard);
        if (!rep) return rep.message();
        // Everyone's last chunk is counted on arrival: meet once more before reading the counters.
        std::vector<int> sorted = ring;
        std::sort(sorted.begin(), sorted.end());
        if (auto b = coll->exchange(sorted, {}, LinkClass::kIntraReplica); !b) return b.message();
        out.result[static_cast<size_t>(r)] = x;
        out.reports[static_cast<size_t>(r)] = *rep;
        out.counters[static_cast<size_t>(r)] = coll->counters();
        return "";
    }));
    return out;
}

// ---------------------------------------------------------------------------------------------
// Bytes
// ---------------------------------------------------------------------------------------------

// Per member: what it reports = what the transport counted = core/ring_schedule.h's sum over its
// chunks; = 2·(R−1)/R·P·b exactly when R divides P; received = its predecessor's. Hops 2·(R−1).
TEST(Ring, BytesOnTheWireAreTheSchedulesPerMemberWithUnevenChunks) {
    for (int R : {2, 3, 4}) {
        for (const char* dtype : {"fp32", "bf16"}) {
            const uint64_t b = std::string(dtype) == "fp32" ? 4 : 2;
            for (int64_t P : {1200, 1001}) {
                SCOPED_TRACE("R " + std::to_string(R) + " " + dtype + " P " + std::to_string(P));
                const auto run = run_ring(member_vectors(R, P, 7), iota_members(R), R, dtype);
                for (int i = 0; i < R; ++i) {
                    const uint64_t expected = ring_sent_bytes_dense(P, b, R, i);
                    if (P % R == 0) {
                        EXPECT_EQ(expected, 2 * static_cast<uint64_t>(R - 1) * P * b / R);
                    }
                    EXPECT_EQ(run.reports[i].bytes_sent, expected) << "member " << i;
                    EXPECT_EQ(run.counters[i].sent_bytes[kOuter], expected) << "member " << i;
                    EXPECT_EQ(run.counters[i].recv_bytes[kOuter], ring_sent_bytes_dense(P, b, R, (i + R - 1) % R));
                    EXPECT_EQ(run.counters[i].sent_msgs[kOuter], static_cast<uint64_t>(R - 1 + 2 * (R - 1)))
                        << "the opening to each peer plus 2·(R−1) chunks";
                    EXPECT_EQ(run.reports[i].hops, 2 * (R - 1));
                }
            }
        }
    }
    // By hand, P = 1001 over 3 members in fp32: chunks 334, 334, 333; member 0 sends every chunk twice
    // but chunks 1 and 2 once: (2·1001 − 334 − 333)·4 = 5340 bytes; members 1 and 2: (2002 − 333 − 334)·4.
    EXPECT_EQ(ring_sent_bytes_dense(1001, 4, 3, 0), 5340u);
    EXPECT_EQ(ring_sent_bytes_dense(1001, 4, 3, 1), 5340u);
    EXPECT_EQ(ring_sent_bytes_dense(1001, 4, 3, 2), (2002u - 334 - 334) * 4);
}

// With the guard on, the opening carries each member's 8-byte norm to every other member.
TEST(Ring, TheGuardsOpeningAddsEightBytesPerPeer) {
    const int R = 3;
    const int64_t P = 999;
    const auto run = run_ring(member_vectors(R, P, 8), iota_members(R), R, "fp32", {}, RingGuard{4.0});
    for (int i = 0; i < R; ++i) {
        EXPECT_EQ(run.reports[i].bytes_sent, ring_sent_bytes_dense(P, 4, R, i) + 8 * (R - 1));
        EXPECT_EQ(run.counters[i].sent_bytes[kOuter], run.reports[i].bytes_sent);
        EXPECT_EQ(run.reports[i].guard_clipped, 0);
    }
}

// int8 and fp4 pay one 4-byte scale per piece: a chunk crossing a tensor boundary pays two.
TEST(Ring, QuantisedChunksPayAScalePerTensorPiece) {
    const int R = 3;
    const std::vector<int64_t> segments{100, 37, 64, 2};  // 203 elements: chunks 68, 68, 67
    for (const char* dtype : {"int8", "fp4"}) {
        auto codec = make_wire_codec(dtype).value();
        const auto chunk_bytes = ring_chunk_wire_bytes(segments, R, [&](int64_t n) { return codec->wire_bytes({n}); });
        // Chunk 0 = [0, 68) inside tensor 0; chunk 1 = [68, 136): 32 of tensor 0, 36 of tensor 1;
        // chunk 2 = [136, 203): 1 of tensor 1, 64 of tensor 2, 2 of tensor 3.
        auto piece = [&](int64_t n) { return std::string(dtype) == "int8" ? 4 + n : 4 + (n + 1) / 2; };
        EXPECT_EQ(chunk_bytes, (std::vector<uint64_t>{static_cast<uint64_t>(piece(68)),
                                                      static_cast<uint64_t>(piece(32) + piece(36)),
                                                      static_cast<uint64_t>(piece(1) + piece(64) + piece(2))}));
        const auto run = run_ring(member_vectors(R, 203, 9), iota_members(R), R, dtype, segments);
        for (int i = 0; i < R; ++i) {
            EXPECT_EQ(run.reports[i].bytes_sent, ring_sent_bytes(chunk_bytes, i)) << dtype << " member " << i;
            EXPECT_EQ(run.counters[i].sent_bytes[kOuter], run.reports[i].bytes_sent) << dtype;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------------

// fp32 on the wire: every member holds the same bits, and they equal the mesh's mean up to the
// summation order (chunk c is summed from position c around the ring). R = 2 sums two values, in
// either order the same: bit-identical. Per element, two sums of R terms in different orders differ
// by at most 2·(R−1) roundings of a partial sum (each ≤ 2⁻²⁴·Σ|x|) and the two divisions by one
// rounding each: |ring − mesh| ≤ 2·2⁻²⁴·Σ_r|x_r| after dividing by R. The largest difference
// measured is printed (4.77e-07 for R = 3 and R = 4 on these N(0, 1)-sized values, at most 0.62 of
// the bound).
TEST(Ring, Fp32MeanEqualsTheMeshWithinSummationOrder) {
    for (int R : {2, 3, 4}) {
        const int64_t P = 100003;
        const auto xs = member_vectors(R, P, 11 + R);
        const auto run = run_ring(xs, iota_members(R), R, "fp32");
        const auto mesh = mesh_mean(xs);
        for (int i = 1; i < R; ++i) EXPECT_TRUE(torch::equal(run.result[i], run.result[0])) << "member " << i;
        auto abs_sum = torch::zeros({P}, torch::kFloat64);
        for (auto& x : xs) abs_sum += x.abs().to(torch::kFloat64);
        const auto diff = (run.result[0].to(torch::kFloat64) - mesh.to(torch::kFloat64)).abs();
        const auto bound = 2 * std::ldexp(1.0, -24) * abs_sum;
        const int64_t differing = (run.result[0] != mesh).sum().item<int64_t>();
        std::printf("ring vs mesh, fp32, R=%d, P=%lld: largest |difference| %.3g, at most %.3g of its bound; "
                    "%lld of %lld values differ\n",
                    R, static_cast<long long>(P), diff.max().item<double>(), (diff / bound).max().item<double>(),
                    static_cast<long long>(differing), static_cast<long long>(P));
        if (R == 2) {
            EXPECT_EQ(diff.max().item<double>(), 0.0);
        }
        EXPECT_TRUE((diff <= bound).all().item<bool>());
        if (R > 2) {
            EXPECT_GT(differing, 0);  // the order really differs (so the test can tell)
        }
    }
}

// A ring over any ordered subset of the members: members {3, 0, 2} of a mesh of 5 (1 and 4 idle)
// in that ring order hold the mean of their own three vectors; its bytes follow their positions.
TEST(Ring, AnyOrderedSubsetOfTheMembersFormsTheRing) {
    const int N = 5;
    const std::vector<int> ring{3, 0, 2};
    const int64_t P = 1001;
    const auto xs = member_vectors(N, P, 21);
    const auto run = run_ring(xs, ring, N, "fp32");
    const auto mesh = mesh_mean({xs[0], xs[2], xs[3]});
    for (size_t pos = 0; pos < ring.size(); ++pos) {
        const int r = ring[pos];
        EXPECT_TRUE(torch::allclose(run.result[r], mesh, 0, 1e-6)) << "member " << r;
        EXPECT_TRUE(torch::equal(run.result[r], run.result[ring[0]])) << "member " << r;
        EXPECT_EQ(run.reports[r].bytes_sent, ring_sent_bytes_dense(P, 4, 3, static_cast<int>(pos))) << "member " << r;
        EXPECT_EQ(run.reports[r].clocks, (std::vector<double>{0.0, 3.0, 4.5}));  // ascending ranks 0, 2, 3
    }
    for (int idle : {1, 4}) EXPECT_EQ(run.counters[idle].sent_bytes[kOuter], 0u);
}

// The same over a MemberView (a pipeline's stage round): the members {1, 2, 4} of a mesh of 5,
// the ring in view positions 2, 0, 1 (mesh ranks 4, 1, 2).
TEST(Ring, RunsOverAMemberView) {
    const int N = 5;
    const std::vector<int> group{1, 2, 4};
    const int64_t P = 777;
    const auto xs = member_vectors(N, P, 31);
    Mesh mesh("group", N);
    std::vector<torch::Tensor> result(N);
    std::vector<uint64_t> sent(N);
    expect_no_errors(on_threads(N, [&](int r) -> std::string {
        auto coll = mesh.member(r);
        if (std::find(group.begin(), group.end(), r) == group.end()) return "";
        MemberView g(*coll, group);
        auto codec = make_dense_codec(false);
        RingSpec spec{{2, 0, 1}, {P}, codec.get(), LinkClass::kOuterSync, "group"};
        auto x = xs[static_cast<size_t>(r)].clone();
        auto rep = ring_allreduce_mean(g, spec, x, 0.0);
        if (!rep) return rep.message();
        const int pos = static_cast<int>(std::find(spec.members.begin(), spec.members.end(), g.rank()) - spec.members.begin());
        if (rep->bytes_sent != ring_sent_bytes_dense(P, 4, 3, pos)) return "bytes " + std::to_string(rep->bytes_sent);
        result[static_cast<size_t>(r)] = x;
        return "";
    }));
    const auto mean = mesh_mean({xs[1], xs[2], xs[4]});
    for (int r : group) {
        EXPECT_TRUE(torch::allclose(result[r], mean, 0, 1e-6)) << r;
        EXPECT_TRUE(torch::equal(result[r], result[group[0]])) << r;
    }
}

// Re-encoding at every hop, pinned by hand. R = 3, members in rank order, so chunk c travels
// c → c+1 → c+2 (mod 3), whose member owns it: it divides by 3, encodes once, and that encoding
// goes round unchanged; everyone holds its decoding.
//
// bf16, one element per chunk (u = 2⁻⁸):
//   chunk 0: x = 1, u, u along 0 → 1 → 2: member 1 sends bf16(1 + u) = 1 (a tie, to even);
//            member 2: (1 + u)/3 = 257/768 → bf16 171/512 = 0.333984375. The mesh: (1 + 2u)/3 = 43/128.
//   chunk 1: 0.5 everywhere: 0.5.
//   chunk 2: x = u, 1, u, travelling 2 → 0 → 1: member 0 sends bf16(2u) exactly, member 1:
//            (1 + 2u)/3 = 43/128 = 0.3359375, the mesh's value: the same contributions, another order.
TEST(Ring, Bf16IsReRoundedAtEveryHopOnAHandCase) {
    const float u = std::ldexp(1.0f, -8);
    const std::vector<torch::Tensor> xs{torch::tensor({1.0f, 0.5f, u}), torch::tensor({u, 0.5f, 1.0f}),
                                        torch::tensor({u, 0.5f, u})};
    const auto run = run_ring(xs, {0, 1, 2}, 3, "bf16");
    for (int r = 0; r < 3; ++r) {
        EXPECT_EQ(run.result[r][0].item<float>(), 0.333984375f) << r;
        EXPECT_EQ(run.result[r][1].item<float>(), 0.5f) << r;
        EXPECT_EQ(run.result[r][2].item<float>(), 0.3359375f) << r;
    }
    EXPECT_EQ(mesh_mean(xs)[0].item<float>(), 0.3359375f);  // the difference is the hop's rounding
}

// int8, chunks of two elements (u = 2⁻⁷; s = max|x|/127, q = round-half-even(x/s)):
//   chunk 0 along 0 → 1 → 2 with x₀ = [254u, 6u], x₁ = [254u, 0], x₂ = [−127u, u]:
//     member 0 sends s = 2u, q = [127, 3] → [254u, 6u] exactly;
//     member 1: [508u, 6u] → s = 4u, q = [127, round(1.5) = 2] → [508u, 8u] (the hop's rounding);
//     member 2: [381u, 9u] / 3 = [127u, 3u] → s = u, q = [127, 3] → [127u, 3u].
//   Without the hop's rounding it would be [381u, 7u]/3 → q(2.33) = 2 → [127u, 2u]; the mesh
//   (each payload decoded once, no final encoding): [127u, 7u/3].
//   Chunks 1 and 2 are zeros (scale 0).
// fp4 (E3M0: levels s·2^(e−7), nearest in log2), chunk 0 with x₀ = [1, 0.25], x₁ = [1, 0.1], x₂ = [1, 0.75]:
//     member 0 sends [1, 0.25] (s = 1, 0.25 is a level);
//     member 1: [2, 0.35] → s = 2, 0.35 below the midpoint 2·2^−2.5 ≈ 0.354 of 0.25 and 0.5 → [2, 0.25];
//     member 2: [3, 1] / 3 = [1, 1/3] → s = 1, 1/3 < 2^−1.5 ≈ 0.354 → [1, 0.25].
//   Without the hop's rounding: (0.35 + 0.75)/3 ≈ 0.367 → 0.5; the mesh: (0.25 + 0.125 + 1)/3 ≈ 0.458.
TEST(Ring, Int8AndFp4AreReEncodedAtEveryHopOnHandCases) {
    const float u = std::ldexp(1.0f, -7);
    auto vec = [](float a, float b) { return torch::tensor({a, b, 0.0f, 0.0f, 0.0f, 0.0f}); };
    {
        const std::vector<torch::Tensor> xs{vec(254 * u, 6 * u), vec(254 * u, 0), vec(-127 * u, u)};
        const auto run = run_ring(xs, {0, 1, 2}, 3, "int8");
        for (int r = 0; r < 3; ++r) {
            EXPECT_EQ(run.result[r][0].item<float>(), 127 * u) << r;
            EXPECT_EQ(run.result[r][1].item<float>(), 3 * u) << r;
            EXPECT_EQ(run.result[r].narrow(0, 2, 4).abs().sum().item<float>(), 0.0f) << r;
        }
    }
    {
        const std::vector<torch::Tensor> xs{vec(1, 0.25f), vec(1, 0.1f), vec(1, 0.75f)};
        const auto run = run_ring(xs, {0, 1, 2}, 3, "fp4");
        for (int r = 0; r < 3; ++r) {
            EXPECT_EQ(run.result[r][0].item<float>(), 1.0f) << r;
            EXPECT_EQ(run.result[r][1].item<float>(), 0.25f) << r;
        }
    }
}

// The same chain written with the codec's own round trip, rt(v) = decode(encode(v)), for a random
// case of every quantised dtype: chunk c = rt((rt(rt(x_c) + x_(c+1)) + x_(c+2)) / 3) bit for bit,
// on every member (the order of the hops, not just the result, is pinned).
TEST(Ring, QuantisedChunksFollowTheHopChainBitForBit) {
    for (const char* dtype : {"bf16", "int8", "fp4"}) {
        SCOPED_TRACE(dtype);
        const int R = 3;
        const int64_t P = 30;  // chunks of 10
        const auto xs = member_vectors(R, P, 41);
        const auto run = run_ring(xs, iota_members(R), R, dtype);
        auto codec = make_wire_codec(dtype).value();
        auto rt = [&](const torch::Tensor& v) {
            std::vector<uint8_t> bytes;
            EXPECT_TRUE(codec->encode(v.contiguous(), bytes).is_ok());
            size_t off = 0;
            torch::Tensor out;
            EXPECT_TRUE(codec->decode(bytes.data(), bytes.size(), off, {v.numel()}, out).is_ok());
            return out;
        };
        for (int c = 0; c < R; ++c) {
            auto part = [&](int m) { return xs[static_cast<size_t>(m % R)].narrow(0, 10 * c, 10); };
            auto sum = rt(rt(part(c)) + part(c + 1)) + part(c + 2);
            sum /= 3.0;
            const auto expected = rt(sum);
            for (int r = 0; r < R; ++r)
                EXPECT_TRUE(torch::equal(run.result[r].narrow(0, 10 * c, 10), expected)) << "chunk " << c << " member " << r;
        }
    }
}

// A member with NaN in its vector refuses in the opening: every member fails at once, naming it.
TEST(Ring, ANonFiniteMemberIsNamedByEveryoneAtOnce) {
    const int R = 3;
    Mesh mesh("nan", R);
    auto xs = member_vectors(R, 50, 51);
    xs[1][7] = NAN;
    const auto t0 = std::chrono::steady_clock::now();
    const auto errors = on_threads(R, [&](int r) -> std::string {
        auto coll = mesh.member(r);
        auto codec = make_dense_codec(false);
        RingSpec spec{iota_members(R), {50}, codec.get(), LinkClass::kOuterSync, "test"};
        auto x = xs[static_cast<size_t>(r)].clone();
        auto rep = ring_allreduce_mean(*coll, spec, x, 0.0, RingGuard{4.0});
        return rep ? "" : rep.message();
    });
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
    for (int r = 0; r < R; ++r) {
        EXPECT_NE(errors[r].find("test: replica 1"), std::string::npos) << r << ": " << errors[r];
        EXPECT_NE(errors[r].find("NaN or Inf"), std::string::npos) << r << ": " << errors[r];
    }
}

// The mesh as one member sees it, with the n-th point-to-point message it receives cut short by a
// byte: a truncated or forged chunk from its predecessor.
class TruncatedChunk : public Collective {
public:
    TruncatedChunk(Collective& real, int nth) : real_(real), nth_(nth) {}
    int rank() const override { return real_.rank(); }
    int size() const override { return real_.size(); }
    Result<std::vector<std::vector<uint8_t>>> all_gather(const std::vector<uint8_t>& mine, LinkClass link, double clock,
                                                         std::vector<double>* clocks) override {
        return real_.all_gather(mine, link, clock, clocks);
    }
    Result<std::vector<std::vector<uint8_t>>> exchange(const std::vector<int>& g, const std::vector<uint8_t>& mine,
                                                       LinkClass link, double clock,
                                                       std::vector<double>* clocks) override {
        return real_.exchange(g, mine, link, clock, clocks);
    }
    Status agree(const std::vector<int>& group, uint64_t h) override { return real_.agree(group, h); }
    Status send(int p, const std::vector<uint8_t>& b, LinkClass l, double c, bool n) override {
        return real_.send(p, b, l, c, n);
    }
    Result<std::vector<uint8_t>> recv(int p, double* c) override {
        auto got = real_.recv(p, c);
        if (got && ++received_ == nth_ && !got->empty()) got->pop_back();
        return got;
    }
    const ByteCounters& counters() const override { return real_.counters(); }
    double real_exchange_s() const override { return real_.real_exchange_s(); }

private:
    Collective& real_;
    int nth_, received_ = 0;
};

// A chunk of the wrong size is refused naming the member that sent it (the receiver's predecessor).
// Cut at member 1's last receive (its all-gather's last step), after its last send, so the others
// finish the round.
TEST(Ring, AMalformedChunkIsRefusedNamingItsSender) {
    const int R = 3;
    Mesh mesh("cut", R);
    const auto xs = member_vectors(R, 90, 61);
    const auto errors = on_threads(R, [&](int r) -> std::string {
        auto coll = mesh.member(r);
        TruncatedChunk cut(*coll, 2 * (R - 1));
        Collective& use = r == 1 ? static_cast<Collective&>(cut) : static_cast<Collective&>(*coll);
        auto codec = make_wire_codec("int8").value();
        RingSpec spec{iota_members(R), {90}, codec.get(), LinkClass::kOuterSync, "test"};
        auto x = xs[static_cast<size_t>(r)].clone();
        auto rep = ring_allreduce_mean(use, spec, x, 0.0);
        return rep ? "" : rep.message();
    });
    EXPECT_EQ(errors[0], "");
    EXPECT_EQ(errors[2], "");
    EXPECT_NE(errors[1].find("test: replica 0, chunk"), std::string::npos) << errors[1];
    EXPECT_NE(errors[1].find("int8"), std::string::npos) << errors[1];  // the codec says what is wrong
}

// ---------------------------------------------------------------------------------------------
// The algorithms over the ring
// ---------------------------------------------------------------------------------------------

struct MicroOuterRun {
    uint64_t global_hash = 0, live_hash = 0;
    std::vector<uint64_t> sent;
    std::vector<uint64_t> reported;  // Σ of the reports' bytes_sent, per replica
    std::vector<double> losses;      // replica 0's
    std::vector<std::vector<int64_t>> hops;
    std::vector<torch::Tensor> global;  // per replica, flattened
};

// R = 3 replicas of the micro model on the synthetic stream, 2 rounds (Streaming DiLoCo: F = 2,
// H = 4, four fragment exchanges), outer.topology as given ("" = the algorithm's default).
MicroOuterRun micro_outer_run(const std::string& algo, const std::string& dtype, const std::string& topology,
                              int R = 3) {
    const int H = 3, rounds = 2;
    auto c = testing_support::micro_run(53, H * rounds);
    c.outer.algorithm = algo;
    c.outer.replicas = R;
    c.outer.inner_steps = H;
    c.outer.dtype = dtype;
    c.outer.fragments = 1;
    c.outer.topology = topology;
    if (algo == "streaming_diloco") c.outer.inner_steps = 4, c.outer.fragments = 2;
    if (algo == "noloco") c.outer.group_size = R;
    Mesh mesh(algo + dtype + topology, R);
    MicroOuterRun out;
    out.sent.resize(R);
    out.reported.resize(R);
    out.hops.resize(R);
    out.global.resize(R);
    expect_no_errors(on_threads(R, [&](int r) -> std::string {
        auto coll = mesh.member(r);
        auto t = testing_support::synthetic_trainer(c, r, R);
        auto a = make_outer_algorithm(c, t.model()->parameters(), testing_support::param_names(t), r, R);
        if (!a) return a.message();
        for (int64_t s = 1; s <= c.outer.inner_steps * rounds; ++s) {
            const double loss = t.step().loss;
            if (r == 0) out.losses.push_back(loss);
            auto rep = (*a)->after_step(s, *coll, 0.0);
            if (!rep) return rep.message();
            if (!rep->synced) continue;
            out.reported[r] += rep->bytes_sent;
            out.hops[r].push_back(rep->hops);
            if (auto h = agree_on_round(**a, *coll); !h) return h.message();
        }
        if (auto b = coll->all_gather({}, LinkClass::kIntraReplica); !b) return b.message();
        out.sent[r] = coll->counters().sent_bytes[kOuter];
        out.global[r] = testing_support::flatten_copy((*a)->eval_params());
        if (r == 0) {
            out.global_hash = state_hash((*a)->eval_params());
            out.live_hash = state_hash(t.model()->parameters());
        }
        return "";
    }));
    return out;
}

// outer.topology = "mesh": a run repeated is the same run to the bit (the same arithmetic in the
// same order on this CPU; weights differ between CPUs, whose BLAS kernels add in other orders, so
// no hash is pinned), the bytes are exact (they depend on shapes and wire formats only), the live
// weights are the global ones after a round for the algorithms that keep no local copy, and bf16
// and int8 payloads move the last loss by rounding only.
TEST(RingTopology, MeshRunsRepeatBitForBitAndSendExactBytes) {
    struct Pin {
        const char* algo;
        const char* dtype;
        uint64_t sent;
        bool live_is_global;
    };
    const std::vector<Pin> pins = {
        {"diloco", "fp32", 455680, true},          {"diloco", "bf16", 227840, true},
        {"diloco", "int8", 114144, true},          {"streaming_diloco", "fp4", 57184, false},
        {"noloco", "fp32", 911360, true},
    };
    double fp32_last = 0;
    for (const Pin& p : pins) {
        SCOPED_TRACE(std::string(p.algo) + " " + p.dtype);
        const auto run = micro_outer_run(p.algo, p.dtype, "mesh");
        const auto again = micro_outer_run(p.algo, p.dtype, "mesh");
        EXPECT_EQ(run.global_hash, again.global_hash);
        EXPECT_EQ(run.live_hash, again.live_hash);
        EXPECT_EQ(run.losses, again.losses);
        if (p.live_is_global) {
            EXPECT_EQ(run.global_hash, run.live_hash);
        }
        for (int r = 0; r < 3; ++r) {
            EXPECT_EQ(run.sent[r], p.sent) << "replica " << r;
            EXPECT_TRUE(torch::equal(run.global[r], run.global[0])) << "replica " << r;
        }
        ASSERT_FALSE(run.losses.empty());
        // The round's payload format moves the next steps' loss by rounding only (seen: under 1e-5).
        if (std::string(p.algo) == "diloco") {
            if (std::string(p.dtype) == "fp32") fp32_last = run.losses.back();
            else EXPECT_LT(std::abs(run.losses.back() - fp32_last), 1e-4);
        }
    }
}

// Over the ring: every replica holds the same global weights, each report's bytes are the ring's
// (and what the transport counted, opening included), 2·(R−1) hops; and with fp32 the weights are
// within summation order of the mesh's.
TEST(RingTopology, DenseAlgorithmsOverTheRingReportWhatTheWireCarried) {
    struct Case {
        const char* algo;
        const char* dtype;
    };
    for (const Case& cs : std::vector<Case>{{"diloco", "fp32"},
                                            {"diloco", "bf16"},
                                            {"diloco", "int8"},
                                            {"streaming_diloco", "fp4"},
                                            {"noloco", "fp32"}}) {
        SCOPED_TRACE(std::string(cs.algo) + " " + cs.dtype);
        const auto ring = micro_outer_run(cs.algo, cs.dtype, "ring");
        for (int r = 0; r < 3; ++r) {
            EXPECT_EQ(ring.sent[r], ring.reported[r]) << "replica " << r;
            EXPECT_TRUE(torch::equal(ring.global[r], ring.global[0])) << "replica " << r;
            for (int64_t h : ring.hops[r]) EXPECT_EQ(h, 4);
        }
        const auto mesh = micro_outer_run(cs.algo, cs.dtype, "mesh");
        const double dist = (ring.global[0] - mesh.global[0]).abs().max().item<double>();
        std::printf("%s %s: ring vs mesh after the rounds: largest |Δθ| %.3g; bytes per replica %llu vs %llu\n",
                    cs.algo, cs.dtype, dist, static_cast<unsigned long long>(ring.sent[0]),
                    static_cast<unsigned long long>(mesh.sent[0]));
        EXPECT_LT(ring.sent[0], mesh.sent[0]);
        EXPECT_LT(dist, std::string(cs.dtype) == "fp32" ? 1e-5 : 0.05);
    }
}

// DiLoCo's fp32 ring over 3 replicas: bytes per round = the ring's schedule over the P parameters
// plus the guard's opening, exactly; over 2 replicas the ring's result is the mesh's to the bit.
TEST(RingTopology, DiLoCoRingBytesPerRoundAndTwoReplicasEqualTheMesh) {
    auto t = testing_support::synthetic_trainer(testing_support::micro_run(53, 6), 0, 1);
    int64_t P = 0;
    for (auto& p : t.model()->parameters()) P += p.numel();
    const auto ring = micro_outer_run("diloco", "fp32", "ring");
    for (int r = 0; r < 3; ++r) EXPECT_EQ(ring.sent[r], 2 * (ring_sent_bytes_dense(P, 4, 3, r) + 2 * 8)) << r;
    const auto ring2 = micro_outer_run("diloco", "fp32", "ring", 2), mesh2 = micro_outer_run("diloco", "fp32", "mesh", 2);
    EXPECT_TRUE(torch::equal(ring2.global[0], mesh2.global[0]));
    EXPECT_EQ(ring2.sent[0], mesh2.sent[0] + 2 * 8);  // R = 2: P·4 either way, plus the opening's norm
}

// The defaults: DiLoCo and Streaming DiLoCo run the ring, NoLoCo the mesh; a config built in code
// with outer.topology empty resolves the same way.
TEST(RingTopology, DefaultsFollowTheAlgorithm) {
    auto c = testing_support::micro_run(53, 6);
    for (auto [algo, topo] : std::vector<std::pair<std::string, Topology>>{{"diloco", Topology::kRing},
                                                                          {"streaming_diloco", Topology::kRing},
                                                                          {"noloco", Topology::kMesh},
                                                                          {"sparseloco", Topology::kMesh},
                                                                          {"demo", Topology::kMesh}}) {
        c.outer.algorithm = algo;
        EXPECT_EQ(topology_of(c), topo) << algo;
    }
    const auto by_default = micro_outer_run("diloco", "fp32", "");
    const auto ring = micro_outer_run("diloco", "fp32", "ring");
    EXPECT_EQ(by_default.global_hash, ring.global_hash);
}

}  // namespace
}  // namespace tw
