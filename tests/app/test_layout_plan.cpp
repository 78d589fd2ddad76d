// The workbench's Plan view's planner call (app/layout_plan.h): the editor's layout planned exactly
// as `thinwire plan` plans a file — the same Plan as plan_run on the config the CLI would build,
// the same refusal text, and the layout's config errors instead of a plan.
#include <gtest/gtest.h>

#include "app/layout_plan.h"
#include "core/config_io.h"
#include "engine/plan/planner.h"

namespace tw {
namespace {

// The config `thinwire plan FILE` builds (app/cmd_plan.cpp load): compute.model = "flops" first,
// then the layout, vocabulary from data.vocab_size.
RunConfig as_cli_plans(const std::string& toml) {
    RunConfig c = parse_config(toml, "layout", {"compute.model=\"flops\""}).value();
    if (c.model.vocab_size <= 0) c.model.vocab_size = c.data.vocab_size;
    return c;
}

const char* kLayout = R"(
[outer]
algorithm = "diloco"
replicas = 3
inner_steps = 20
[train]
steps = 100
[network]
profile = "wan-100m"
replica_up_bps = [1e9, 1e8, 2e7]
[compute]
model = "flops"
hardware = "a100"
node_speed = [1.0, 1.0, 0.5]
)";

TEST(LayoutPlan, EqualsThePlannersPlanOfTheSameLayout) {
    const RunConfig layout = parse_config(kLayout, "layout").value();
    auto got = cli::plan_layout(layout);
    ASSERT_TRUE(got) << got.message();
    const Plan want = plan_run(as_cli_plans(kLayout)).value();
    EXPECT_EQ(got->params, want.params);
    EXPECT_EQ(got->steps, 100);
    EXPECT_EQ(got->tokens, want.tokens);
    EXPECT_EQ(got->effective_flops, want.effective_flops);
    EXPECT_EQ(got->effective_flops, 312e12 * 0.4);
    EXPECT_EQ(got->sim_s, want.sim_s());
    EXPECT_EQ(got->utilisation, want.utilisation());
    EXPECT_FALSE(got->measured_layout);
    EXPECT_EQ(got->outer_bandwidth_bps, 1e8);  // wan-100m's outer link
    ASSERT_EQ(got->nodes.size(), want.nodes.size());
    for (size_t i = 0; i < want.nodes.size(); ++i) {
        EXPECT_EQ(got->nodes[i].name, want.nodes[i].name);
        EXPECT_EQ(got->nodes[i].step_s, want.nodes[i].step_s);
        EXPECT_EQ(got->nodes[i].rounds, 5);
        EXPECT_EQ(got->nodes[i].round_bytes, want.nodes[i].round_bytes);
        EXPECT_EQ(got->nodes[i].total_bytes, want.nodes[i].total_bytes);
        EXPECT_EQ(got->nodes[i].compute_s, want.nodes[i].compute_s);
        EXPECT_EQ(got->nodes[i].exposed_s, want.nodes[i].exposed_s);
        EXPECT_EQ(got->nodes[i].sim_s, want.nodes[i].sim_s);
    }
    // The half-speed replica's step takes twice as long.
    EXPECT_EQ(got->nodes[2].step_s, 2 * got->nodes[0].step_s);
}

TEST(LayoutPlan, AMeasuredLayoutIsPlannedUnderFlopsOnItsHardware) {
    const std::string toml = "[outer]\nalgorithm = \"diloco\"\nreplicas = 2\n[train]\nsteps = 40\n";
    auto got = cli::plan_layout(parse_config(toml, "layout").value());
    ASSERT_TRUE(got) << got.message();
    EXPECT_TRUE(got->measured_layout);
    EXPECT_EQ(got->hardware, "cpu-here");
    EXPECT_EQ(got->sim_s, plan_run(as_cli_plans(toml)).value().sim_s());
}

TEST(LayoutPlan, RefusalsAndConfigErrorsAreThePlannersAndTheChecksText) {
    // Replicas of several nodes: whatever the planner says (a refusal today) the view says too.
    const std::string toml = "[outer]\nalgorithm = \"ddp\"\n[cluster]\nnodes_per_replica = 2\n";
    auto got = cli::plan_layout(parse_config(toml, "layout").value());
    auto want = plan_run(as_cli_plans(toml));
    ASSERT_EQ(bool(got), bool(want));
    if (!want) EXPECT_EQ(got.message(), want.message());
    else EXPECT_EQ(got->sim_s, want->sim_s());
    // A layout with a config error is not planned; the message names the key.
    RunConfig bad = parse_config("", "layout").value();
    bad.outer.inner_steps = 0;
    auto refused = cli::plan_layout(bad);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.message().find("outer.inner_steps"), std::string::npos) << refused.message();
}

}  // namespace
}  // namespace tw
