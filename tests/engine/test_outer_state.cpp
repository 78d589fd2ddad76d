// The outer algorithms' state (engine/algo/outer.h save_state / load_state), its bytes
// (engine/algo/outer_state_io.h) and the recovery message (engine/worker/recovery.h): every
// algorithm's state after real rounds survives the round trip bit for bit; a newcomer gets what it
// needs and starts its own state (SparseLoCo's error feedback, DeMo's momentum) at zero; a round
// rolled back to its snapshot and redone gives the same bits as one that never failed; hostile
// bytes are named errors.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <zmq.hpp>

#include "core/algorithm.h"
#include "engine/algo/outer_state_io.h"
#include "engine/algo/registry.h"
#include "engine/worker/recovery.h"
#include "remote/zmq_collective.h"
#include "tests/engine/micro_run.h"
#include "tests/engine/replica_threads.h"

namespace tw {
namespace {

using testing_support::micro_run;
using testing_support::param_names;
using testing_support::synthetic_trainer;

bool same(const OuterState& a, const OuterState& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].first != b[i].first || !torch::equal(a[i].second, b[i].second)) return false;
    return true;
}

// Two replicas on threads, `rounds` rounds of H = 2 steps of the algorithm named by c; returns
// both replicas' trainers and algorithms.
struct Ran {
    std::unique_ptr<Trainer> trainer;
    std::unique_ptr<OuterAlgorithm> algo;
};
std::vector<Ran> run_rounds(const RunConfig& c, int rounds, const std::string& tag) {
    const int R = 2;
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps{"inproc://state-" + tag + "-0", "inproc://state-" + tag + "-1"};
    std::vector<Ran> out(R);
    auto errors = testing_support::on_threads(R, [&](int r) -> std::string {
        auto mesh = ZmqCollective::create(ctx, eps, r);
        if (!mesh) return mesh.message();
        out[r].trainer = std::make_unique<Trainer>(
            c, WindowLoader(testing_support::synthetic_tokens(), {{0, 30000}}, 16, 4, 1, r, R),
            WindowLoader(testing_support::synthetic_tokens(), {{0, 30000}}, 16, 4, 2));
        auto& t = *out[r].trainer;
        auto algo = make_outer_algorithm(c, t.model()->parameters(), param_names(t), r, R);
        if (!algo) return algo.message();
        for (int64_t s = 1; s <= rounds * c.outer.inner_steps; ++s) {
            t.step();
            auto rep = (*algo)->after_step(s, **mesh, 0);
            if (!rep) return rep.message();
        }
        out[r].algo = std::move(*algo);
        return "";
    });
    testing_support::expect_no_errors(errors);
    return out;
}

RunConfig config_for(const char* name) {
    RunConfig c = micro_run(56, 8);
    c.outer.algorithm = name;
    c.outer.replicas = 2;
    c.outer.inner_steps = 2;
    c.outer.fragments = 2;
    c.outer.overlap_steps = 0;
    c.outer.topology = "mesh";
    c.outer.demo_chunk = 8;
    c.outer.demo_topk = 4;
    c.outer.topk_chunk = 8;
    c.outer.topk_k = 4;
    return c;
}

TEST(OuterState, EveryAlgorithmRoundTripsThroughBytes) {
    for (const char* name : {"diloco", "sparseloco", "streaming_diloco", "noloco", "demo"}) {
        SCOPED_TRACE(name);
        RunConfig c = config_for(name);
        if (std::string(name) == "streaming_diloco") {  // H/F = 2 with τ = 1: a fragment result is queued at the end
            c.outer.inner_steps = 4;
            c.outer.overlap_steps = 1;
        }
        auto ran = run_rounds(c, 2, name);
        ASSERT_TRUE(ran[0].algo);
        const OuterState s = ran[0].algo->save_state();
        ASSERT_FALSE(s.empty());
        const auto bytes = encode_outer_state(s);
        auto back = decode_outer_state(bytes.data(), bytes.size());
        ASSERT_TRUE(back) << back.message();
        EXPECT_TRUE(same(s, *back));
        // What a joiner receives stays within three fp32 copies of the model plus the 1 MiB the
        // mesh allows for names and headers (core/model_size.h largest_mesh_message_bytes).
        RecoveryState rs;
        rs.outer = donor_state(*ran[0].algo, ran[0].trainer->model()->parameters());
        const int64_t p4 = ran[0].trainer->model()->num_parameters() * 4;
        EXPECT_LE(encode_recovery(rs).size(), static_cast<size_t>(3 * p4 + (1 << 20)));
        // A fresh algorithm over fresh weights takes the state and then saves the same bits.
        auto t = synthetic_trainer(c, 1, 2);
        auto fresh = make_outer_algorithm(c, t.model()->parameters(), param_names(t), 1, 2);
        ASSERT_TRUE(fresh) << fresh.message();
        ASSERT_TRUE((*fresh)->load_state(*back));
        EXPECT_TRUE(same((*fresh)->save_state(), s));
        // Another model's state is refused, naming the entry.
        OuterState wrong = s;
        wrong[0].second = torch::zeros({3});
        Status st = (*fresh)->load_state(wrong);
        EXPECT_FALSE(st);
        EXPECT_NE(st.message().find(wrong[0].first), std::string::npos) << st.message();
    }
}

