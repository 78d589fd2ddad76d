// The per-stage outer rounds (engine/worker/stage_rounds.h) that full replicas and stage nodes of a
// run with pipeline replicas share. Evidence: DiLoCo is elementwise, so S rounds over the stage
// slices of two full replicas must leave exactly the weights one whole-model round leaves, with
// the same payload bytes in total; and a replica that starts from other weights is named. Among
// survivors: a loss redoes the round, a replica counted out is told, and a replica past
// outer.round_deadline_s is left out of every stage's round (never replica 0).
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <zmq.hpp>

#include "core/layout.h"
#include "engine/algo/registry.h"
#include "engine/worker/stage_rounds.h"
#include "remote/zmq_collective.h"
#include "tests/engine/micro_run.h"
#include "tests/engine/replica_threads.h"

namespace tw {
namespace {

RunConfig two_stage_diloco() {
    RunConfig c = testing_support::micro_run(53, 4);
    c.model.tie_embeddings = false;
    c.outer.algorithm = "diloco";
    c.outer.replicas = 2;
    c.outer.inner_steps = 2;
    c.outer.guard_ratio = 0;
    c.cluster.stages = 2;
    c.pipeline.replicas = 0;  // both replicas full: each holds both stages
    return c;
}

std::vector<std::string> names_of(Trainer& t) {
    std::vector<std::string> n;
    for (auto& p : t.model()->named_parameters()) n.push_back(p.key());
    return n;
}

std::vector<uint8_t> flat(Trainer& t) {
    std::vector<uint8_t> out;
    for (auto& p : t.model()->parameters()) {
        auto c = p.detach().contiguous();
        const auto* b = static_cast<const uint8_t*>(c.data_ptr());
        out.insert(out.end(), b, b + c.numel() * 4);
    }
    return out;
}

TEST(StageRounds, FullReplicasPerStageRoundsEqualOneWholeModelRound) {
    const RunConfig c = two_stage_diloco();
    RunConfig whole = c;
    whole.cluster.stages = 1;
    const int R = 2;
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::vector<uint8_t>> staged(R), single(R);
    std::vector<uint64_t> staged_bytes(R), single_bytes(R);
    std::vector<size_t> hashes(R);
    int64_t n_params = 0;
    testing_support::expect_no_errors(testing_support::on_threads(R, [&](int r) -> std::string {
        // Per-stage rounds over one mesh.
        std::vector<std::string> eps{"inproc://stage-rounds-a0", "inproc://stage-rounds-a1"};
        auto mesh = ZmqCollective::create(ctx, eps, r, 20000).value();
        auto t = testing_support::synthetic_trainer(c, r, R);
        auto rounds = StageRounds::create(c, r, 0, 1, t.model()->parameters(), names_of(t), *mesh, torch::Tensor());
        if (!rounds) return rounds.message();
        if ((*rounds)->slices().size() != 2) return "slices: " + std::to_string((*rounds)->slices().size());
        if (Status st = (*rounds)->check_weights("replica"); !st) return st.message();
        for (int64_t s = 1; s <= 2; ++s) {
            (void)t.step();
            auto rep = (*rounds)->round(s, 0.0);
            if (!rep) return rep.message();
            if (rep->synced != (s == 2)) return "synced at step " + std::to_string(s);
            if (rep->synced) staged_bytes[r] = rep->bytes, hashes[r] = rep->stage_hashes.size();
        }
        staged[r] = flat(t);
        // The same two steps and one whole-model DiLoCo round.
        std::vector<std::string> eps_b{"inproc://stage-rounds-b0", "inproc://stage-rounds-b1"};
        auto mesh_b = ZmqCollective::create(ctx, eps_b, r, 20000).value();
        auto u = testing_support::synthetic_trainer(whole, r, R);
        auto algo = make_outer_algorithm(whole, u.model()->parameters(), names_of(u), r, R);
        if (!algo) return algo.message();
        for (int64_t s = 1; s <= 2; ++s) {
            (void)u.step();
            auto rep = (*algo)->after_step(s, *mesh_b, 0.0);
            if (!rep) return rep.message();
            if (rep->synced) single_bytes[r] = rep->bytes_sent;
        }
        single[r] = flat(u);
        if (r == 0)
            for (auto& p : u.model()->parameters()) n_params += p.numel();
        return "";
    }));
    for (int r = 0; r < R; ++r) {
        EXPECT_EQ(hashes[r], 2u) << "one agreed hash per stage";
        EXPECT_EQ(staged[r], single[r]) << "replica " << r << ": per-stage rounds differ from the whole-model round";
        EXPECT_EQ(staged_bytes[r], single_bytes[r]);
        EXPECT_EQ(staged_bytes[r], static_cast<uint64_t>(n_params) * 4 * (R - 1));  // P·4 bytes to each peer
    }
    EXPECT_EQ(staged[0], staged[1]);
}

TEST(StageRounds, NamesTheStageWhereAReplicaStartsFromOtherWeights) {
    const RunConfig c = two_stage_diloco();
    const int R = 2;
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> errors(R);
    testing_support::on_threads(R, [&](int r) -> std::string {
        std::vector<std::string> eps{"inproc://stage-rounds-c0", "inproc://stage-rounds-c1"};
        auto mesh = ZmqCollective::create(ctx, eps, r, 20000).value();
        auto t = testing_support::synthetic_trainer(c, r, R);
        if (r == 1) {  // the final norm belongs to the last stage
            torch::NoGradGuard no_grad;
            for (auto& p : t.model()->named_parameters())
                if (p.key() == "norm_f") p.value().add_(1e-3);
        }
        auto rounds = StageRounds::create(c, r, 0, 1, t.model()->parameters(), names_of(t), *mesh, torch::Tensor());
        if (!rounds) return errors[r] = rounds.message();
        Status st = (*rounds)->check_weights("replica-" + std::to_string(r));
        return errors[r] = st.is_ok() ? "" : st.message();
    });
    for (int r = 0; r < R; ++r)
        EXPECT_NE(errors[r].find("stage 1: replica"), std::string::npos) << errors[r];
    EXPECT_NE(errors[0].find("starts from other weights than replica-0"), std::string::npos) << errors[0];
}


// Three full replicas of two stages whose rounds go on among survivors; heartbeats every 50 ms.
RunConfig three_survivors() {
    RunConfig c = two_stage_diloco();
    c.outer.replicas = 3;
    c.cluster.heartbeat_timeout_s = 0.5;
    return c;
}

MeshOptions beating(double silence_s) {
    MeshOptions o;
    o.heartbeat_s = 0.05;
    o.silence_timeout_s = silence_s;
    o.timeout_ms = 20000;
    return o;
}

// One replica's synced round: its error, or what it agreed on.
struct RoundOutcome {
    std::string error;
    bool left_out = false;
    StageRoundsReport rep;
    std::vector<uint8_t> weights;
};

RoundOutcome one_round(const RunConfig& c, int r, ZmqCollective& mesh, double start_s = 0.0) {
    RoundOutcome out;
    auto t = testing_support::synthetic_trainer(c, r, static_cast<int>(c.outer.replicas));
    auto rounds = StageRounds::create(c, r, 0, 1, t.model()->parameters(), names_of(t), mesh, torch::Tensor());
    if (!rounds) {
        out.error = rounds.message();
        return out;
    }
    for (int64_t s = 1; s <= 2; ++s) {
        (void)t.step();
        auto rep = (*rounds)->round(s, start_s);
        if (!rep) {
            out.error = rep.message();
            out.left_out = (*rounds)->left_out();
            return out;
        }
        if (rep->synced) out.rep = *rep;
    }
    out.weights = flat(t);
    return out;
}

// The race of a reverted attempt at this: replica 0 knows replica 2 is lost when the round starts
// (it found it in an earlier wait), replica 1 does not and waits for it until its silence ends the
// wait. Replica 0 must not take replica 1's give-up for an error of its own: both redo the round
// between the two of them and agree.
TEST(StageRounds, AHolderThatKnewOfALossFirstRedoesTheRoundWithTheOthers) {
    const RunConfig c = three_survivors();
    ASSERT_TRUE(pipeline_survives_loss(c));
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps{"inproc://stage-surv-a0", "inproc://stage-surv-a1", "inproc://stage-surv-a2"};
    MeshOptions frozen;  // replica 2: bound, but it never beats nor sends (its process is gone)
    frozen.timeout_ms = 20000;
    auto dead = ZmqCollective::create(ctx, eps, 2, frozen).value();
    std::vector<std::unique_ptr<ZmqCollective>> mesh;
    for (int r = 0; r < 2; ++r) mesh.push_back(ZmqCollective::create(ctx, eps, r, beating(0.5)).value());
    mesh[0]->declare_lost(2);
    std::vector<RoundOutcome> out(2);
    testing_support::on_threads(2, [&](int r) -> std::string {
        out[r] = one_round(c, r, *mesh[r]);
        return out[r].error;
    });
    for (int r = 0; r < 2; ++r) {
        ASSERT_EQ(out[r].error, "") << "replica " << r;
        EXPECT_EQ(out[r].rep.member_masks, (std::vector<uint64_t>{3, 3})) << "replica " << r << ": among 0 and 1";
        EXPECT_GE(out[r].rep.attempts, 2) << "replica " << r << ": the first attempt of stage 0 was given up";
        EXPECT_EQ(out[r].rep.present, 2);
        ASSERT_FALSE(out[r].rep.lost.empty()) << "replica " << r;
        EXPECT_NE(out[r].rep.lost.front().find("the round is redone among replicas 0, 1"), std::string::npos)
            << out[r].rep.lost.front();
    }
    EXPECT_EQ(out[0].rep.stage_hashes, out[1].rep.stage_hashes);
    EXPECT_EQ(out[0].weights, out[1].weights);
    (void)dead;
}

// Replica 0 counts replica 2 lost (say, silent a moment too long); replica 2 is alive and so is
// replica 1, which knows nothing of it. Replica 2 is told it is out and ends its round with an
// error that says so (its node then leaves); replicas 0 and 1 meet on the two of them and agree.
TEST(StageRounds, AReplicaAPeerCountsLostIsToldItIsOutAndTheOthersFinish) {
    const RunConfig c = three_survivors();
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps{"inproc://stage-surv-b0", "inproc://stage-surv-b1", "inproc://stage-surv-b2"};
    std::vector<std::unique_ptr<ZmqCollective>> mesh;
    for (int r = 0; r < 3; ++r) mesh.push_back(ZmqCollective::create(ctx, eps, r, beating(5)).value());
    mesh[0]->declare_lost(2);
    std::vector<RoundOutcome> out(3);
    testing_support::on_threads(3, [&](int r) -> std::string {
        out[r] = one_round(c, r, *mesh[r]);
        return "";
    });
    EXPECT_NE(out[2].error.find("this node's replica 2 is out of the rounds"), std::string::npos) << out[2].error;
    EXPECT_TRUE(out[2].left_out);
    EXPECT_TRUE(mesh[2]->counted_out());
    for (int r = 0; r < 2; ++r) {
        ASSERT_EQ(out[r].error, "") << "replica " << r;
        EXPECT_EQ(out[r].rep.member_masks, (std::vector<uint64_t>{3, 3})) << "replica " << r;
        EXPECT_FALSE(mesh[r]->counted_out());
    }
    EXPECT_EQ(out[0].rep.stage_hashes, out[1].rep.stage_hashes);
    EXPECT_EQ(out[0].weights, out[1].weights);
}

// outer.round_deadline_s over three full replicas whose stage-0 nodes (each the whole replica)
// arrive at `clocks`: the rounds of both stages among those on time, a late replica's report
// naming how late it was and holding no stage hash (it ran no round), and replica 0 never left
// out however late it is (it evaluates and hands the state over).
std::vector<RoundOutcome> rounds_arriving_at(const std::vector<double>& clocks, const std::string& tag) {
    RunConfig c = three_survivors();
    c.outer.round_deadline_s = 1.0;
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps;
    for (int r = 0; r < 3; ++r) eps.push_back("inproc://stage-late-" + tag + std::to_string(r));
    std::vector<std::unique_ptr<ZmqCollective>> mesh;
    for (int r = 0; r < 3; ++r) mesh.push_back(ZmqCollective::create(ctx, eps, r, beating(5)).value());
    std::vector<RoundOutcome> out(3);
    testing_support::on_threads(3, [&](int r) -> std::string {
        out[r] = one_round(c, r, *mesh[r], clocks[static_cast<size_t>(r)]);
        return out[r].error;
    });
    return out;
}

TEST(StageRounds, AReplicaPastTheDeadlineIsLeftOutOfEveryStagesRound) {
    auto out = rounds_arriving_at({0.0, 0.5, 3.0}, "a");
    for (int r = 0; r < 3; ++r) ASSERT_EQ(out[r].error, "") << "replica " << r;
    EXPECT_DOUBLE_EQ(out[2].rep.late_s, 3.0);  // 3 s after the first arrival (replica 0's, at 0)
    EXPECT_TRUE(out[2].rep.stage_hashes.empty());
    EXPECT_EQ(out[2].rep.late, (std::vector<int>{2}));
    for (int r = 0; r < 2; ++r) {
        EXPECT_EQ(out[r].rep.late_s, -1) << "replica " << r;
        EXPECT_EQ(out[r].rep.late, (std::vector<int>{2})) << "replica " << r;
        EXPECT_EQ(out[r].rep.member_masks, (std::vector<uint64_t>{3, 3})) << "replica " << r << ": both stages among 0 and 1";
        EXPECT_EQ(out[r].rep.stage_hashes.size(), 2u);
    }
    EXPECT_EQ(out[0].rep.stage_hashes, out[1].rep.stage_hashes);
    EXPECT_EQ(out[0].weights, out[1].weights);
    EXPECT_NE(out[2].weights, out[0].weights);  // its own pseudo-gradient stays out; the state comes after
}

TEST(StageRounds, ReplicaZeroIsNeverLeftOutByTheDeadline) {
    // Replica 0 arrives 3 s after the first; replicas 1 and 2 within the deadline of the first.
    auto out = rounds_arriving_at({3.0, 0.0, 0.5}, "b");
    for (int r = 0; r < 3; ++r) {
        ASSERT_EQ(out[r].error, "") << "replica " << r;
        EXPECT_EQ(out[r].rep.late_s, -1) << "replica " << r;
        EXPECT_TRUE(out[r].rep.late.empty()) << "replica " << r;
        EXPECT_EQ(out[r].rep.member_masks, (std::vector<uint64_t>{7, 7})) << "replica " << r;
    }
    EXPECT_EQ(out[0].weights, out[1].weights);
    EXPECT_EQ(out[0].weights, out[2].weights);
}

}  // namespace
}  // namespace tw
