// Layout checks and role assignment (core/layout.h), and [variants] run plans.
#include <gtest/gtest.h>

#include <fstream>

#include "core/config_io.h"
#include "core/layout.h"

namespace tw {
namespace {

std::vector<std::string> tcp_nodes(int n) {
    std::vector<std::string> e;
    for (int i = 0; i < n; ++i) e.push_back("tcp://127.0.0.1:" + std::to_string(6000 + 10 * i));
    return e;
}

TEST(Layout, EndpointsFollowTheConvention) {
    auto e = derive_endpoints("tcp://127.0.0.1:6000");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->metrics, "tcp://127.0.0.1:6001");
    EXPECT_EQ(e->data, "tcp://127.0.0.1:6002");
    EXPECT_EQ(e->store_port, 6003);
    EXPECT_EQ(derive_endpoints("inproc://n").value().data, "inproc://n.data");
    EXPECT_FALSE(derive_endpoints("tcp://127.0.0.1"));
    EXPECT_NE(derive_endpoints("udp://x:1").message().find("expected inproc://"), std::string::npos);
}

TEST(Layout, TooFewNodesIsNamed) {
    RunConfig c;
    c.outer.algorithm = "ddp";
    c.outer.replicas = 2;
    c.cluster.nodes_per_replica = 2;
    auto r = assign_roles(c, tcp_nodes(3), [] { return 1; });
    ASSERT_FALSE(r);
    EXPECT_NE(r.message().find("too few nodes: the layout needs 4 (2 replicas × 2 nodes × 1 stages), the cluster has 3"),
              std::string::npos) << r.message();
}

TEST(Layout, StagesAboveLayersAndUnknownAlgorithmAreConfigErrors) {
    auto r = parse_config("[cluster]\nstages = 9\n", "x.toml");
    ASSERT_FALSE(r);
    EXPECT_NE(r.message().find("cluster.stages 9 exceeds model.n_layer 4"), std::string::npos) << r.message();
    auto a = parse_config("[outer]\nalgorithm = \"gossip\"\n", "x.toml");
    EXPECT_NE(a.message().find("outer.algorithm: unknown value \"gossip\""), std::string::npos) << a.message();
}

TEST(Layout, PipelineReplicasGetOneNodePerStageInOneMesh) {
    auto c = parse_config(
                 "[model]\ntie_embeddings = false\n[outer]\nalgorithm = \"sparseloco\"\nreplicas = 3\n"
                 "[cluster]\nstages = 2\n[pipeline]\nreplicas = 2\nrank = 16\n",
                 "p.toml")
                 .value();
    EXPECT_EQ(nodes_needed(c), 1 + 2 * 2);
    auto roles = assign_roles(c, tcp_nodes(5), [] { return 1; }).value();
    ASSERT_EQ(roles.size(), 5u);
    EXPECT_EQ(roles[0].name, "replica-0");
    EXPECT_EQ(roles[0].kind, NodeKind::kFull);
    EXPECT_EQ(roles[4].name, "replica-2.1");
    EXPECT_EQ(roles[4].kind, NodeKind::kPipeline);
    EXPECT_EQ(roles[4].stage, 1);
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(roles[i].mesh_rank, i);
        EXPECT_EQ(roles[i].mesh_endpoints.size(), 5u);
    }
    EXPECT_EQ(pipeline_mesh_rank(c, 1, 1), 2);
    EXPECT_EQ(pipeline_mesh_rank(c, 2, 0), 3);
    EXPECT_EQ(c.boundary_rank(0, 0), 0);   // a full replica sends nothing between stages
    EXPECT_EQ(c.boundary_rank(2, 0), 16);
}