TEST(OuterState, ANewcomerStartsItsOwnStateAtZero) {
    for (const char* name : {"sparseloco", "demo", "diloco"}) {
        SCOPED_TRACE(name);
        RunConfig c = config_for(name);
        auto ran = run_rounds(c, 2, std::string("new-") + name);
        auto& donor = *ran[0].algo;
        const OuterState sent = donor_state(donor, ran[0].trainer->model()->parameters());
        for (auto& [n, t] : sent) EXPECT_FALSE(donor.private_state(n)) << n;
        auto t = synthetic_trainer(c, 1, 2);
        auto joiner = make_outer_algorithm(c, t.model()->parameters(), param_names(t), 1, 2);
        ASSERT_TRUE(joiner);
        auto live = t.model()->parameters();
        ASSERT_TRUE(apply_donor_state(**joiner, live, sent));
        // The global weights are the donor's, bit for bit; the private state is zero.
        const auto g0 = donor.eval_params(), g1 = (*joiner)->eval_params();
        for (size_t i = 0; i < g0.size(); ++i) {
            EXPECT_TRUE(torch::equal(g0[i], g1[i]));
            EXPECT_TRUE(torch::equal(live[i], g0[i])) << "the live weights start from the global ones";
        }
        for (auto& [n, v] : (*joiner)->save_state())
            if ((*joiner)->private_state(n)) {
                EXPECT_EQ(v.abs().sum().item<double>(), 0.0) << n;
            }
    }
}

TEST(OuterState, ARolledBackRoundRedoneGivesTheSameBits) {
    // SparseLoCo changes its error feedback before the exchange: the snapshot must undo that.
    RunConfig c = config_for("sparseloco");
    auto a = run_rounds(c, 3, "redo-a");
    auto b = run_rounds(c, 3, "redo-b");
    EXPECT_TRUE(same(a[0].algo->save_state(), b[0].algo->save_state())) << "same seed, same bits";
    // Snapshot b's replica 0, spoil its state as a half-done round would, roll back: a's state again.
    const OuterState snap = b[0].algo->save_state();
    OuterState spoiled = snap;
    for (auto& [n, t] : spoiled) t = t + 1;
    ASSERT_TRUE(b[0].algo->load_state(spoiled));
    ASSERT_TRUE(b[0].algo->load_state(snap));
    EXPECT_TRUE(same(a[0].algo->save_state(), b[0].algo->save_state()));
}

TEST(OuterState, HostileBytesAreNamedErrors) {
    OuterState s{{"global.0", torch::ones({2, 3})}, {"pending.0.meta", torch::tensor({1, 7}, torch::kLong)}};
    auto bytes = encode_outer_state(s);
    for (size_t cut : {size_t{3}, size_t{9}, bytes.size() - 1}) {
        auto r = decode_outer_state(bytes.data(), cut);
        EXPECT_FALSE(r) << cut;
    }
    auto extra = bytes;
    extra.push_back(0);
    auto r = decode_outer_state(extra.data(), extra.size());
    ASSERT_FALSE(r);
    EXPECT_NE(r.message().find("bytes after the last entry"), std::string::npos) << r.message();
    auto huge = bytes;
    huge[8 + 2 + 8 + 1] = 200;  // entry 0's dimension count (after magic, count, name, dtype)
    r = decode_outer_state(huge.data(), huge.size());
    ASSERT_FALSE(r);
    EXPECT_NE(r.message().find("global.0"), std::string::npos) << r.message();
    RecoveryState rs;
    rs.step = 40;
    rs.rounds = 4;
    rs.clock_s = 12.5;
    rs.members = {0, 2};
    rs.lost = {1};
    rs.outer = s;
    auto msg = encode_recovery(rs);
    auto back = decode_recovery(msg);
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->step, 40);
    EXPECT_EQ(back->members, (std::vector<int>{0, 2}));
    EXPECT_EQ(back->lost, (std::vector<int>{1}));
    EXPECT_TRUE(same(back->outer, s));
    EXPECT_EQ(back->slot, -1);
    msg.resize(20);
    EXPECT_FALSE(decode_recovery(msg));
    EXPECT_FALSE(is_recovery_message({1, 2, 3, 4, 5}));
}

// A spare's message names the place it takes and who holds every place; an impossible place is
// refused by name.
TEST(OuterState, RecoveryCarriesThePlaceASpareTakes) {
    RecoveryState rs;
    rs.step = 20;
    rs.members = {0, 1};
    rs.slot = 2;
    rs.holders = {0, 1, 3};
    rs.outer = {{"global.0", torch::ones({2})}};
    auto back = decode_recovery(encode_recovery(rs));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->slot, 2);
    EXPECT_EQ(back->holders, (std::vector<int>{0, 1, 3}));
    rs.slot = 3;  // beyond the three places
    auto bad = decode_recovery(encode_recovery(rs));
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.message().find("place 3 is not one of the 3 replicas"), std::string::npos) << bad.message();
}

}  // namespace
}  // namespace tw
