// The executor's order (core/pipeline_program.h): what a stage node of a pipeline replica receives,
// computes and sends in one iteration, by hand for GPipe and 1F1B, with NoLoCo routes, and AD2's
// frozen-table messages.
#include <gtest/gtest.h>

#include <string>

#include "core/pipeline_program.h"
#include "core/routing.h"

namespace tw {
namespace {

RunConfig two_stages(const char* schedule, int64_t m) {
    RunConfig c;
    c.outer.algorithm = "sparseloco";
    c.outer.replicas = 2;
    c.cluster.stages = 2;
    c.pipeline.micro_batches = m;
    c.pipeline.schedule = schedule;
    return c;
}

// "F0 >a1.1" style: receive (<), compute (F/B/S for the optimizer step), send (>), with the payload
// (a activations, g gradient, n norm, t table) and the peer replica.stage.
std::string text(const std::vector<StageEvent>& events) {
    std::string out;
    for (auto& e : events) {
        if (!out.empty()) out += ' ';
        if (e.kind == StageEventKind::kCompute) {
            out += e.optimizer ? "S" : (e.op.kind == PipeOpKind::kForward ? "F" : "B") + std::to_string(e.op.micro_batch);
            continue;
        }
        out += e.kind == StageEventKind::kRecv ? '<' : '>';
        out += "?agnt"[static_cast<int>(e.payload)];
        out += std::to_string(e.peer_replica) + "." + std::to_string(e.peer_stage);
    }
    return out;
}

TEST(PipelineProgram, GPipeAndOneFOneBOrdersByHand) {
    auto g = two_stages("gpipe", 2);
    EXPECT_EQ(text(stage_iteration(g, 1, 0, 0)), "F0 >a1.1 F1 >a1.1 <g1.1 B1 <g1.1 B0 >n1.1 <n1.1 S");
    EXPECT_EQ(text(stage_iteration(g, 1, 1, 0)), "<a1.0 F0 <a1.0 F1 B1 >g1.0 B0 >g1.0 >n1.0 <n1.0 S");
    auto f = two_stages("1f1b", 2);
    // Stage 0 warms up with min(S−1−s, m) = 1 forward, then one forward / one backward.
    EXPECT_EQ(text(stage_iteration(f, 0, 0, 0)), "F0 >a0.1 F1 >a0.1 <g0.1 B0 <g0.1 B1 >n0.1 <n0.1 S");
    EXPECT_EQ(text(stage_iteration(f, 0, 1, 0)), "<a0.0 F0 B0 >g0.0 <a0.0 F1 B1 >g0.0 >n0.0 <n0.0 S");
}

TEST(PipelineProgram, RoutedMicroBatchesFollowTheSeededPermutation) {
    auto c = two_stages("gpipe", 1);
    c.pipeline.routing = "random";
    c.outer.replicas = 4;
    for (int64_t it = 0; it < 6; ++it)
        for (int r = 0; r < 4; ++r) {
            const int to = routing_permutation(static_cast<uint64_t>(c.run.seed), it, 0, 0, 4)[static_cast<size_t>(r)];
            const int from = routing_source(static_cast<uint64_t>(c.run.seed), it, 0, 0, 4, r);
            auto first = stage_iteration(c, r, 0, it), second = stage_iteration(c, r, 1, it);
            EXPECT_EQ(first[1].peer_replica, to);     // F0 then its activations go to replica `to`
            EXPECT_EQ(second[0].peer_replica, from);  // stage 1 receives from the replica routed to it
            EXPECT_EQ(first[2].peer_replica, to);     // the gradient comes back the same way
        }
}

TEST(PipelineProgram, FrozenTableMessagesOnlyWhereAd2ConstrainsStageZero) {
    auto c = two_stages("1f1b", 2);
    c.cluster.stages = 3;
    c.pipeline.rank = 8;
    c.pipeline.replicas = 1;  // replica 1 is the pipeline, replica 0 a full replica
    EXPECT_EQ(text(frozen_table_events(c, 1, 0)), ">t1.1 >t1.2");
    EXPECT_EQ(text(frozen_table_events(c, 1, 2)), "<t1.0");
    EXPECT_TRUE(frozen_table_events(c, 0, 0).empty());  // a full replica's node sends no table
    EXPECT_FALSE(frozen_table_at_start(c));              // SparseLoCo replays its rounds instead
    c.outer.algorithm = "diloco";
    EXPECT_TRUE(frozen_table_at_start(c));
    c.pipeline.adaptations = {"ad1"};
    EXPECT_TRUE(frozen_table_events(c, 1, 0).empty());
    c.pipeline.adaptations = {"ad2"};
    c.pipeline.rank = 0;  // dense: no T_fixed to keep
    EXPECT_TRUE(frozen_table_events(c, 1, 0).empty());
}

}  // namespace
}  // namespace tw
