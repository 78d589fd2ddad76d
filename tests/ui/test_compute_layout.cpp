// The workbench's compute logic: the layout editor's per-replica node speeds and
// access links, the compute-model switch, the hardware what-if's re-timing of a finished run's
// compute, and the panels' unit formatting. Hand-computed numbers come from docs/compute_model.md.
#include <gtest/gtest.h>

#include <numeric>

#include "core/compute_model.h"
#include "core/config_io.h"
#include "core/network.h"
#include "core/pipeline_program.h"
#include "core/timeline.h"
#include "ui/logic/hardware_retime.h"
#include "ui/logic/layout_model.h"
#include "ui/logic/replica_settings.h"
#include "ui/logic/units.h"

namespace tw::ui {
namespace {

// docs/compute_model.md: the tiny preset's step (batch 16 × 128 tokens, V 4096, tied head).
constexpr double kTinyStepFlops = 17992306944.0;
constexpr double kCpuHereRate = 210e9 * 0.33;
constexpr double kA100Rate = 312e12 * 0.4;

RunConfig diloco(int64_t replicas) {
    RunConfig c = parse_config("", "<test>").value();
    c.outer.algorithm = "diloco";
    c.outer.replicas = replicas;
    return c;
}

// ---- per-replica settings ----------------------------------------------------------------------

TEST(ReplicaSettings, EmptyListsShowTheDefaultsTheRunWouldUse) {
    RunConfig c = diloco(3);
    EXPECT_EQ(replica_setting(c, ReplicaSetting::kNodeSpeed, 2), 1.0);
    // wan-1g's outer link: 1 Gb/s, 20 ms (core/network.h)
    EXPECT_EQ(replica_setting(c, ReplicaSetting::kUpBps, 0), 1e9);
    EXPECT_EQ(replica_setting(c, ReplicaSetting::kDownBps, 1), 1e9);
    EXPECT_EQ(replica_setting(c, ReplicaSetting::kLatencyS, 2), 0.02);
    c.network.profile = "home-20m";
    const NetworkProfile home = network_profile("home-20m").value();
    EXPECT_EQ(replica_setting(c, ReplicaSetting::kUpBps, 0), home.outer.bandwidth_bps);
    c.network.outer_bandwidth_bps = 1.25e8;  // the outer override is the default too
    c.network.outer_latency_s = 0.005;
    EXPECT_EQ(replica_setting(c, ReplicaSetting::kDownBps, 2), 1.25e8);
    EXPECT_EQ(replica_setting(c, ReplicaSetting::kLatencyS, 0), 0.005);
}

TEST(ReplicaSettings, EditingOneRowFillsTheListWithDefaultsThenSetsThatRow) {
    LayoutModel m;
    RunConfig& c = m.config();
    c.outer.algorithm = "diloco", c.outer.replicas = 3;
    set_replica_setting(c, ReplicaSetting::kUpBps, 1, 2e7);
    EXPECT_EQ(c.network.replica_up_bps, (std::vector<double>{1e9, 2e7, 1e9}));
    EXPECT_TRUE(c.network.replica_down_bps.empty());  // the other lists untouched
    set_replica_setting(c, ReplicaSetting::kUpBps, 3, 5.0);  // no replica 3: ignored
    set_replica_setting(c, ReplicaSetting::kUpBps, -1, 5.0);
    EXPECT_EQ(c.network.replica_up_bps, (std::vector<double>{1e9, 2e7, 1e9}));
    set_replica_setting(c, ReplicaSetting::kLatencyS, 2, 0.04);
    EXPECT_EQ(c.network.replica_latency_s, (std::vector<double>{0.02, 0.02, 0.04}));
    EXPECT_TRUE(m.validate()) << (m.errors().empty() ? "" : m.errors().begin()->first + ": " + m.errors().begin()->second);
    // Written to the keys `thinwire run` reads: the TOML parses back to the same lists and links.
    auto back = parse_config(m.to_toml(), "saved");
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->network.replica_up_bps, c.network.replica_up_bps);
    EXPECT_EQ(back->network.replica_latency_s, c.network.replica_latency_s);
    const NetworkProfile net = network_profile(back->network).value();
    ASSERT_EQ(net.replicas.size(), 3u);
    EXPECT_EQ(net.replicas[1].up_bps, 2e7);
    EXPECT_EQ(net.replicas[1].down_bps, 1e9);  // the missing list takes the outer link's
    EXPECT_EQ(net.replicas[2].latency_s, 0.04);
    clear_replica_setting(c, ReplicaSetting::kUpBps);
    EXPECT_TRUE(c.network.replica_up_bps.empty());
}

TEST(ReplicaSettings, ChangingTheReplicaCountFitsFilledListsOnly) {
    RunConfig c = diloco(3);
    c.compute.model = "flops";
    set_replica_setting(c, ReplicaSetting::kNodeSpeed, 2, 0.5);
    set_replica_setting(c, ReplicaSetting::kDownBps, 0, 3e8);
    c.outer.replicas = 5;
    fit_replica_settings(c);
    EXPECT_EQ(c.compute.node_speed, (std::vector<double>{1, 1, 0.5, 1, 1}));
    EXPECT_EQ(c.network.replica_down_bps, (std::vector<double>{3e8, 1e9, 1e9, 1e9, 1e9}));
    EXPECT_TRUE(c.network.replica_up_bps.empty());
    EXPECT_TRUE(c.network.replica_latency_s.empty());
    c.outer.replicas = 2;
    fit_replica_settings(c);
    EXPECT_EQ(c.compute.node_speed, (std::vector<double>{1, 1}));
    EXPECT_EQ(c.network.replica_down_bps, (std::vector<double>{3e8, 1e9}));
    c.outer.replicas = 0;  // out of range: its own error shows; the lists are kept
    fit_replica_settings(c);
    EXPECT_EQ(c.compute.node_speed.size(), 2u);
}

TEST(ReplicaSettings, ListErrorsLandOnTheirKeysAsThinwireRunReportsThem) {
    LayoutModel m;
    RunConfig& c = m.config();
    c.outer.algorithm = "diloco", c.outer.replicas = 3;
    c.compute.model = "flops";
    c.compute.node_speed = {1.0, 0.5};  // one short
    c.network.replica_latency_s = {0.01, 500, 0.01};  // above the range's 100 s
    EXPECT_FALSE(m.validate());
    EXPECT_NE(m.error("compute.node_speed").find("2 entries for 3 replicas"), std::string::npos)
        << m.error("compute.node_speed");
    EXPECT_NE(m.error("network.replica_latency_s").find("out of range"), std::string::npos)
        << m.error("network.replica_latency_s");
    c.compute.node_speed = {1.0, 0.5, 1.0};
    c.network.replica_latency_s = {0.01, 0.03, 0.01};
    EXPECT_TRUE(m.validate()) << (m.errors().empty() ? "" : m.errors().begin()->second);
    c.network.replica_up_bps = {1e9, 1e9};
    EXPECT_FALSE(m.validate());
    EXPECT_NE(m.error("network.replica_up_bps").find("2 entries for 3 replicas"), std::string::npos)
        << m.error("network.replica_up_bps");
}

TEST(ReplicaSettings, SwitchingToMeasuredResetsTheFlopsOnlyKeys) {
    LayoutModel m;
    RunConfig& c = m.config();
    c.outer.algorithm = "diloco", c.outer.replicas = 2;
    set_compute_model(c, "flops");
    c.compute.hardware = "custom", c.compute.peak_flops = 1e14, c.compute.efficiency = 0.5;
    c.compute.node_speed = {1.0, 0.25};
    EXPECT_TRUE(m.validate()) << (m.errors().empty() ? "" : m.errors().begin()->second);
    // The same keys under measured are refused by `thinwire run`; the editor shows why...
    c.compute.model = "measured";
    EXPECT_FALSE(m.validate());
    EXPECT_NE(m.error("compute.hardware").find("applies only with compute.model"), std::string::npos)
        << m.error("compute.hardware");
    // ...and its switch resets them.
    set_compute_model(c, "measured");
    EXPECT_EQ(c.compute.hardware, "cpu-here");
    EXPECT_EQ(c.compute.peak_flops, 0);
    EXPECT_EQ(c.compute.efficiency, 0);
    EXPECT_TRUE(c.compute.node_speed.empty());
    EXPECT_TRUE(m.validate()) << (m.errors().empty() ? "" : m.errors().begin()->second);
}

TEST(ReplicaSettings, CustomHardwareNeedsItsPeakOnThePeakKey) {
    LayoutModel m;
    RunConfig& c = m.config();
    set_compute_model(c, "flops");
    c.compute.hardware = "custom";
    EXPECT_FALSE(m.validate());
    EXPECT_NE(m.error("compute.peak_flops").find("needs the node's peak FLOP/s"), std::string::npos)
        << m.error("compute.peak_flops");
    EXPECT_EQ(replica_rate_flops(c, 0), 0.0);  // no rate to show yet
    c.compute.peak_flops = 1e14;
    c.compute.efficiency = 0.5;
    EXPECT_TRUE(m.validate());
    EXPECT_EQ(replica_rate_flops(c, 0), 5e13);
}

TEST(ReplicaSettings, RateAndStepPerReplicaFromTheComputeModel) {
    RunConfig c = diloco(2);
    EXPECT_EQ(replica_rate_flops(c, 0), 0.0);  // measured: no modelled rate
    EXPECT_EQ(replica_step_s(c, 0), 0.0);
    set_compute_model(c, "flops");
    EXPECT_DOUBLE_EQ(replica_rate_flops(c, 0), kCpuHereRate);
    // model.vocab_size is unresolved in a layout: the tokenizer's target (data.vocab_size 4096) counts.
    EXPECT_DOUBLE_EQ(replica_step_s(c, 0), kTinyStepFlops / kCpuHereRate);  // 0.2596 s, as `thinwire plan` says
    set_replica_setting(c, ReplicaSetting::kNodeSpeed, 1, 0.5);
    EXPECT_DOUBLE_EQ(replica_rate_flops(c, 1), kCpuHereRate * 0.5);
    EXPECT_DOUBLE_EQ(replica_step_s(c, 1), kTinyStepFlops / (kCpuHereRate * 0.5));
    c.compute.hardware = "a100";
    EXPECT_DOUBLE_EQ(replica_step_s(c, 0), kTinyStepFlops / kA100Rate);
}

// ---- the hardware what-if ----------------------------------------------------------------------

// A finished run's nodes as re-timing loads them: `steps` steps of `step_s` compute each, a round
// of `round_bytes` every `H` steps.
std::vector<TraceNode> full_replica_traces(int64_t replicas, int64_t steps, int64_t H, double step_s,
                                           uint64_t round_bytes) {
    std::vector<TraceNode> nodes;
    for (int r = 0; r < replicas; ++r) {
        TraceNode n;
        n.name = "replica-" + std::to_string(r);
        n.replica = r;
        for (int64_t s = 1; s <= steps; ++s) {
            n.trace.compute_s[s] = step_s * (1 + 0.1 * r);  // measured seconds differ per node
            if (s % H == 0) n.trace.round_bytes[s] = round_bytes;
        }
        nodes.push_back(std::move(n));
    }
    return nodes;
}

TEST(HardwareWhatIf, AFlopsRunOnCpuHereRetimedToA100ScalesComputeByTheRateRatio) {
    RunConfig c = diloco(2);
    c.outer.inner_steps = 5, c.train.steps = 10;
    c.compute.model = "flops";  // cpu-here at its 0.33
    const auto nodes = full_replica_traces(2, 10, 5, 0.2596, 1000);
    auto out = retime_compute(c, nodes, {"a100", 0, 0});
    ASSERT_TRUE(out) << out.message();
    for (size_t i = 0; i < nodes.size(); ++i)
        for (auto& [step, s] : nodes[i].trace.compute_s)
            EXPECT_DOUBLE_EQ(out->at(i).trace.compute_s.at(step), s * (kCpuHereRate / kA100Rate)) << step;
    // Rounds and bytes are the run's.
    EXPECT_EQ(out->at(1).trace.round_bytes, nodes[1].trace.round_bytes);
    // An efficiency of the what-if's own, and the same hardware back: factor 1 exactly.
    auto eff = retime_compute(c, nodes, {"a100", 0.2, 0});
    ASSERT_TRUE(eff);
    EXPECT_DOUBLE_EQ(eff->at(0).trace.compute_s.at(3), 0.2596 * kCpuHereRate / (312e12 * 0.2));
    auto same = retime_compute(c, nodes, {"cpu-here", 0, 0});
    ASSERT_TRUE(same);
    EXPECT_EQ(same->at(1).trace.compute_s, nodes[1].trace.compute_s);
}

TEST(HardwareWhatIf, NodeSpeedsOfAFlopsRunAreKept) {
    RunConfig c = diloco(2);
    c.compute.model = "flops";
    c.compute.node_speed = {1.0, 0.5};
    const auto nodes = full_replica_traces(2, 4, 2, 1.0, 10);
    auto out = retime_compute(c, nodes, {"h100", 0, 0});
    ASSERT_TRUE(out) << out.message();
    // Replica 1 computed at half cpu-here's rate; on H100s it is at half an H100's.
    EXPECT_DOUBLE_EQ(out->at(1).trace.compute_s.at(1), 1.1 * (kCpuHereRate * 0.5) / (989.4e12 * 0.4 * 0.5));
    EXPECT_DOUBLE_EQ(out->at(0).trace.compute_s.at(1), 1.0 * kCpuHereRate / (989.4e12 * 0.4));
}

TEST(HardwareWhatIf, AMeasuredRunGetsTheComputeModelsStepForEveryStep) {
    RunConfig c = diloco(2);
    c.model.vocab_size = 4096;  // resolved, as every stored run's config is
    const auto nodes = full_replica_traces(2, 6, 3, 0.31, 10);
    auto out = retime_compute(c, nodes, {"a100", 0, 0});
    ASSERT_TRUE(out) << out.message();
    for (auto& n : *out)
        for (auto& [step, s] : n.trace.compute_s) EXPECT_DOUBLE_EQ(s, kTinyStepFlops / kA100Rate) << n.name << " " << step;
    auto custom = retime_compute(c, nodes, {"custom", 0, 2e12});  // custom's efficiency defaults to 1
    ASSERT_TRUE(custom) << custom.message();
    EXPECT_DOUBLE_EQ(custom->at(0).trace.compute_s.at(1), kTinyStepFlops / 2e12);
    // Without a resolved vocabulary the FLOPs are unknown: refused, not guessed.
    c.model.vocab_size = 0;
    auto refused = retime_compute(c, nodes, {"a100", 0, 0});
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.message().find("vocab_size"), std::string::npos);
}

