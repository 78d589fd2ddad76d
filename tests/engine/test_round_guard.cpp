// Hardening of the outer rounds against hostile or faulty peers: the state hash, the round
// agreement (Collective::agree after every round: a member that averaged something else is named)
// and the aggregation guard (outer.guard_ratio: one replica's ×100 or sign-flipped ×100 update is
// scaled down to ratio × the others' median norm; healthy runs are untouched, bit for bit).
// Replicas are threads over real ZmqCollectives on inproc://.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <zmq.hpp>

#include "engine/algo/aggregation_guard.h"
#include "engine/algo/outer.h"
#include "engine/algo/state_hash.h"
#include "engine/model/llama.h"
#include "engine/train/trainer.h"
#include "remote/zmq_collective.h"
#include "tests/engine/micro_run.h"
#include "tests/engine/replica_threads.h"

namespace tw {
namespace {

constexpr int kOuter = static_cast<int>(LinkClass::kOuterSync);

struct Mesh {
    std::shared_ptr<zmq::context_t> ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps;
    Mesh(const std::string& name, int R) {
        for (int r = 0; r < R; ++r) eps.push_back("inproc://" + name + "-" + std::to_string(r));
    }
    std::unique_ptr<ZmqCollective> member(int r) { return ZmqCollective::create(ctx, eps, r, 20000).value(); }
};

using testing_support::expect_no_errors;
using testing_support::on_threads;
Trainer make(const RunConfig& c, int replica, int n) { return testing_support::synthetic_trainer(c, replica, n); }
std::vector<std::string> names_of(Trainer& t) { return testing_support::param_names(t); }
torch::Tensor flat(const std::vector<torch::Tensor>& ts) { return testing_support::flatten_copy(ts); }

// `algo` may name a topology after a dash ("diloco-mesh"); otherwise the algorithm's default.
RunConfig outer_cfg(const std::string& algo_topology, int R, int64_t H) {
    auto c = testing_support::micro_run(56, 100);
    const size_t dash = algo_topology.find('-');
    const std::string algo = algo_topology.substr(0, dash);
    if (dash != std::string::npos) c.outer.topology = algo_topology.substr(dash + 1);
    c.outer.algorithm = algo;
    c.outer.replicas = R;
    c.outer.inner_steps = H;
    if (algo == "sparseloco") c.outer.topk_chunk = 8, c.outer.topk_k = 4;
    if (algo == "streaming_diloco") c.outer.fragments = 1, c.outer.dtype = "int8";
    if (algo == "noloco") c.outer.group_size = R;  // one group: the attacker is in it every round
    return c;
}

// ---------------------------------------------------------------------------------------------
// State hash
// ---------------------------------------------------------------------------------------------

TEST(StateHash, DeterministicAndSensitiveToEveryBitAndToTheSplitIntoTensors) {
    auto a = torch::randn({37}), b = torch::randn({5, 3});  // 37·4 bytes: a tail after the 32-byte blocks
    const uint64_t h = state_hash({a, b});
    EXPECT_EQ(h, state_hash({a.clone(), b.clone()}));
    EXPECT_NE(h, state_hash({b, a}));
    // The same 52 floats split differently.
    auto all = torch::cat({a, b.reshape({-1})});
    EXPECT_NE(h, state_hash({all}));
    EXPECT_NE(h, state_hash({all.narrow(0, 0, 36), all.narrow(0, 36, 16)}));
    // One flipped bit anywhere (each position of the last float too) changes it.
    for (int64_t i : {int64_t{0}, int64_t{7}, int64_t{8}, int64_t{31}, int64_t{36}}) {
        auto c = a.clone();
        int32_t bits;
        std::memcpy(&bits, c.data_ptr<float>() + i, 4);
        bits ^= 1;
        std::memcpy(c.data_ptr<float>() + i, &bits, 4);
        EXPECT_NE(h, state_hash({c, b})) << "bit 0 of float " << i;
    }
    // -0.0 and +0.0 differ: members must hold the same bits.
    EXPECT_NE(state_hash({torch::zeros({4})}), state_hash({-torch::zeros({4})}));
    // The raw word hash: every tail length is covered and chains.
    std::vector<uint8_t> bytes(71);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 + 1);
    for (size_t n = 1; n <= bytes.size(); ++n) {
        const uint64_t x = hash_words(bytes.data(), n);
        bytes[n - 1] ^= 0x80;
        EXPECT_NE(x, hash_words(bytes.data(), n)) << n << " bytes";
        bytes[n - 1] ^= 0x80;
    }
}

// ---------------------------------------------------------------------------------------------
// The guard's rule
// ---------------------------------------------------------------------------------------------

TEST(AggregationGuard, LowerMedianOfTheOthersIsolatesOneAttackerEvenAmongTwo) {
    int clipped = -1;
    // Two replicas: each is judged against the other; only the ×100 one is scaled, to 4 × 1.0.
    auto s = norm_clip_scales({1.0, 100.0}, 4.0, NormReference::kLowerMedianOfOthers, &clipped);
    EXPECT_EQ(clipped, 1);
    EXPECT_EQ(s[0], 1.0f);
    EXPECT_FLOAT_EQ(s[1] * 100.0f, 4.0f);
    // Four replicas, two attackers: each attacker's others are {h, h, a}, lower median h.
    s = norm_clip_scales({1.0, 1.2, 300.0, 50.0}, 4.0, NormReference::kLowerMedianOfOthers, &clipped);
    EXPECT_EQ(clipped, 2);
    EXPECT_EQ(s[0], 1.0f);
    EXPECT_EQ(s[1], 1.0f);
    EXPECT_FLOAT_EQ(s[2] * 300.0f, 4.8f);  // 4 × 1.2
    EXPECT_FLOAT_EQ(s[3] * 50.0f, 4.8f);
    // Healthy spread (within 4× of each other) and a lone contribution: nothing scaled.
    s = norm_clip_scales({1.0, 3.9, 2.0}, 4.0, NormReference::kLowerMedianOfOthers, &clipped);
    EXPECT_EQ(clipped, 0);
    s = norm_clip_scales({7.0}, 4.0, NormReference::kLowerMedianOfOthers, &clipped);
    EXPECT_EQ(clipped, 0);
    // SparseLoCo's clip_median: the median of all, the mean of the middle two for an even count.
    s = norm_clip_scales({1.0, 2.0, 4.0, 8.0}, 1.0, NormReference::kMedianOfAll, &clipped);
    EXPECT_EQ(clipped, 2);
    EXPECT_FLOAT_EQ(s[2], 3.0f / 4.0f);
    EXPECT_FLOAT_EQ(s[3], 3.0f / 8.0f);
}

// ---------------------------------------------------------------------------------------------
// The guard in every outer algorithm: 4 replicas, replica 3 poisons its update by a factor k
// ---------------------------------------------------------------------------------------------

struct GuardRun {
    std::vector<torch::Tensor> global_round1;  // replica 0's global (φ for NoLoCo) after round 1
    std::vector<torch::Tensor> global_final;
    std::vector<std::vector<int>> clipped;     // [replica][round]
    std::vector<double> delta_norms;           // ‖ref − θ_r‖ of every replica before round 1 (unpoisoned)
    double val = NAN;                          // replica 0's global model's validation loss at the end
};

// R = 4 replicas, H = 2, 3 rounds; replica 3 replaces its live weights by ref + k·(θ − ref) before
// every round (ref: what its update is taken against, the global weights or NoLoCo's φ), so the
// update it sends is k times its honest one. k = 1 is the clean run.
GuardRun guard_run(const std::string& algo, double k, double guard_ratio) {
    const int R = 4, H = 2, rounds = 3;
    auto c = outer_cfg(algo, R, H);
    c.outer.guard_ratio = guard_ratio;
    static int n = 0;
    Mesh mesh("guard-" + algo + "-" + std::to_string(n++), R);
    GuardRun out;
    out.clipped.resize(R);
    out.delta_norms.resize(R);
    expect_no_errors(on_threads(R, [&](int r) -> std::string {
        auto coll = mesh.member(r);
        auto t = make(c, r, R);
        auto made = make_outer_algorithm(c, t.model()->parameters(), names_of(t), r, R);
        if (!made) return made.message();
        auto& a = **made;
        for (int64_t s = 1; s <= H * rounds; ++s) {
            (void)t.step();
            if (s % H == 0) {
                torch::NoGradGuard no_grad;
                auto live = t.model()->parameters();
                auto ref = a.eval_params();
                if (s == H) out.delta_norms[r] = (flat(ref) - flat(live)).norm().item<double>();
                if (r == R - 1 && k != 1.0)
                    for (size_t i = 0; i < live.size(); ++i) live[i].copy_(ref[i] + k * (live[i] - ref[i]));
            }
            auto rep = a.after_step(s, *coll, 0.0);
            if (!rep) return rep.message();
            if (!rep->synced) continue;
            out.clipped[r].push_back(rep->guard_clipped);
            if (auto h = agree_on_round(a, *coll); !h) return h.message();  // all still hold the same
            if (r == 0 && s == H)
                for (auto& g : a.eval_params()) out.global_round1.push_back(g.detach().clone());
        }
        if (r == 0) {
            for (auto& g : a.eval_params()) out.global_final.push_back(g.detach().clone());
            GlobalWeightsSwap swap;
            swap.add(t.model()->parameters(), a.eval_params());
            out.val = t.evaluate();
        }
        return "";
    }));
    return out;
}

double distance(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
    return (flat(a) - flat(b)).norm().item<double>();
}

bool bit_equal(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
    return torch::equal(flat(a), flat(b));
}

class Guard : public ::testing::TestWithParam<std::string> {};

TEST_P(Guard, ScaledOrSignFlippedReplicaIsBoundedAndHealthyRunsAreUntouched) {
    const std::string algo = GetParam();
    const double ratio = 4.0;
    const GuardRun clean = guard_run(algo, 1.0, ratio), clean_off = guard_run(algo, 1.0, 0.0);
    // Healthy replicas: the guard never triggers, and the run is the unguarded one to the last bit.
    for (auto& per_replica : clean.clipped)
        for (int x : per_replica) EXPECT_EQ(x, 0);
    EXPECT_TRUE(bit_equal(clean.global_final, clean_off.global_final));
    EXPECT_EQ(clean.val, clean_off.val);
    // The healthy updates are within a factor 2 of each other here (so the guard's margin is real).
    const double lo = *std::min_element(clean.delta_norms.begin(), clean.delta_norms.end());
    const double hi = *std::max_element(clean.delta_norms.begin(), clean.delta_norms.end());
    EXPECT_LT(hi, 2 * lo);
    const double moved = distance(clean.global_round1, clean_off.global_round1) +
                         std::abs(clean.val - clean_off.val);  // 0: same run
    EXPECT_EQ(moved, 0.0);

    for (double k : {100.0, -100.0}) {
        SCOPED_TRACE(algo + ", attacker's factor " + std::to_string(k));
        const GuardRun on = guard_run(algo, k, ratio), off = guard_run(algo, k, 0.0);
        // Every replica scaled exactly one contribution every round (the attacker's), none unguarded.
        for (int r = 0; r < 4; ++r) {
            ASSERT_EQ(on.clipped[r].size(), 3u);
            for (int x : on.clipped[r]) EXPECT_EQ(x, 1) << "replica " << r;
            for (int x : off.clipped[r]) EXPECT_EQ(x, 0) << "replica " << r;
        }
        // Round 1 starts from the same weights in all runs, and each algorithm's first step is
        // linear in the mean update: the unguarded poison moves it by |k − 1|·‖u_a‖/R (times the
        // outer step's gain), the guarded one by at most (ratio·m + ‖u_a‖)/R with m the median of
        // the honest norms, within 2× of ‖u_a‖ — so at most (2·ratio + 1)/|k − 1| ≈ 0.09 of it.
        const double d_on = distance(on.global_round1, clean.global_round1);
        const double d_off = distance(off.global_round1, clean.global_round1);
        EXPECT_LT(d_on, (2 * ratio + 1) / (std::abs(k) - 1) * d_off) << d_on << " vs " << d_off;
        // After 3 rounds the guarded run's validation loss is within 0.05 of the clean run's (observed:
        // at most 0.012); the unguarded one is worse by more than that and by far more than the
        // guarded one (observed: +0.07 for SparseLoCo, whose 2-bit values blunt the poison, to +13).
        std::printf("%s k=%+.0f: val clean %.4f, guarded %.4f, unguarded %.4f; round-1 drift %.3g vs %.3g\n",
                    algo.c_str(), k, clean.val, on.val, off.val, d_on, d_off);
        EXPECT_LT(std::abs(on.val - clean.val), 0.05);
        EXPECT_GT(off.val - clean.val, 0.05);
        EXPECT_GT(off.val - clean.val, 4 * std::abs(on.val - clean.val));
    }
}

// Each algorithm with its default topology (DiLoCo and Streaming DiLoCo: the ring, where the norms
// are self-reported; the attacker here reports its true norm), and the other one where it has two.
INSTANTIATE_TEST_SUITE_P(EveryOuterAlgorithm, Guard,
                         ::testing::Values("diloco", "sparseloco", "streaming_diloco", "noloco", "diloco-mesh",
                                           "streaming_diloco-mesh", "noloco-ring"));

// DiLoCo fp32, round 1, by hand: the outer step is η·(1+μ)·Δ̄ (the momentum buffer starts at Δ̄), so
// the guarded global differs from the clean one by exactly η·(1+μ)·(s·k − 1)·Δ_a/R, s = the guard's
// factor ratio·m/(|k|·‖Δ_a‖), m = the lower median of the three honest norms.
TEST(Guard, DiLoCoRoundOneMatchesTheHandComputedBound) {
    const double ratio = 4.0, k = 100.0, R = 4;
    const GuardRun clean = guard_run("diloco", 1.0, ratio), on = guard_run("diloco", k, ratio);
    auto honest = std::vector<double>(clean.delta_norms.begin(), clean.delta_norms.end() - 1);
    std::sort(honest.begin(), honest.end());
    const double m = honest[1], na = clean.delta_norms[3];
    const double s = ratio * m / (k * na);
    const auto c = outer_cfg("diloco", 4, 2);
    const double expected = c.outer.lr * (1 + c.outer.momentum) * std::abs(s * k - 1) * na / R;
    EXPECT_NEAR(distance(on.global_round1, clean.global_round1), expected, 1e-3 * expected);
}

// A norm bound cannot see a pure sign flip (same norm): nothing is scaled and the damage is the
// plain mean's, Δ̄ = (Σ honest − Δ_a)/R — stated here so the limit is pinned, not assumed.
TEST(Guard, APureSignFlipKeepsItsNormAndIsNotScaled) {
    const GuardRun flipped = guard_run("diloco", -1.0, 4.0), unguarded = guard_run("diloco", -1.0, 0.0);
    for (auto& per_replica : flipped.clipped)
        for (int x : per_replica) EXPECT_EQ(x, 0);
    EXPECT_TRUE(bit_equal(flipped.global_final, unguarded.global_final));
}

// ---------------------------------------------------------------------------------------------
// Round agreement
// ---------------------------------------------------------------------------------------------

// The mesh as one member sees it, with one peer's payload replaced on arrival: a forged payload
// (or a sender that equivocated) reaching this member only. Everything else is the real mesh.
class ForgedArrival : public Collective {
public:
    ForgedArrival(Collective& real, int forged_rank) : real_(real), forged_(forged_rank) {}
    int rank() const override { return real_.rank(); }
    int size() const override { return real_.size(); }
    Result<std::vector<std::vector<uint8_t>>> all_gather(const std::vector<uint8_t>& mine, LinkClass link, double clock,
                                                         std::vector<double>* clocks) override {
        auto all = real_.all_gather(mine, link, clock, clocks);
        if (all) {
            auto& p = (*all)[static_cast<size_t>(forged_)];
            float v;
            std::memcpy(&v, p.data(), 4);
            v += 1e-3f;  // a small, finite, plausible change
            std::memcpy(p.data(), &v, 4);
        }
        return all;
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
    Result<std::vector<uint8_t>> recv(int p, double* c) override { return real_.recv(p, c); }
    const ByteCounters& counters() const override { return real_.counters(); }
    double real_exchange_s() const override { return real_.real_exchange_s(); }

private:
    Collective& real_;
    int forged_;
};

// One DiLoCo round among R members where `victim` averages a forged copy of member 2's payload;
// returns every member's error of agree_on_round ("" = agreed) and the byte counters before/after.
// Over the mesh, whose all-gather hands every member every payload (the forgery's way in).
std::vector<std::string> forged_round(int R, int victim, const std::string& name) {
    auto c = outer_cfg("diloco", R, 2);
    c.outer.topology = "mesh";
    Mesh mesh(name, R);
    return on_threads(R, [&](int r) -> std::string {
        auto coll = mesh.member(r);
        ForgedArrival forged(*coll, R - 1);
        Collective& use = r == victim ? static_cast<Collective&>(forged) : static_cast<Collective&>(*coll);
        auto t = make(c, r, R);
        auto a = make_outer_algorithm(c, t.model()->parameters(), names_of(t), r, R);
        if (!a) return "setup: " + a.message();
        for (int64_t s = 1; s <= 2; ++s) {
            (void)t.step();
            auto rep = (*a)->after_step(s, use, 0.0);
            if (!rep) return "round: " + rep.message();
        }
        auto h = agree_on_round(**a, use);
        return h ? "" : h.message();
    });
}

TEST(RoundAgreement, AMemberThatAveragedAForgedPayloadIsNamedByEveryone) {
    const auto errors = forged_round(3, 1, "forged3");
    for (int r = 0; r < 3; ++r) {
        SCOPED_TRACE("member " + std::to_string(r) + ": " + errors[static_cast<size_t>(r)]);
        ASSERT_NE(errors[static_cast<size_t>(r)], "");
        EXPECT_NE(errors[static_cast<size_t>(r)].find("round hash mismatch"), std::string::npos);
        // The majority {0, 2} holds the true average: member 1 is the one named, and only it.
        EXPECT_NE(errors[static_cast<size_t>(r)].find("mesh member 1 "), std::string::npos);
        EXPECT_EQ(errors[static_cast<size_t>(r)].find("mesh member 0 "), std::string::npos);
        EXPECT_EQ(errors[static_cast<size_t>(r)].find("mesh member 2 "), std::string::npos);
    }
    // Without the forgery the same round agrees (so the mismatch above is the forgery's doing).
    for (auto& e : forged_round(3, -1, "forged3-none")) EXPECT_EQ(e, "");
}

TEST(RoundAgreement, WithTwoMembersEachNamesTheOther) {
    const auto errors = forged_round(2, 0, "forged2");
    ASSERT_NE(errors[0], "");
    ASSERT_NE(errors[1], "");
    EXPECT_NE(errors[0].find("mesh member 1 "), std::string::npos) << errors[0];
    EXPECT_NE(errors[1].find("mesh member 0 "), std::string::npos) << errors[1];
}

// Equal states agree at no payload cost: agree sends nothing counted, and a run's final counters are
// those of the same run without agreement, to the byte and message. Every algorithm, NoLoCo in groups
// of two (each group agrees on its own mean) and Streaming DiLoCo with an overlap (its queued mean is
// part of the state) included. (Received counters may move during an agree — a faster peer's next
// payload can arrive meanwhile — so only the sent ones are compared per call.)
TEST(RoundAgreement, EqualStatesAgreeForEveryAlgorithmWithoutPayloadBytes) {
    for (const std::string algo : {"diloco", "sparseloco", "streaming_diloco", "noloco"}) {
        SCOPED_TRACE(algo);
        const int R = 4, H = 4;
        auto c = outer_cfg(algo, R, H);
        if (algo == "noloco") c.outer.group_size = 2;
        if (algo == "streaming_diloco") c.outer.fragments = 2, c.outer.overlap_steps = 1;
        ByteCounters final_counters[2][4];
        int agreed_rounds[4] = {};
        for (int with_agree = 0; with_agree < 2; ++with_agree) {
            Mesh mesh("agree-" + algo + std::to_string(with_agree), R);
            expect_no_errors(on_threads(R, [&](int r) -> std::string {
                auto coll = mesh.member(r);
                auto t = make(c, r, R);
                auto a = make_outer_algorithm(c, t.model()->parameters(), names_of(t), r, R);
                if (!a) return a.message();
                for (int64_t s = 1; s <= 2 * H; ++s) {
                    (void)t.step();
                    auto rep = (*a)->after_step(s, *coll, 0.0);
                    if (!rep) return rep.message();
                    if (!rep->synced || !with_agree) continue;
                    const ByteCounters before = coll->counters();
                    auto h = agree_on_round(**a, *coll);
                    if (!h) return h.message();
                    const ByteCounters& after = coll->counters();
                    if (std::memcmp(before.sent_bytes, after.sent_bytes, sizeof before.sent_bytes) != 0 ||
                        std::memcmp(before.sent_msgs, after.sent_msgs, sizeof before.sent_msgs) != 0)
                        return "agree moved the sent counters";
                    ++agreed_rounds[r];
                }
                // Every member has finished its rounds here; wait for the peers' last payloads to be
                // counted before reading the counters (the mesh counts on arrival).
                if (auto b = coll->all_gather({}, LinkClass::kIntraReplica); !b) return b.message();
                final_counters[with_agree][r] = coll->counters();
                return "";
            }));
        }
        for (int r = 0; r < R; ++r) {
            EXPECT_EQ(agreed_rounds[r], algo == "streaming_diloco" ? 4 : 2);
            EXPECT_GT(final_counters[1][r].sent_bytes[kOuter], 0u);
            EXPECT_EQ(std::memcmp(&final_counters[0][r], &final_counters[1][r], sizeof(ByteCounters)), 0)
                << "replica " << r << ": sent " << final_counters[0][r].sent_bytes[kOuter] << " vs "
                << final_counters[1][r].sent_bytes[kOuter] << ", received " << final_counters[0][r].recv_bytes[kOuter]
                << " vs " << final_counters[1][r].recv_bytes[kOuter];
        }
    }
}

// A member whose own state drifted (a flipped bit in one weight after the round) is named.
TEST(RoundAgreement, ACorruptedLocalStateIsNamed) {
    const int R = 3;
    auto c = outer_cfg("sparseloco", R, 2);
    Mesh mesh("corrupt", R);
    const auto errors = on_threads(R, [&](int r) -> std::string {
        auto coll = mesh.member(r);
        auto t = make(c, r, R);
        auto a = make_outer_algorithm(c, t.model()->parameters(), names_of(t), r, R);
        if (!a) return a.message();
        for (int64_t s = 1; s <= 2; ++s) {
            (void)t.step();
            if (auto rep = (*a)->after_step(s, *coll, 0.0); !rep) return rep.message();
        }
        if (r == 2) {
            auto g = (*a)->eval_params()[1];
            int32_t bits;
            std::memcpy(&bits, g.data_ptr<float>(), 4);
            bits ^= 1;
            std::memcpy(g.data_ptr<float>(), &bits, 4);
        }
        auto h = agree_on_round(**a, *coll);
        return h ? "" : h.message();
    });
    for (auto& e : errors) EXPECT_NE(e.find("mesh member 2 "), std::string::npos) << e;
}

}  // namespace
}  // namespace tw