TEST(Layout, PipelineConfigProblemsAreNamedTogether) {
    auto r = parse_config(
        "[outer]\nalgorithm = \"ddp\"\nreplicas = 2\n[train]\nbatch_size = 6\n"
        "[cluster]\nstages = 3\n[pipeline]\nmicro_batches = 4\nrank = 200\nboundary_ranks = [8]\n",
        "bad.toml");
    ASSERT_FALSE(r);
    for (const char* want : {"not ddp", "model.tie_embeddings must be false", "batch_size 6 is not a multiple",
                             "boundary_ranks has 1 entries", "pipeline.rank 200 exceeds model.d_model 128"})
        EXPECT_NE(r.message().find(want), std::string::npos) << want << "\n" << r.message();
    auto t = parse_config("[pipeline]\nboundary_ranks = [\"x\"]\nadaptations = [\"ad4\"]\n", "t.toml");
    EXPECT_NE(t.message().find("pipeline.boundary_ranks: expected an array of integers"), std::string::npos) << t.message();
    EXPECT_NE(t.message().find("pipeline.adaptations: unknown value \"ad4\""), std::string::npos) << t.message();
}

TEST(Layout, DdpPutsEveryNodeInOneGroupAndMesh) {
    RunConfig c;
    c.outer.algorithm = "ddp";
    c.outer.replicas = 2;
    c.cluster.nodes_per_replica = 2;
    auto roles = assign_roles(c, tcp_nodes(4), [] { return 1; }).value();
    ASSERT_EQ(roles.size(), 4u);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(roles[i].grad_group.size, 4);
        EXPECT_EQ(roles[i].grad_group.rank, i);
        EXPECT_EQ(roles[i].grad_group.port, 6003);  // node 0 hosts the store
        EXPECT_EQ(roles[i].mesh_rank, i);
    }
    EXPECT_EQ(roles[3].name, "replica-1.1");
    EXPECT_EQ(roles[3].global_rank(), 3);
}

TEST(Layout, DilocoMeshHoldsTheLeadersAndEachReplicaHasItsGroup) {
    RunConfig c;
    c.outer.algorithm = "diloco";
    c.outer.replicas = 2;
    c.cluster.nodes_per_replica = 2;
    auto roles = assign_roles(c, tcp_nodes(5), [] { return 1; }).value();  // a spare node sits out
    ASSERT_EQ(roles.size(), 4u);
    EXPECT_EQ(roles[0].mesh_endpoints, (std::vector<std::string>{"tcp://127.0.0.1:6002", "tcp://127.0.0.1:6022"}));
    EXPECT_EQ(roles[0].mesh_rank, 0);
    EXPECT_EQ(roles[1].mesh_rank, -1);
    EXPECT_EQ(roles[2].mesh_rank, 1);
    EXPECT_EQ(roles[3].grad_group.port, 6023);  // replica 1's leader hosts its store
    EXPECT_EQ(roles[3].grad_group.size, 2);
    EXPECT_EQ(roles[3].grad_group.rank, 1);
}

// Spares stand by as the mesh's last members: nobody's replica until one takes a lost place.
TEST(Layout, SparesJoinTheMeshAfterTheReplicas) {
    RunConfig c;
    c.outer.algorithm = "diloco";
    c.outer.replicas = 3;
    c.cluster.spares = 1;
    EXPECT_EQ(nodes_needed(c), 4);
    auto few = assign_roles(c, tcp_nodes(3), [] { return 1; });
    ASSERT_FALSE(few);
    EXPECT_NE(few.message().find("+ 1 spare(s)"), std::string::npos) << few.message();
    auto roles = assign_roles(c, tcp_nodes(4), [] { return 1; }).value();
    ASSERT_EQ(roles.size(), 4u);
    EXPECT_EQ(roles[3].name, "spare-0");
    EXPECT_EQ(roles[3].kind, NodeKind::kSpare);
    EXPECT_EQ(roles[3].mesh_rank, 3);
    EXPECT_EQ(roles[0].mesh_endpoints.size(), 4u);
    EXPECT_EQ(roles[0].mesh_endpoints[3], "tcp://127.0.0.1:6032");
    EXPECT_EQ(roles[2].mesh_rank, 2);
    EXPECT_EQ(roles[2].kind, NodeKind::kFull);
}