TEST(HardwareWhatIf, TheReplayOfAOneNodeRunIsItsNewCompute) {
    RunConfig c = parse_config("", "<test>").value();  // one trainer, no rounds
    c.model.vocab_size = 4096;
    const auto nodes = full_replica_traces(1, 8, 1000, 0.3, 0);
    auto out = retime_compute(c, nodes, {"rtx4090", 0, 0});
    ASSERT_TRUE(out);
    auto t = retime(c, *out, network_profile("wan-1g").value());
    ASSERT_TRUE(t) << t.message();
    double sum = 0;
    for (int i = 0; i < 8; ++i) sum += kTinyStepFlops / (165.2e12 * 0.4);
    EXPECT_DOUBLE_EQ(t->sim_s[0], sum);
    EXPECT_DOUBLE_EQ(t->compute_s[0], sum);
}

TEST(HardwareWhatIf, AMeasuredPipelineRunsSegmentsFollowTheStageSchedule) {
    RunConfig c = diloco(1);
    c.outer.algorithm = "none";
    c.cluster.stages = 2, c.model.tie_embeddings = false;
    c.pipeline.micro_batches = 2;
    c.model.vocab_size = 4096;
    ASSERT_TRUE(validate_config(c)) << validate_config(c).message();
    std::vector<TraceNode> nodes;
    std::vector<std::vector<StageEvent>> compute(2);
    for (int s = 0; s < 2; ++s) {
        TraceNode n;
        n.name = "r0.s" + std::to_string(s);
        n.replica = 0, n.stage = s;
        for (const StageEvent& e : stage_iteration(c, 0, s, 0))
            if (e.kind == StageEventKind::kCompute) compute[s].push_back(e);
        for (int64_t step = 1; step <= 3; ++step) {
            n.trace.segments_s[step] = std::vector<double>(compute[s].size(), 0.123);
            n.trace.compute_s[step] = 0.123 * double(compute[s].size());
        }
        nodes.push_back(std::move(n));
    }
    ASSERT_EQ(compute[0].size(), 5u);  // 2 forwards, 2 backwards, the optimizer step
    auto out = retime_compute(c, nodes, {"a100", 0, 0});
    ASSERT_TRUE(out) << out.message();
    const double tokens = double(c.train.batch_size / 2 * c.model.seq_len);
    for (int s = 0; s < 2; ++s) {
        const PassFlops p = stage_flops(c.model, s, 2);
        const double optim = kAdamWPerParam * double(stage_parameters(c.model, s, 2)) / kA100Rate;
        const auto& segs = out->at(s).trace.segments_s.at(2);
        ASSERT_EQ(segs.size(), compute[s].size());
        double total = 0;
        for (size_t i = 0; i < segs.size(); ++i) {
            const StageEvent& e = compute[s][i];
            const double want = e.optimizer ? optim
                                : e.op.kind == PipeOpKind::kBackward ? p.backward * tokens / kA100Rate
                                                                     : p.forward * tokens / kA100Rate;
            EXPECT_DOUBLE_EQ(segs[i], want) << "stage " << s << " segment " << i;
            total += segs[i];
        }
        EXPECT_DOUBLE_EQ(out->at(s).trace.compute_s.at(2), total);
    }
    // A trace that does not match the schedule is refused, naming the node and step.
    nodes[1].trace.segments_s[2].pop_back();
    auto bad = retime_compute(c, nodes, {"a100", 0, 0});
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.message().find("r0.s1 at step 2"), std::string::npos) << bad.message();
}

