// The run's opening lines (coordinator/run_banner.h), written out by hand.
#include <gtest/gtest.h>

#include "coordinator/run_banner.h"

namespace tw {
namespace {

RunConfig four_replicas() {
    RunConfig cfg;
    cfg.run.name = "quickstart-diloco";
    cfg.outer.algorithm = "diloco";
    cfg.outer.replicas = 4;
    cfg.cluster.mode = "threads";
    cfg.cluster.nodes_per_replica = 1;
    cfg.run.threads = 1;
    cfg.train.steps = 300;
    return cfg;
}

TEST(RunBanner, SaysWhatRunsOnWhat) {
    RunBannerFacts f;
    f.run_id = 2;
    f.nodes = 4;
    EXPECT_EQ(run_banner(four_replicas(), f),
              (std::vector<std::string>{
                  "run 2 \"quickstart-diloco\": diloco, 4 replicas × 1 node on threads (4 nodes, 1 thread each), 300 steps"}));
    RunConfig one = four_replicas();
    one.outer.algorithm = "none";
    one.outer.replicas = 1;
    one.run.threads = 2;
    f.nodes = 1;
    EXPECT_EQ(run_banner(one, f)[0], "run 2 \"quickstart-diloco\": one node, 1 replica × 1 node on threads (1 node, 2 threads each), 300 steps");
}

TEST(RunBanner, AResumedRunSaysWhereItGoesOnFrom) {
    RunBannerFacts f;
    f.run_id = 7;
    f.nodes = 4;
    f.resumed = true;
    f.resume_step = 40;
    auto lines = run_banner(four_replicas(), f);
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[1], "run 7 resumes at step 40 (every node's latest common checkpoint)");
    f.own_steps = true;
    f.node_steps = {{"replica-0", 45}, {"replica-1", -1}};
    lines = run_banner(four_replicas(), f);
    ASSERT_EQ(lines.size(), 4u);
    EXPECT_EQ(lines[1], "run 7 resumes: after the latest round every replica checkpointed, each at its own step");
    EXPECT_EQ(lines[2], "  replica-0    at step 45");
    EXPECT_EQ(lines[3], "  replica-1    starts over (no checkpoint)");
}

}  // namespace
}  // namespace tw