TEST(Layout, VariantsBecomeRunsWithTheirOverrides) {
    const std::string path = ::testing::TempDir() + "/plan.toml";
    std::ofstream(path) << "[run]\nname = \"q\"\n[outer]\nreplicas = 2\n[variants]\n"
                           "ddp = [\"outer.algorithm=ddp\"]\ndiloco = [\"outer.algorithm=diloco\", \"outer.inner_steps=5\"]\n"
                           "[report]\nnetworks = [\"datacenter\"]\n";
    auto plan = load_run_plan(path, {"train.steps=7"});
    ASSERT_TRUE(plan) << plan.message();
    ASSERT_EQ(plan->runs.size(), 2u);
    EXPECT_EQ(plan->runs[0].second.run.name, "q-ddp");
    EXPECT_EQ(plan->runs[1].second.outer.algorithm, "diloco");
    EXPECT_EQ(plan->runs[1].second.outer.inner_steps, 5);
    EXPECT_EQ(plan->runs[1].second.train.steps, 7);
    EXPECT_EQ(plan->report_networks, std::vector<std::string>{"datacenter"});
    std::ofstream(path) << "[variants]\nbad = [\"outer.lr=-3\"]\n";
    auto bad = load_run_plan(path);
    EXPECT_NE(bad.message().find("outer.lr: value -3 is out of range"), std::string::npos) << bad.message();
}

TEST(Layout, VariantSelectionKeepsTheNamedVariantsInFileOrder) {
    const std::string path = ::testing::TempDir() + "/select.toml";
    std::ofstream(path) << "[run]\nname = \"s\"\n[outer]\nreplicas = 2\n[variants]\n"
                           "a = [\"outer.algorithm=ddp\"]\nb = [\"outer.algorithm=diloco\"]\nc = [\"outer.algorithm=noloco\"]\n";
    auto plan = load_run_plan(path, {}, PlanSelection{{"c", "a"}, false});
    ASSERT_TRUE(plan) << plan.message();
    ASSERT_EQ(plan->runs.size(), 2u);
    EXPECT_EQ(plan->runs[0].second.run.name, "s-a");
    EXPECT_EQ(plan->runs[1].second.run.name, "s-c");
    EXPECT_EQ(plan->variants, (std::vector<std::string>{"a", "b", "c"}));
    auto unknown = load_run_plan(path, {}, PlanSelection{{"b", "x", "y"}, false});
    ASSERT_FALSE(unknown);
    EXPECT_NE(unknown.message().find("--variant x, y: " + path + " has the variants a, b, c"), std::string::npos)
        << unknown.message();
    std::ofstream(path) << "[run]\nname = \"s\"\n";
    auto none = load_run_plan(path, {}, PlanSelection{{"a"}, false});
    EXPECT_NE(none.message().find("has no [variants] table"), std::string::npos) << none.message();
}

TEST(Layout, KeepGoingSetsARefusedVariantAsideAndLoadsTheOthers) {
    const std::string path = ::testing::TempDir() + "/keep.toml";
    std::ofstream(path) << "[outer]\nreplicas = 2\n[variants]\n"
                           "good = [\"outer.algorithm=ddp\"]\nbad = [\"outer.nope=1\"]\nworse = [\"outer.lr=-3\"]\n";
    auto strict = load_run_plan(path);
    ASSERT_FALSE(strict);
    auto plan = load_run_plan(path, {}, PlanSelection{{}, true});
    ASSERT_TRUE(plan) << plan.message();
    ASSERT_EQ(plan->runs.size(), 1u);
    EXPECT_EQ(plan->runs[0].first, "good");
    ASSERT_EQ(plan->failed.size(), 2u);
    EXPECT_EQ(plan->failed[0].first, "bad");  // the file's order: variants sort by name
    EXPECT_NE(plan->failed[0].second.find("outer.nope: unknown key"), std::string::npos) << plan->failed[0].second;
    EXPECT_EQ(plan->failed[1].first, "worse");
    EXPECT_NE(plan->failed[1].second.find("outer.lr: value -3 is out of range"), std::string::npos);
    // Every run refused: the plan fails, naming each reason.
    auto all = load_run_plan(path, {}, PlanSelection{{"bad", "worse"}, true});
    ASSERT_FALSE(all);
    EXPECT_NE(all.message().find("outer.nope: unknown key"), std::string::npos) << all.message();
    EXPECT_NE(all.message().find("outer.lr: value -3"), std::string::npos) << all.message();
}

}  // namespace
}  // namespace tw
