// Tests of core/memory_estimate.h against counts made by hand for a model small enough to write
// out, and of core/machine_memory.h's parsers on fixed /proc and cgroup texts.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/machine_memory.h"
#include "core/memory_estimate.h"

namespace tw {
namespace {

// d 8, one layer, 2 heads, d_ff 0 → f = ⌈(8·8/3 = 21) / 32⌉·32 = 32, V 16 (tied), T 4, batch 2.
// P = V·d + block + norm_f = 16·8 + (2·8 + 3·8² + 8² + 2·32·8 + 32·8) + 8 = 128 + 1040 + 8 = 1176.
RunConfig hand_sized() {
    RunConfig c;
    c.model.vocab_size = 16;
    c.model.d_model = 8;
    c.model.n_layer = 1;
    c.model.n_head = 2;
    c.model.d_ff = 0;
    c.model.seq_len = 4;
    c.train.batch_size = 2;
    return c;
}
constexpr int64_t kP = 1176;
// Activations: B·T·(L·(13·d + 3·f + H·T) + 3·V + 2·d) = 2·4·(104 + 96 + 8 + 48 + 16) = 8·272 fp32.
const int64_t kActivations = static_cast<int64_t>(std::ceil(kActivationScale * 4.0 * 8 * 272));

TEST(MemoryEstimate, OneNodeCountsWeightsGradientsAdamWAndActivationsByHand) {
    const NodeMemoryEstimate e = estimate_node_memory(hand_sized());  // outer.algorithm = none
    EXPECT_EQ(e.params, kP);
    EXPECT_EQ(e.weights_bytes, 4 * kP);    // 4704
    EXPECT_EQ(e.gradient_bytes, 4 * kP);   // 4704
    EXPECT_EQ(e.optimizer_bytes, 8 * kP);  // 9408: two fp32 moments
    EXPECT_EQ(e.outer_state_bytes, 0);
    EXPECT_EQ(e.exchange_bytes, 0);
    EXPECT_EQ(e.activation_bytes, kActivations);
    EXPECT_EQ(e.base_bytes, kNodeBaseBytes);
    EXPECT_EQ(e.total_bytes(), 16 * kP + kActivations + kNodeBaseBytes);
}

TEST(MemoryEstimate, ALayoutLeavingTheVocabularyToTheTokenizerIsSizedWithItsVocabulary) {
    RunConfig c = hand_sized();
    c.model.vocab_size = 0;
    c.data.vocab_size = 16;
    EXPECT_EQ(estimate_node_memory(c).params, kP);
    c.data.vocab_size = 64;  // 48 more rows of d = 8
    EXPECT_EQ(estimate_node_memory(c).params, kP + 48 * 8);
}

TEST(MemoryEstimate, OuterAlgorithmsAddTheirCopiesAndTheRoundsPayloads) {
    RunConfig c = hand_sized();
    c.outer.replicas = 4;
    c.outer.algorithm = "diloco";
    // Mesh: every member's fp32 payload (4 × 4·P) and the fp32 mean (4·P); global + momentum (2 × 4·P).
    c.outer.topology = "mesh";
    NodeMemoryEstimate e = estimate_node_memory(c);
    EXPECT_EQ(e.outer_state_bytes, 2 * 4 * kP);       // 9408
    EXPECT_EQ(e.exchange_bytes, 4 * 4 * kP + 4 * kP);  // 23520
    // Ring: its own payload and one in flight.
    c.outer.topology = "ring";
    EXPECT_EQ(estimate_node_memory(c).exchange_bytes, 2 * 4 * kP + 4 * kP);  // 14112
    // bf16 halves the payloads, not the mean.
    c.outer.dtype = "bf16";
    EXPECT_EQ(estimate_node_memory(c).exchange_bytes, 2 * 2 * kP + 4 * kP);  // 9408

    // SparseLoCo, k = 2 of c² = 16: P·(2/16)·14/8 = 257.25 B per member, 4 members on the mesh.
    c = hand_sized();
    c.outer.replicas = 4;
    c.outer.algorithm = "sparseloco";
    c.outer.topk_chunk = 4;
    c.outer.topk_k = 2;
    e = estimate_node_memory(c);
    EXPECT_EQ(e.outer_state_bytes, 2 * 4 * kP);  // global + error feedback
    EXPECT_EQ(e.exchange_bytes, 1029 + 4 * kP);  // ⌈4 · 257.25⌉ + mean

    // Streaming DiLoCo, F = 3, fp4, ring: a fragment of ⌈1176/3⌉ = 392 values, 196 B each payload.
    c = hand_sized();
    c.outer.replicas = 4;
    c.outer.algorithm = "streaming_diloco";
    c.outer.dtype = "fp4";
    c.outer.fragments = 3;
    e = estimate_node_memory(c);
    EXPECT_EQ(e.outer_state_bytes, 2 * 4 * kP);
    EXPECT_EQ(e.exchange_bytes, 2 * 196 + 4 * 392);  // 1960

    // NoLoCo in pairs on the mesh: 2 payloads of [φ | θ − φ] (8·P each) and the mean.
    c = hand_sized();
    c.outer.replicas = 4;
    c.outer.algorithm = "noloco";
    EXPECT_EQ(estimate_node_memory(c).exchange_bytes, 3 * 8 * kP + 4 * kP);  // group of up to 2·2 − 1

    // DDP: one fp32 bucket, nothing held per round.
    c = hand_sized();
    c.outer.replicas = 4;
    c.outer.algorithm = "ddp";
    e = estimate_node_memory(c);
    EXPECT_EQ(e.outer_state_bytes, 4 * kP);
    EXPECT_EQ(e.exchange_bytes, 0);
}

TEST(MemoryEstimate, AMeshNodeHoldsEveryReplicasPayloadSoManyReplicasCostEachNodeMore) {
    RunConfig c = hand_sized();
    c.outer.algorithm = "diloco";
    c.outer.topology = "mesh";
    c.outer.replicas = 2;
    const int64_t two = estimate_node_memory(c).exchange_bytes;
    c.outer.replicas = 1024;
    EXPECT_EQ(estimate_node_memory(c).exchange_bytes - two, 1022 * 4 * kP);
}

TEST(MemoryEstimate, PipelineStageNodesHoldTheirBlocksAndOneEnd) {
    RunConfig c = hand_sized();
    c.model.n_layer = 4;
    c.model.tie_embeddings = false;
    c.outer.algorithm = "diloco";
    c.outer.replicas = 2;
    // The whole untied model: 2·V·d + 4 blocks + norm_f = 256 + 4160 + 8.
    EXPECT_EQ(estimate_node_memory(c).params, 4424);
    // Every replica a pipeline of 2 stages: 2 blocks and one V·d end, + norm_f = 128 + 2080 + 8.
    c.cluster.stages = 2;
    EXPECT_EQ(estimate_node_memory(c).params, 2216);
    // One full replica beside a pipeline: the full replica is the heaviest node.
    c.pipeline.replicas = 1;
    EXPECT_EQ(estimate_node_memory(c).params, 4424);
}

TEST(MemoryEstimate, ChildProcessesAddTheRuntimeThreadsShareTheCoordinatorsAndRemoteNodesAddNothingHere) {
    RunConfig c = hand_sized();
    c.outer.algorithm = "diloco";
    c.outer.replicas = 3;
    const int64_t node = estimate_node_memory(c).total_bytes();
    c.cluster.mode = "local";
    LaunchMemoryEstimate l = estimate_launch_memory(c, 3);
    EXPECT_EQ(l.processes, 3);
    EXPECT_EQ(l.per_node_bytes, node + kProcessBaseBytes);
    EXPECT_EQ(l.total_bytes, 3 * (node + kProcessBaseBytes));
    c.cluster.mode = "threads";
    l = estimate_launch_memory(c, 3);
    EXPECT_EQ(l.processes, 0);
    EXPECT_EQ(l.total_bytes, 3 * node);
    c.cluster.mode = "remote";
    EXPECT_EQ(estimate_launch_memory(c, 3).total_bytes, 0);
}

// The calibration (memory_estimate.cpp) in numbers a person can check: the tiny preset's node with
// the Brown vocabulary, as the quickstart runs it, lies within its measured peak's range.
TEST(MemoryEstimate, TheTinyPresetsLocalNodeIsAFewHundredMiB) {
    RunConfig c;
    c.data.vocab_size = 4096;
    c.train.batch_size = 4;
    c.outer.algorithm = "diloco";
    c.outer.replicas = 4;
    c.cluster.mode = "local";
    const LaunchMemoryEstimate l = estimate_launch_memory(c, 4);
    EXPECT_GT(l.per_node_bytes, 100ll << 20);
    EXPECT_LT(l.per_node_bytes, 1ll << 30);
}

TEST(MachineMemory, MemAvailableIsReadInBytes) {
    const std::string meminfo = "MemTotal:       24683656 kB\nMemFree:        21975000 kB\n"
                                "MemAvailable:   22779372 kB\nBuffers:            1024 kB\n";
    auto a = parse_mem_available(meminfo);
    ASSERT_TRUE(a) << a.message();
    EXPECT_EQ(*a, 22779372ll * 1024);
    EXPECT_FALSE(parse_mem_available("MemTotal: 1 kB\n"));
    EXPECT_NE(parse_mem_available("MemAvailable: lots\n").message().find("MemAvailable: lots"), std::string::npos);
}

TEST(MachineMemory, ACgroupsRoomIsItsLimitLessWhatItUsesBeyondReclaimableFiles) {
    // 1 GiB limit, 512 MiB used of which 128 MiB inactive file pages: 640 MiB of room.
    EXPECT_EQ(cgroup_room("1073741824\n", "536870912\n", "anon 1\ninactive_file 134217728\nactive_file 5\n"),
              640ll << 20);
    EXPECT_EQ(cgroup_room("1073741824\n", "536870912\n", "total_inactive_file 134217728\n"), 640ll << 20);  // v1
    EXPECT_EQ(cgroup_room("1073741824\n", "2147483648\n", ""), 0);  // over its limit: none
    EXPECT_FALSE(cgroup_room("max\n", "536870912\n", ""));           // v2 without a limit
    EXPECT_FALSE(cgroup_room("9223372036854771712\n", "1\n", ""));   // v1 without a limit
    EXPECT_FALSE(cgroup_room("", "", ""));
}

TEST(MachineMemory, TheCgroupPathIsTheV2LineOrTheMemoryControllers) {
    const std::string v1 = "9:name=systemd:/\n4:memory:/process_api/aded\n3:cpuset:/\n0::/\n";
    EXPECT_EQ(cgroup_path(v1, false), "/process_api/aded");
    EXPECT_EQ(cgroup_path(v1, true), "");  // "0::/" is the root
    EXPECT_EQ(cgroup_path("0::/user.slice/session-1.scope\n", true), "/user.slice/session-1.scope");
    EXPECT_EQ(cgroup_path("0::/user.slice/session-1.scope\n", false), "");
    EXPECT_EQ(cgroup_path("5:cpu,memory:/a/\n", false), "/a");
}

TEST(MachineMemory, ThisMachineHasSomeMemoryAvailableAndNoMoreThanItHas) {
    auto m = read_machine_memory();
    ASSERT_TRUE(m) << m.message();
    EXPECT_GT(m->available_bytes, 0);
    EXPECT_GE(m->logical_cpus, 1);
    std::ifstream in("/proc/meminfo");
    std::stringstream text;
    text << in.rdbuf();
    int64_t total_kib = 0;
    std::istringstream lines(text.str());
    std::string key;
    lines >> key >> total_kib;  // MemTotal: N kB comes first
    ASSERT_EQ(key, "MemTotal:");
    EXPECT_LE(m->available_bytes, total_kib * 1024);
}

}  // namespace
}  // namespace tw
