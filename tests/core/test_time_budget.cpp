// Time-budgeted rounds (core/time_budget.h): the steps that fit a round and the token weights, by
// hand for one slow node; the per-replica config; the refusals, each naming outer.round_time_s.
#include <gtest/gtest.h>

#include <cmath>

#include "core/compute_model.h"
#include "core/config_io.h"
#include "core/time_budget.h"

namespace tw {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string problems(const std::vector<std::string>& sets) {
    auto c = parse_config("", "test", sets);
    return c.is_ok() ? std::string("(accepted)") : c.message();
}

const std::vector<std::string> kBase{"compute.model=\"flops\"", "compute.hardware=\"custom\"", "compute.peak_flops=1e9",
                                     "outer.algorithm=\"diloco\"", "outer.replicas=2", "outer.inner_steps=4",
                                     "train.steps=12", "compute.node_speed=[1.0, 0.5]"};

RunConfig parse(std::vector<std::string> more) {
    auto sets = kBase;
    sets.insert(sets.end(), more.begin(), more.end());
    auto c = parse_config("", "test", sets);
    EXPECT_TRUE(c.is_ok()) << c.message();
    RunConfig cfg = c.is_ok() ? *c : RunConfig{};
    cfg.model.vocab_size = 4096;  // what a worker has after preparing its data
    return cfg;
}

// The fast replica's modelled step, as a worker's ComputeTime hands it to the clock.
double fast_step(const RunConfig& c) { return ComputeTime::create(c, 0).value().train_step(0); }

TEST(TimeBudget, OneSlowNodeByHand) {
    RunConfig c = parse({"outer.round_time_s=1"});
    const double s = fast_step(c);
    EXPECT_EQ(s, train_step_flops(c.model, c.train.batch_size * c.model.seq_len) / 1e9);
    c.outer.round_time_s = 4 * s;  // four fast steps' time: node_speed 0.5 fits two
    auto b = time_budget(c);
    ASSERT_TRUE(b.is_ok()) << b.message();
    EXPECT_EQ(b->rounds, 3);  // train.steps / outer.inner_steps
    EXPECT_EQ(b->inner_steps, (std::vector<int64_t>{4, 2}));
    EXPECT_EQ(b->step_s, (std::vector<double>{s, 2 * s}));
    const double tokens = static_cast<double>(c.train.batch_size * c.model.seq_len);
    EXPECT_EQ(b->tokens, (std::vector<double>{4 * tokens, 2 * tokens}));
    // Weights 2/3 and 1/3; as factors of a plain mean over R = 2: 4/3 and 2/3.
    EXPECT_DOUBLE_EQ(b->mean_scale[0], 4.0 / 3);
    EXPECT_DOUBLE_EQ(b->mean_scale[1], 2.0 / 3);
    EXPECT_DOUBLE_EQ(b->mean_scale[0] / 2, 2.0 / 3);
    // The slow replica's config: H = 2 and 3 rounds of it.
    RunConfig slow = budgeted_config(c, *b, 1);
    EXPECT_EQ(slow.outer.inner_steps, 2);
    EXPECT_EQ(slow.train.steps, 6);
    EXPECT_EQ(budgeted_config(c, *b, 0).train.steps, 12);
    // Just under four fast steps: three fit, and one slow one.
    c.outer.round_time_s = std::nextafter(4 * s, 0.0);
    b = time_budget(c);
    ASSERT_TRUE(b.is_ok());
    EXPECT_EQ(b->inner_steps, (std::vector<int64_t>{3, 1}));
    EXPECT_DOUBLE_EQ(b->mean_scale[0], 1.5);
    EXPECT_DOUBLE_EQ(b->mean_scale[1], 0.5);
}

TEST(TimeBudget, EqualSpeedsGiveUnitWeightsExactly) {
    RunConfig c = parse({"outer.round_time_s=1", "compute.node_speed=[1.0, 1.0]"});
    c.outer.round_time_s = 7.5 * fast_step(c);
    auto b = time_budget(c);
    ASSERT_TRUE(b.is_ok());
    EXPECT_EQ(b->inner_steps, (std::vector<int64_t>{7, 7}));
    EXPECT_EQ(b->mean_scale, (std::vector<double>{1.0, 1.0}));  // so DiLoCo skips the multiplication
}

TEST(TimeBudget, StepLongerThanTheRoundIsRefused) {
    RunConfig c = parse({"outer.round_time_s=1"});
    c.outer.round_time_s = 1.5 * fast_step(c);  // the slow replica's step is 2 fast ones
    auto b = time_budget(c);
    ASSERT_FALSE(b.is_ok());
    EXPECT_TRUE(contains(b.message(), "outer.round_time_s")) << b.message();
    EXPECT_TRUE(contains(b.message(), "replica 1's step")) << b.message();
}

TEST(TimeBudget, Refusals) {
    auto with = [](std::vector<std::string> more) {
        auto sets = kBase;
        sets.insert(sets.end(), more.begin(), more.end());
        return problems(sets);
    };
    EXPECT_EQ(with({"outer.round_time_s=2"}), "(accepted)");
    EXPECT_EQ(with({"outer.round_time_s=2", "outer.algorithm=\"sparseloco\""}), "(accepted)");
    EXPECT_EQ(with({"outer.round_time_s=2", "outer.topology=\"mesh\""}), "(accepted)");
    EXPECT_TRUE(contains(problems({"outer.algorithm=\"diloco\"", "outer.replicas=2", "outer.round_time_s=2"}),
                         "outer.round_time_s needs compute.model = \"flops\""));
    for (const char* a : {"streaming_diloco", "noloco", "demo", "ddp"})
        EXPECT_TRUE(contains(with({"outer.round_time_s=2", std::string("outer.algorithm=\"") + a + "\""}),
                             std::string("outer.round_time_s: time-budgeted rounds run diloco and sparseloco, not "
                                         "outer.algorithm \"") + a + "\""))
            << a << ": " << with({"outer.round_time_s=2", std::string("outer.algorithm=\"") + a + "\""});
    EXPECT_TRUE(contains(with({"outer.round_time_s=2", "outer.dtype=\"int8\""}),
                         "outer.round_time_s: diloco with outer.dtype \"int8\" is not supported yet"));
    EXPECT_TRUE(contains(with({"outer.round_time_s=2", "train.steps=10"}),
                         "outer.round_time_s: train.steps 10 must be a multiple of outer.inner_steps 4"));
    EXPECT_TRUE(contains(with({"outer.round_time_s=2", "cluster.nodes_per_replica=2"}),
                         "outer.round_time_s: replicas of several nodes"));
    EXPECT_TRUE(contains(with({"outer.round_time_s=2", "model.tie_embeddings=false", "cluster.stages=2",
                               "pipeline.replicas=1", "outer.algorithm=\"sparseloco\""}),
                         "outer.round_time_s: runs with pipeline replicas"));
    EXPECT_TRUE(contains(with({"outer.round_time_s=-1"}), "outer.round_time_s"));
}

}  // namespace
}  // namespace tw