TEST(HardwareWhatIf, RunsWhoseTrainingDependsOnTheRateAreRefusedByName) {
    const auto nodes = full_replica_traces(2, 4, 2, 0.1, 10);
    RunConfig budget = diloco(2);
    budget.compute.model = "flops";
    budget.outer.round_time_s = 1.0;
    auto r = retime_compute(budget, nodes, {"a100", 0, 0});
    ASSERT_FALSE(r);
    EXPECT_NE(r.message().find("outer.round_time_s"), std::string::npos);
    RunConfig skip = diloco(1);
    skip.outer.algorithm = "none";
    skip.skippipe.stages = 2;
    r = retime_compute(skip, nodes, {"a100", 0, 0});
    ASSERT_FALSE(r);
    EXPECT_NE(r.message().find("SkipPipe"), std::string::npos);
    RunConfig hdee = diloco(1);
    hdee.hdee.domains = {"a", "b"};
    hdee.model.vocab_size = 4096;
    r = retime_compute(hdee, nodes, {"a100", 0, 0});
    ASSERT_FALSE(r);
    EXPECT_NE(r.message().find("HDEE"), std::string::npos);
}

TEST(HardwareWhatIf, TheWhatIfsComputeIsCheckedLikeALayouts) {
    RunConfig c = diloco(2);
    c.model.vocab_size = 4096;
    const auto nodes = full_replica_traces(2, 2, 2, 0.1, 10);
    auto r = retime_compute(c, nodes, {"tpu9", 0, 0});
    ASSERT_FALSE(r);
    EXPECT_NE(r.message().find("compute.hardware \"tpu9\" is unknown"), std::string::npos) << r.message();
    r = retime_compute(c, nodes, {"custom", 0, 0});
    ASSERT_FALSE(r);
    EXPECT_NE(r.message().find("needs the node's peak FLOP/s"), std::string::npos) << r.message();
    EXPECT_TRUE(check_hardware_what_if(c, {"h100", 0.5, 0}));
    // The sentence the panel shows names the basis.
    EXPECT_NE(describe_compute_what_if(c, {"a100", 0, 0}).find("recorded under measured"), std::string::npos);
    c.compute.model = "flops";
    EXPECT_NE(describe_compute_what_if(c, {"a100", 0, 0}).find("recorded under flops on cpu-here"), std::string::npos);
}

// ---- units --------------------------------------------------------------------------------------

TEST(Units, RatesBytesAndSecondsReadAsThePanelsShowThem) {
    EXPECT_EQ(rate_text(210e9 * 0.33), "69.3 GFLOP/s");
    EXPECT_EQ(rate_text(124.8e12), "124.8 TFLOP/s");
    EXPECT_EQ(rate_text(2.5e15), "2.5 PFLOP/s");
    EXPECT_EQ(rate_text(5e18), "5000 PFLOP/s");  // the largest unit caps
    EXPECT_EQ(rate_text(12), "12 FLOP/s");
    EXPECT_EQ(bytes_text(512), "512 B");
    EXPECT_EQ(bytes_text(780294168), "780 MB");
    EXPECT_EQ(bytes_text(7802941680), "7.8 GB");
    EXPECT_EQ(seconds_text(437.62328676923), "437.6 s");
    EXPECT_EQ(seconds_text(4346.21), "4346 s");
    EXPECT_EQ(seconds_text(3 * 3600.0), "1.08e+04 s (3 h)");
    EXPECT_EQ(seconds_text(273223), "2.732e+05 s (3.16 days)");
}

}  // namespace
}  // namespace tw::ui
