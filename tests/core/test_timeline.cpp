// The simulated clock (core/sim_clock.h) and re-timing by replay (core/timeline.h) on hand-computed
// cases: the round, overlap and group rules of full replicas, a pipeline's messages and bubbles,
// traces built from stored records, refusals, and slower links never giving earlier clocks.
#include <gtest/gtest.h>

#include "core/metric_names.h"
#include "core/sim_clock.h"
#include "core/timeline.h"

namespace tw {
namespace {

// Every link 8 bit/s with 1 s latency: a byte costs 1 s, a message 1 s more.
NetworkProfile slow_net() {
    const LinkSpec l{8.0, 1.0};
    return NetworkProfile{"test", l, l, l};
}

RunConfig replicas_cfg(const char* algorithm, int64_t replicas) {
    RunConfig c;
    c.outer.algorithm = algorithm;
    c.outer.replicas = replicas;
    return c;
}

TEST(SimClock, MessagesQueueOnTheUplinkWhileComputeGoesOn) {
    SimClock c;
    c.compute(1.0);
    const LinkSpec link{8.0, 1.0};
    EXPECT_DOUBLE_EQ(c.send(link, 2), 4.0);   // leaves at 1, 2 s on the wire, 1 s latency
    EXPECT_DOUBLE_EQ(c.send(link, 1), 5.0);   // waits for the uplink until 3, 1 s on the wire
    EXPECT_DOUBLE_EQ(c.now_s(), 1.0);          // sending does not block compute
    c.receive(0.5);                            // already here: no wait
    EXPECT_DOUBLE_EQ(c.exposed_s(), 0.0);
    c.receive(2.5);
    EXPECT_DOUBLE_EQ(c.now_s(), 2.5);
    EXPECT_DOUBLE_EQ(c.exposed_s(), 1.5);
    EXPECT_DOUBLE_EQ(c.sync_exposed_s(), 0.0);  // a message is not an outer round
}

TEST(SimClock, RoundRulesAndDueResults) {
    SimClock c;
    c.compute(2.0);
    // Starts at the slowest member (5), 3 hops: 2 extra latencies + 1 latency + 8·4/8 s.
    const double end = round_end_s({2.0, 5.0}, LinkSpec{8.0, 1.0}, 4, 3);
    EXPECT_DOUBLE_EQ(end, 5.0 + 2.0 + 1.0 + 4.0);
    EXPECT_DOUBLE_EQ(round_comm_s(LinkSpec{8.0, 1.0}, 4, 3), 7.0);
    EXPECT_DOUBLE_EQ(c.wait_for_round(end), 10.0);
    EXPECT_DOUBLE_EQ(c.wait_for_round(1.0), 0.0);  // a round that ended earlier costs nothing
    c.defer(5, 20.0);
    c.settle_due(4);
    EXPECT_DOUBLE_EQ(c.now_s(), 12.0);
    c.settle_due(5);
    EXPECT_DOUBLE_EQ(c.now_s(), 20.0);
    EXPECT_DOUBLE_EQ(c.exposed_s(), 18.0);
    EXPECT_DOUBLE_EQ(c.sync_exposed_s(), 10.0);  // the due wait is counted as exposed only
    // A replica's other node: max(own end, the leader's clock as fp32) + the weights' transfer.
    EXPECT_DOUBLE_EQ(c.follow_leader(3.0, 4.5f, LinkSpec{8.0, 1.0}, 2), 4.5 + 3.0);
}

TEST(Timeline, RoundsWaitForTheSlowestReplicaThenPayTheTransfer) {
    // Two replicas, a round after step 2; replica 1 computes slower.
    std::vector<TraceNode> n(2);
    n[0].trace.compute_s = {{1, 1.0}, {2, 1.0}, {3, 0.5}};
    n[1].trace.compute_s = {{1, 2.0}, {2, 2.0}, {3, 0.5}};
    n[1].replica = 1;
    for (auto& x : n) x.trace.round_bytes[2] = 4;
    auto t = retime(replicas_cfg("diloco", 2), n, slow_net());
    ASSERT_TRUE(t) << t.message();
    // Round starts at max(2, 4) = 4 and costs 1 + 8·4/8 = 5 s; then 0.5 s more compute.
    EXPECT_DOUBLE_EQ(t->sim_s[0], 9.5);
    EXPECT_DOUBLE_EQ(t->sim_s[1], 9.5);
    EXPECT_DOUBLE_EQ(t->exposed_s[0], 7.0);  // waited 2 s, transferred 5 s
    EXPECT_DOUBLE_EQ(t->exposed_s[1], 5.0);
    EXPECT_DOUBLE_EQ(t->compute_s[1], 4.5);
    EXPECT_DOUBLE_EQ(t->clock_at[0].at(2), 9.0);
}

// A ring round (outer.topology = "ring"): each node replays its own recorded bytes — which differ
// with an uneven chunk split — in its recorded 2·(R−1) hops, after the slowest member.
TEST(Timeline, RingRoundsPayTheirHopsAndEachNodesOwnBytes) {
    std::vector<TraceNode> n(3);
    const uint64_t bytes[] = {14, 13, 13};  // core/ring_schedule.h: P = 10 over 3, 1 byte per element
    for (int i = 0; i < 3; ++i) {
        n[i].replica = i;
        n[i].trace.compute_s = {{1, 1.0 + i}, {2, 1.0}};
        n[i].trace.round_bytes[1] = bytes[i];
        n[i].trace.round_hops[1] = 4;
    }
    auto t = retime(replicas_cfg("diloco", 3), n, slow_net());
    ASSERT_TRUE(t) << t.message();
    // Start at the slowest (3), 4 latencies of 1 s, then 1 s per byte: 21 s and 20 s; 1 s more compute.
    EXPECT_DOUBLE_EQ(t->clock_at[0].at(1), 3.0 + 4.0 + 14.0);
    EXPECT_DOUBLE_EQ(t->clock_at[1].at(1), 3.0 + 4.0 + 13.0);
    EXPECT_DOUBLE_EQ(t->sim_s[2], 3.0 + 4.0 + 13.0 + 1.0);
    // The live rule gives the same clock (one copy of the arithmetic).
    EXPECT_DOUBLE_EQ(round_end_s({1.0, 2.0, 3.0}, slow_net().outer, 14, 4), t->clock_at[0].at(1));
}

// A hub round (outer.topology = "hub", docs/topologies.md): upload the payload p, then download the
// R − 1 others' — recorded as round.bytes = R·p in 2 hops — after the slowest member's upload.
TEST(Timeline, HubRoundsPayUploadThenDownloadAfterTheSlowestMember) {
    std::vector<TraceNode> n(3);
    const uint64_t p = 2;
    for (int i = 0; i < 3; ++i) {
        n[i].replica = i;
        n[i].trace.compute_s = {{1, 1.0 + i}, {2, 1.0}};
        n[i].trace.round_bytes[1] = 3 * p;
        n[i].trace.round_hops[1] = 2;
    }
    auto t = retime(replicas_cfg("sparseloco", 3), n, slow_net());
    ASSERT_TRUE(t) << t.message();
    // By hand (8 bit/s, 1 s latency): the last upload starts at 3 and is in at 3 + 1 + 2 = 6; the
    // download of 2·p = 4 bytes then takes 1 + 4 s: every member at 11, then 1 s more compute.
    for (int i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(t->clock_at[i].at(1), (3.0 + 1.0 + p) + (1.0 + 2.0 * p)) << i;
    EXPECT_DOUBLE_EQ(t->sim_s[0], 12.0);
    EXPECT_DOUBLE_EQ(round_end_s({1.0, 2.0, 3.0}, slow_net().outer, 3 * p, 2), 11.0);
    EXPECT_DOUBLE_EQ(round_comm_s(slow_net().outer, 3 * p, 2), 8.0);
}

TEST(Timeline, AnOverlappedRoundIsSettledTauStepsLater) {
    // One replica, a round after step 1 costing 1 + 8·4/8 = 5 s, overlapped with τ = 2 steps of 1 s.
    std::vector<TraceNode> n(1);
    n[0].trace.compute_s = {{1, 1.0}, {2, 1.0}, {3, 1.0}, {4, 1.0}};
    n[0].trace.round_bytes[1] = 4;
    n[0].trace.round_overlap[1] = 2;
    auto t = retime(replicas_cfg("streaming_diloco", 1), n, slow_net());
    ASSERT_TRUE(t) << t.message();
    // Round starts at 1, ends at 6; due at step 3 (clock 3) → waits until 6; step 4 ends at 7.
    EXPECT_DOUBLE_EQ(t->clock_at[0][2], 2.0);
    EXPECT_DOUBLE_EQ(t->clock_at[0][3], 6.0);
    EXPECT_DOUBLE_EQ(t->sim_s[0], 7.0);
    EXPECT_DOUBLE_EQ(t->exposed_s[0], 3.0);
    n[0].trace.round_overlap[1] = 0;  // not overlapped: the clock waits at once
    EXPECT_DOUBLE_EQ(retime(replicas_cfg("streaming_diloco", 1), n, slow_net())->clock_at[0][1], 6.0);
}

TEST(Timeline, GroupRoundsWaitOnlyForTheirGroupFoundByTheReplicaColumn) {
    // Replicas 0 and 1 are a group, 2 and 3 another (NoLoCo); replica 3 is slow. The nodes are given
    // out of replica order: the replica column, not the position, places them.
    std::vector<TraceNode> n(4);
    const int replica[] = {2, 0, 3, 1};
    const double compute[] = {1.0, 1.0, 3.0, 1.0};
    for (int i = 0; i < 4; ++i) {
        n[i].replica = replica[i];
        n[i].trace.compute_s[1] = compute[i];
        n[i].trace.round_bytes[1] = 0;
        n[i].trace.round_group[1] = {replica[i] < 2 ? 0b0011u : 0b1100u};
    }
    auto t = retime(replicas_cfg("noloco", 4), n, slow_net());
    ASSERT_TRUE(t) << t.message();
    EXPECT_DOUBLE_EQ(t->sim_s[1], 2.0);  // replica 0: max(1, 1) + 1 s latency
    EXPECT_DOUBLE_EQ(t->sim_s[0], 4.0);  // replica 2: max(1, 3) + 1
}

TEST(Timeline, DdpWaitsForEveryNodeOnTheIntraLinkInsideOneReplica) {
    // DDP with one replica of two nodes: the ring runs on the intra-replica link (10 s latency here).
    RunConfig c = replicas_cfg("ddp", 1);
    c.cluster.nodes_per_replica = 2;
    NetworkProfile net = slow_net();
    net.intra.latency_s = 10.0;
    std::vector<TraceNode> n(2);
    n[1].rank = 1;
    n[0].trace.compute_s[1] = 1.0, n[1].trace.compute_s[1] = 2.0;
    for (auto& x : n) x.trace.round_bytes[1] = 0, x.trace.round_hops[1] = 2;
    auto t = retime(c, n, net);
    ASSERT_TRUE(t) << t.message();
    EXPECT_DOUBLE_EQ(t->sim_s[0], 2.0 + 10.0 + 10.0);  // slowest node, then 2 hops of latency
}

TEST(Timeline, OuterReplicasOfSeveralNodesAreRefusedByName) {
    RunConfig c = replicas_cfg("diloco", 2);
    c.cluster.nodes_per_replica = 2;
    std::vector<TraceNode> n(1);
    n[0].trace.compute_s[1] = 1.0;
    auto t = retime(c, n, slow_net());
    ASSERT_FALSE(t);
    EXPECT_NE(t.message().find("replicas span several nodes under diloco"), std::string::npos) << t.message();
}

// One pipeline replica of 2 stages, one micro-batch, GPipe; every link 8 bit/s + 1 s.
RunConfig pipeline_cfg() {
    RunConfig c = replicas_cfg("none", 1);
    c.cluster.stages = 2;
    c.pipeline.micro_batches = 1;
    c.pipeline.schedule = "gpipe";
    return c;
}

std::vector<TraceNode> pipeline_trace() {
    std::vector<TraceNode> n(2);
    n[0].stage = 0, n[1].stage = 1;
    n[0].name = "replica-0.0", n[1].name = "replica-0.1";
    n[0].trace.compute_s[1] = 3.5, n[1].trace.compute_s[1] = 2.75;
    n[0].trace.segments_s[1] = {1.0, 2.0, 0.5};    // F0, B0, optimizer
    n[1].trace.segments_s[1] = {1.5, 1.0, 0.25};
    n[0].trace.sent_bytes[1] = {2, 8};              // activations, squared norm
    n[1].trace.sent_bytes[1] = {1, 8};              // gradient, squared norm
    return n;
}

TEST(Timeline, APipelineReplaysItsMessagesAndBubbles) {
    auto t = retime(pipeline_cfg(), pipeline_trace(), slow_net());
    ASSERT_TRUE(t) << t.message();
    // Stage 0: F0 ends at 1, activations arrive at 1 + 2 + 1 = 4. Stage 1 waits until 4, F0 and B0
    // end at 6.5, its gradient arrives at 6.5 + 1 + 1 = 8.5 and its norm (queued behind it, 8 s) at
    // 16.5. Stage 0 waits until 8.5, B0 ends at 10.5, its norm arrives at 19.5; it waits for stage
    // 1's norm until 16.5 and steps until 17. Stage 1 waits until 19.5 and steps until 19.75.
    EXPECT_DOUBLE_EQ(t->sim_s[0], 17.0);
    EXPECT_DOUBLE_EQ(t->sim_s[1], 19.75);
    EXPECT_DOUBLE_EQ(t->exposed_s[0], 7.5 + 6.0);
    EXPECT_DOUBLE_EQ(t->exposed_s[1], 4.0 + 13.0);
    EXPECT_DOUBLE_EQ(t->compute_s[1], 2.75);
    EXPECT_DOUBLE_EQ(t->clock_at[1].at(1), 19.75);
}

TEST(Timeline, APipelineTraceThatDoesNotMatchTheScheduleIsRefused) {
    auto n = pipeline_trace();
    n[1].trace.segments_s[1].pop_back();
    auto t = retime(pipeline_cfg(), n, slow_net());
    ASSERT_FALSE(t);
    EXPECT_NE(t.message().find("replica-0.1 at step 1: a compute segment is missing"), std::string::npos) << t.message();
    n = pipeline_trace();
    n[0].trace.segments_s.clear();  // a pipeline run from before stage nodes stored their segments
    t = retime(pipeline_cfg(), n, slow_net());
    ASSERT_FALSE(t);
    EXPECT_NE(t.message().find("pipeline runs recorded before stage nodes stored their clock segments"),
              std::string::npos) << t.message();
}

TEST(Timeline, ASlowerNetworkNeverGivesAnEarlierClock) {
    // The pipeline and a round-synchronised pair, on ever slower links: no clock moves earlier.
    auto pipe = pipeline_trace();
    std::vector<TraceNode> pair(2);
    pair[1].replica = 1;
    for (int s = 1; s <= 6; ++s)
        for (int i = 0; i < 2; ++i) {
            pair[i].trace.compute_s[s] = 0.3 + 0.2 * i + 0.05 * s;
            if (s % 3 == 0) pair[i].trace.round_bytes[s] = 1000 * (i + 1);
        }
    std::vector<double> prev_pipe(2, 0.0), prev_pair(2, 0.0);
    const LinkSpec slower_and_slower[] = {{1e9, 0.0}, {1e9, 0.04}, {1e7, 0.04}, {1e5, 0.04}, {1e3, 0.04}, {8.0, 0.04}};
    for (const LinkSpec& l : slower_and_slower) {
        NetworkProfile net{"x", l, l, l};
        auto a = retime(pipeline_cfg(), pipe, net);
        auto b = retime(replicas_cfg("diloco", 2), pair, net);
        ASSERT_TRUE(a && b);
        for (int i = 0; i < 2; ++i) {
            EXPECT_GE(a->sim_s[i], prev_pipe[i]) << l.bandwidth_bps << " bit/s";
            EXPECT_GE(b->sim_s[i], prev_pair[i]) << l.bandwidth_bps << " bit/s";
        }
        prev_pipe = a->sim_s, prev_pair = b->sim_s;
    }
    // 8 bit/s with 40 ms: as the hand case above, with 0.04 s instead of 1 s per message.
    EXPECT_NEAR(prev_pipe[1], 16.87, 1e-9);
}

// Traces are rebuilt from stored metrics by one function: each trace metric lands in its field with
// its conversion (per-step lists in arrival order), the recorded clocks are kept, anything else is
// left out.
TEST(TraceMetrics, EachTraceMetricLandsInItsFieldAndOthersAreLeftOut) {
    NodeTrace t;
    auto rec = [](const char* name, int64_t step, double v, double sim_s = 0) {
        MetricRecord m;
        m.name = name, m.step = step, m.value = v, m.sim_s = sim_s;
        return m;
    };
    EXPECT_TRUE(add_to_trace(t, rec(metric::kTrainComputeS, 3, 0.25, 1.5)));
    EXPECT_TRUE(add_to_trace(t, rec(metric::kClockComputeS, 3, 0.125)));
    EXPECT_TRUE(add_to_trace(t, rec(metric::kClockComputeS, 3, 0.0625)));
    EXPECT_TRUE(add_to_trace(t, rec(metric::kClockSendBytes, 3, 4096)));
    EXPECT_TRUE(add_to_trace(t, rec(metric::kRoundBytes, 10, 5313024, 7.25)));
    EXPECT_TRUE(add_to_trace(t, rec(metric::kRoundHops, 10, 6)));
    EXPECT_TRUE(add_to_trace(t, rec(metric::kRoundOverlapSteps, 10, 2)));
    EXPECT_TRUE(add_to_trace(t, rec(metric::kRoundGroupMask, 10, 5)));
    EXPECT_TRUE(add_to_trace(t, rec(metric::kRoundGroupMask, 10, 3)));
    EXPECT_FALSE(add_to_trace(t, rec(metric::kRoundCommS, 10, 1.0)));
    EXPECT_FALSE(add_to_trace(t, rec(metric::kTrainLoss, 3, 7.0)));
    EXPECT_EQ(t.compute_s.at(3), 0.25);
    EXPECT_EQ(t.segments_s.at(3), (std::vector<double>{0.125, 0.0625}));
    EXPECT_EQ(t.sent_bytes.at(3), (std::vector<uint64_t>{4096}));
    EXPECT_EQ(t.round_bytes.at(10), 5313024u);
    EXPECT_EQ(t.round_hops.at(10), 6);
    EXPECT_EQ(t.round_overlap.at(10), 2);
    EXPECT_EQ(t.round_group.at(10), (std::vector<uint64_t>{5, 3}));
    EXPECT_EQ(t.recorded_round_s.at(10), 7.25);
    EXPECT_EQ(t.recorded_final_s, 7.25);
    EXPECT_EQ(trace_metric_names().size(), 7u);
}

}  // namespace
}  // namespace tw
