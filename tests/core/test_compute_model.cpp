// The compute model (core/compute_model.h): FLOPs counted by hand for the tiny preset, stages that
// add up to the whole model, the hardware profiles, the [compute] keys' checks, and the seconds a
// worker's ComputeTime hands its clock.
#include <gtest/gtest.h>

#include "core/compute_model.h"
#include "core/config_io.h"
#include "core/model_size.h"
#include "core/pipeline_program.h"

namespace tw {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

ModelConfig tiny(bool tied = true) {
    ModelConfig m;
    EXPECT_TRUE(apply_model_preset("tiny", m).is_ok());
    m.vocab_size = 4096;
    m.tie_embeddings = tied;
    return m;
}

RunConfig parse(const std::vector<std::string>& sets) {
    auto c = parse_config("", "test", sets);
    EXPECT_TRUE(c.is_ok()) << c.message();
    RunConfig cfg = c.is_ok() ? *c : RunConfig{};
    cfg.model.vocab_size = 4096;  // what a worker has after preparing its data
    return cfg;
}

std::string problems(const std::vector<std::string>& sets) {
    auto c = parse_config("", "test", sets);
    return c.is_ok() ? std::string("(accepted)") : c.message();
}

StageEvent compute_event(PipeOpKind kind, bool optimizer = false) {
    StageEvent e;
    e.kind = StageEventKind::kCompute;
    e.op.kind = kind;
    e.optimizer = optimizer;
    return e;
}

// The tiny preset (d = 128, L = 4, 4 heads, T = 128, f = ⌈8·128/3 / 32⌉·32 = 352) with the Brown
// vocabulary V = 4096, tied head, a step of the default batch B = 16 (2,048 tokens). Per token:
//   block forward   2·(4·128² + 3·352·128) + 4·128·128 = 2·(65,536 + 135,168) + 65,536 = 466,944
//   4 blocks        1,867,776
//   head forward    2·128·4096 + 4·4096 = 1,048,576 + 16,384 = 1,064,960
//   forward         1,867,776 + 1,064,960 = 2,932,736
//   backward        2·(1,867,776 + 1,048,576) + 2·4096 = 5,832,704 + 8,192 = 5,840,896
//   step per token  8,773,632   (= 6·N_matmul + 12·L·T·d = 8,749,056 of model_size.h, + 6·V = 24,576)
// Parameters P = 4096·128 + 4·(2·128 + 4·128² + 3·352·128) + 128 = 524,288 + 803,840 + 128 = 1,328,256;
// AdamW 18·P = 23,908,608. The step: 2,048 · 8,773,632 + 23,908,608 = 17,968,398,336 + 23,908,608
// = 17,992,306,944 FLOPs.
TEST(ComputeModel, TinyStepByHand) {
    const ModelConfig m = tiny();
    EXPECT_EQ(m.ff_width(), 352);
    EXPECT_EQ(block_forward_flops(m), 466944.0);
    EXPECT_EQ(head_forward_flops(m), 1064960.0);
    const PassFlops whole = stage_flops(m, 0, 1);
    EXPECT_EQ(whole.forward, 2932736.0);
    EXPECT_EQ(whole.backward, 5840896.0);
    EXPECT_EQ(whole.forward + whole.backward, train_flops_per_token(m) + 6.0 * 4096);
    EXPECT_EQ(count_parameters(m), 1328256);
    EXPECT_EQ(train_step_flops(m, 16 * 128), 17992306944.0);

    // At 1 GFLOP/s (a custom profile, efficiency 1) the step takes 17.992306944 s of simulated time.
    RunConfig c = parse({"compute.model=\"flops\"", "compute.hardware=\"custom\"", "compute.peak_flops=1e9"});
    auto t = ComputeTime::create(c, 0);
    ASSERT_TRUE(t.is_ok()) << t.message();
    EXPECT_TRUE(t->modelled());
    EXPECT_EQ(t->rate_flops(), 1e9);
    EXPECT_EQ(t->train_step(0.5), 17992306944.0 / 1e9);
    EXPECT_EQ(t->train_step(0.25), t->train_step(123.0));  // the measured seconds do not matter
    EXPECT_EQ(t->take_measured_s(), 0.5 + 0.25 + 123.0);   // but are kept for the store
    EXPECT_EQ(t->take_measured_s(), 0.0);
}

// Two stages of the untied tiny model, boundary rank 16, 4 micro-batches of the 16 sequences
// (512 tokens each). Per token, stage 1 (blocks 2–3 and the head):
//   forward   2·466,944 + 1,064,960 + 2·128·16 (decoding its input) = 933,888 + 1,064,960 + 4,096 = 2,002,944
//   backward  2·(933,888 + 1,048,576) + 2·4096 + 4,096 (projecting its input's gradient) = 3,977,216
// so one micro-batch's forward is 512 · 2,002,944 = 1,025,507,328 FLOPs and its backward
// 512 · 3,977,216 = 2,036,334,592. Stage 1 holds 2 blocks (2·200,960), the final norm (128) and the
// head (524,288): 926,336 parameters, 18 FLOPs each in the optimizer step = 16,674,048.
TEST(ComputeModel, PipelineStageByHand) {
    const ModelConfig m = tiny(false);
    const PassFlops s1 = stage_flops(m, 1, 2, 16, 0);
    EXPECT_EQ(s1.forward, 2002944.0);
    EXPECT_EQ(s1.backward, 3977216.0);
    EXPECT_EQ(stage_parameters(m, 1, 2), 926336);

    RunConfig c = parse({"model.tie_embeddings=false", "cluster.stages=2", "pipeline.rank=16", "pipeline.micro_batches=4",
                         "outer.algorithm=\"sparseloco\"", "outer.replicas=2", "compute.model=\"flops\"",
                         "compute.hardware=\"custom\"", "compute.peak_flops=1"});
    auto t = ComputeTime::create(c, 1, 1);  // at 1 FLOP/s the seconds are the FLOPs
    ASSERT_TRUE(t.is_ok()) << t.message();
    EXPECT_EQ(t->stage_segment(compute_event(PipeOpKind::kForward), 0.1), 1025507328.0);
    EXPECT_EQ(t->stage_segment(compute_event(PipeOpKind::kBackward), 0.1), 2036334592.0);
    EXPECT_EQ(t->stage_segment(compute_event(PipeOpKind::kForward, true), 0.1), 16674048.0);
    // Stage 0 sends over the same boundary: it encodes (forward) and decodes the gradient (backward).
    auto t0 = ComputeTime::create(c, 1, 0);
    ASSERT_TRUE(t0.is_ok()) << t0.message();
    const PassFlops s0 = stage_flops(m, 0, 2, 0, 16);
    EXPECT_EQ(s0.forward, 2 * 466944.0 + 4096);
    EXPECT_EQ(t0->stage_segment(compute_event(PipeOpKind::kForward), 0.1), 512 * s0.forward);
}

// Every split of the model adds up to the whole: FLOPs forward and backward, and parameters.
TEST(ComputeModel, StagesSumToWholeModel) {
    std::vector<ModelConfig> models{tiny(false)};
    ModelConfig big;
    ASSERT_TRUE(apply_model_preset("paper178m", big).is_ok());
    big.vocab_size = 50257, big.tie_embeddings = false;
    models.push_back(big);
    for (const ModelConfig& m : models)
        for (int64_t S = 1; S <= m.n_layer; ++S) {
            double fwd = 0, bwd = 0;
            int64_t params = 0, blocks = 0;
            for (int64_t s = 0; s < S; ++s) {
                const PassFlops p = stage_flops(m, s, S);
                fwd += p.forward, bwd += p.backward;
                params += stage_parameters(m, s, S);
                blocks += stage_blocks(m, s, S);
                // Earlier stages take the remainder: no stage differs from another by more than one block.
                EXPECT_LE(stage_blocks(m, s, S), stage_blocks(m, 0, S));
                EXPECT_GE(stage_blocks(m, s, S), stage_blocks(m, 0, S) - 1);
            }
            const PassFlops whole = stage_flops(m, 0, 1);
            EXPECT_EQ(fwd, whole.forward) << m.preset << " on " << S << " stages";
            EXPECT_EQ(bwd, whole.backward) << m.preset << " on " << S << " stages";
            EXPECT_EQ(params, count_parameters(m)) << m.preset << " on " << S << " stages";
            EXPECT_EQ(blocks, m.n_layer);
        }
    // A compressed boundary adds 2·d·k per token at each end, each way: 4 projections.
    const ModelConfig m = tiny(false);
    const PassFlops a = stage_flops(m, 0, 2, 0, 32), b = stage_flops(m, 1, 2, 32, 0);
    const PassFlops whole = stage_flops(m, 0, 1);
    EXPECT_EQ(a.forward + b.forward + a.backward + b.backward - whole.forward - whole.backward, 4 * 2.0 * 128 * 32);
}

TEST(ComputeModel, HardwareProfiles) {
    ASSERT_NE(find_hardware("h100"), nullptr);
    EXPECT_EQ(find_hardware("h100")->peak_flops, 989.4e12);
    EXPECT_EQ(find_hardware("a100")->peak_flops, 312e12);
    EXPECT_EQ(find_hardware("rtx4090")->peak_flops, 165.2e12);
    EXPECT_EQ(find_hardware("tpu"), nullptr);
    for (auto& p : hardware_profiles()) {
        EXPECT_GT(p.efficiency, 0) << p.name;
        EXPECT_LE(p.efficiency, 1) << p.name;
        EXPECT_FALSE(p.source.empty()) << p.name;
        EXPECT_TRUE(p.name == "custom" || p.peak_flops > 0) << p.name;
    }
    const HardwareProfile& here = *find_hardware("cpu-here");
    EXPECT_GT(here.peak_flops, 10e9);  // a 2-core AVX machine's sgemm: tens to hundreds of GFLOP/s
    EXPECT_LT(here.peak_flops, 1e12);

    // The profile's numbers, then each override on its own.
    RunConfig c = parse({"compute.model=\"flops\"", "compute.hardware=\"h100\""});
    EXPECT_EQ(effective_flops(c.compute, 0), 989.4e12 * 0.4);
    c = parse({"compute.model=\"flops\"", "compute.hardware=\"h100\"", "compute.efficiency=0.25"});
    EXPECT_EQ(effective_flops(c.compute, 0), 989.4e12 * 0.25);
    c = parse({"compute.model=\"flops\"", "compute.peak_flops=2e11"});
    EXPECT_EQ(effective_flops(c.compute, 0), 2e11 * here.efficiency);
    c = parse({"compute.model=\"flops\"", "compute.hardware=\"custom\"", "compute.peak_flops=3e9"});
    EXPECT_EQ(effective_flops(c.compute, 0), 3e9);  // custom: efficiency 1 unless given
}

// A replica at node_speed 0.5 takes exactly twice as long for every segment: its rate is halved
// exactly (a power of two), and x / (r/2) rounds to exactly 2·(x / r).
TEST(ComputeModel, NodeSpeedScalesExactly) {
    RunConfig c = parse({"model.tie_embeddings=false", "cluster.stages=2", "pipeline.replicas=1", "pipeline.rank=8",
                         "outer.algorithm=\"sparseloco\"", "outer.replicas=2", "compute.model=\"flops\"",
                         "compute.hardware=\"a100\"", "compute.node_speed=[1.0, 0.5]"});
    auto fast = ComputeTime::create(c, 0);  // replica 0: a full replica
    auto slow = ComputeTime::create(c, 1);  // replica 1 is the pipeline; as a whole-model node for the test
    ASSERT_TRUE(fast.is_ok() && slow.is_ok());
    EXPECT_EQ(slow->rate_flops(), fast->rate_flops() / 2);
    EXPECT_EQ(slow->train_step(0), 2 * fast->train_step(0));
    auto stage = ComputeTime::create(c, 1, 1);
    ASSERT_TRUE(stage.is_ok()) << stage.message();
    const double f = stage->stage_segment(compute_event(PipeOpKind::kForward), 0);
    EXPECT_EQ(f, 512 * stage_flops(c.model, 1, 2, 8, 0).forward / (312e12 * 0.4 * 0.5));
}

TEST(ComputeModel, MeasuredPassesSecondsThrough) {
    RunConfig c = parse({});
    EXPECT_EQ(c.compute.model, "measured");
    auto t = ComputeTime::create(c, 0);
    ASSERT_TRUE(t.is_ok());
    EXPECT_FALSE(t->modelled());
    EXPECT_EQ(t->train_step(0.125), 0.125);
    EXPECT_EQ(t->skip_op('F', 0, 0.5), 0.5);
    EXPECT_EQ(t->take_measured_s(), 0.625);
}

TEST(ComputeModel, CreateRefusesRolesOutsideTheConfig) {
    RunConfig c = parse({"compute.model=\"flops\"", "outer.algorithm=\"diloco\"", "outer.replicas=2"});
    auto bad = ComputeTime::create(c, 2);
    ASSERT_FALSE(bad.is_ok());
    EXPECT_TRUE(contains(bad.message(), "replica 2 is not one of outer.replicas 2")) << bad.message();
    bad = ComputeTime::create(c, 0, 0);  // a full replica has no stage
    ASSERT_FALSE(bad.is_ok());
    EXPECT_TRUE(contains(bad.message(), "replica 0 has no stage 0")) << bad.message();
    c.model.vocab_size = 0;
    bad = ComputeTime::create(c, 0);
    ASSERT_FALSE(bad.is_ok());
    EXPECT_TRUE(contains(bad.message(), "model.vocab_size")) << bad.message();
}

// Every value of [compute] comes from a file or --set: each bad one is refused naming its key.
TEST(ComputeModel, ConfigChecks) {
    EXPECT_TRUE(contains(problems({"compute.model=\"guess\""}), "compute.model: unknown value \"guess\""));
    EXPECT_TRUE(contains(problems({"compute.model=\"flops\"", "compute.hardware=\"tpu\""}),
                         "compute.hardware: unknown value \"tpu\" (expected one of: cpu-here, rtx4090, a100, h100, custom)"));
    EXPECT_TRUE(contains(problems({"compute.model=\"flops\"", "compute.efficiency=1.5"}),
                         "compute.efficiency: value 1.5 is out of range [0, 1]"));
    EXPECT_TRUE(contains(problems({"compute.model=\"flops\"", "compute.peak_flops=-3"}),
                         "compute.peak_flops: value -3 is out of range"));
    EXPECT_TRUE(contains(problems({"compute.model=\"flops\"", "compute.peak_flops=\"fast\""}),
                         "compute.peak_flops: expected a number"));
    EXPECT_TRUE(contains(problems({"compute.model=\"flops\"", "compute.hardware=\"custom\""}),
                         "compute.peak_flops: compute.hardware \"custom\" needs the node's peak FLOP/s"));
    // node_speed: one multiplier per replica, each above 0.
    const std::vector<std::string> diloco{"compute.model=\"flops\"", "outer.algorithm=\"diloco\"", "outer.replicas=2"};
    auto with = [&](std::vector<std::string> more) {
        auto v = diloco;
        v.insert(v.end(), more.begin(), more.end());
        return problems(v);
    };
    EXPECT_EQ(with({"compute.node_speed=[1.0, 0.5]"}), "(accepted)");
    EXPECT_TRUE(contains(with({"compute.node_speed=[1.0]"}),
                         "compute.node_speed has 1 entries for 2 replicas (outer.replicas): one multiplier per replica"));
    EXPECT_TRUE(contains(with({"compute.node_speed=[1.0, 0]"}), "compute.node_speed[1] must be above 0"));
    EXPECT_TRUE(contains(with({"compute.node_speed=[1.0, -1]"}), "compute.node_speed: value -1 is out of range"));
    EXPECT_TRUE(contains(with({"compute.node_speed=[1.0, \"x\"]"}), "compute.node_speed: expected an array of numbers"));
    const std::vector<std::string> crawl{"compute.hardware=\"h100\"", "compute.efficiency=0.5", "compute.node_speed=[1.0, 1e-300]"};
    EXPECT_TRUE(contains(with(crawl), "compute: the rate peak_flops × efficiency × node_speed[1] is 4.947e-286 FLOP/s; "
                                      "it must be at least 1 FLOP/s"))
        << with(crawl);
    EXPECT_TRUE(contains(problems({"compute.model=\"flops\"", "compute.hardware=\"custom\"", "compute.peak_flops=0.5"}),
                         "compute: the rate peak_flops × efficiency × node_speed is 0.5 FLOP/s"));
    // Under measured they would do nothing: refused, naming each.
    const std::string measured =
        problems({"compute.hardware=\"h100\"", "compute.efficiency=0.5", "compute.peak_flops=1e9",
                  "outer.algorithm=\"diloco\"", "outer.replicas=2", "compute.node_speed=[1.0, 0.5]"});
    for (const char* key : {"compute.hardware", "compute.efficiency", "compute.peak_flops", "compute.node_speed"})
        EXPECT_TRUE(contains(measured, std::string(key) + " applies only with compute.model = \"flops\"")) << measured;
    // SkipPipe schedules every node alike and takes its times from the model under flops.
    const std::vector<std::string> skip{"model.n_layer=4", "train.batch_size=8", "skippipe.stages=4",
                                        "skippipe.micro_batches=4", "compute.model=\"flops\""};
    auto skip_with = [&](std::vector<std::string> more) {
        auto v = skip;
        v.insert(v.end(), more.begin(), more.end());
        return problems(v);
    };
    EXPECT_EQ(skip_with({}), "(accepted)");
    EXPECT_TRUE(contains(skip_with({"compute.node_speed=[0.5]"}),
                         "compute.node_speed: SkipPipe's scheduler takes one time per stage"));
    EXPECT_TRUE(contains(skip_with({"skippipe.block_s=[0.1, 0.2]"}),
                         "skippipe.block_s / skippipe.head_s pin the stage times"));
}

// [compute] is in the resolved config (so in every stored run) and hashed like every key.
TEST(ComputeModel, ResolvedAndHashed) {
    auto d = parse_config("", "d");
    ASSERT_TRUE(d.is_ok());
    const std::string text = to_toml(*d);
    EXPECT_TRUE(contains(text, "[compute]\n")) << text;
    EXPECT_TRUE(contains(text, "model = 'measured'")) << text;
    auto f = parse_config("", "f", {"compute.model=\"flops\"", "compute.hardware=\"a100\"", "compute.efficiency=0.3",
                                     "outer.algorithm=\"diloco\"", "outer.replicas=2", "compute.node_speed=[1.0, 0.5]"});
    ASSERT_TRUE(f.is_ok()) << f.message();
    auto back = parse_config(to_toml(*f), "back");
    ASSERT_TRUE(back.is_ok()) << back.message();
    EXPECT_EQ(back->compute.model, "flops");
    EXPECT_EQ(back->compute.hardware, "a100");
    EXPECT_EQ(back->compute.efficiency, 0.3);
    EXPECT_EQ(back->compute.node_speed, (std::vector<double>{1.0, 0.5}));
    EXPECT_EQ(config_hash(*back), config_hash(*f));
    auto g = *f;
    g.compute.node_speed = {1.0, 0.25};
    EXPECT_NE(config_hash(g), config_hash(*f));
    // A stored run from before [compute] existed reads back as measured.
    std::string old = text;
    old.erase(old.find("[compute]"), old.find("[cluster]") - old.find("[compute]"));
    auto o = parse_config(old, "old");
    ASSERT_TRUE(o.is_ok()) << o.message();
    EXPECT_EQ(o->compute.model, "measured");
}

}  // namespace
}  // namespace tw
