// The algorithm registry's core side (core/algorithm.h): the table in enum order, names both ways,
// the traits that validate_config asks instead of comparing names, the keys each algorithm's
// settings live in, and the field table's metadata the layout editor draws from.
#include <gtest/gtest.h>

#include <set>

#include "core/algorithm.h"
#include "core/config_io.h"

namespace tw {
namespace {

TEST(AlgorithmRegistry, TableIsInEnumOrderAndNamesRoundTrip) {
    const auto& t = algorithm_table();
    for (size_t i = 0; i < t.size(); ++i) {
        EXPECT_EQ(static_cast<size_t>(t[i].id), i);
        EXPECT_EQ(parse_algorithm(t[i].name), t[i].id);
        EXPECT_STREQ(to_string(t[i].id), t[i].name);
    }
    EXPECT_FALSE(parse_algorithm("gossip"));
    EXPECT_EQ(algorithm_names(), "none, ddp, diloco, sparseloco, streaming_diloco, noloco, demo");
    EXPECT_EQ(algorithm_names_where([](const AlgorithmTraits& a) { return a.multi_node_replicas; }), "ddp or diloco");
}

// Every row is complete (a schedule and a memory model), and a parsed config holds the id of the
// row its name names; a name changed in code after parsing is read by its name.
TEST(AlgorithmRegistry, RowsAreCompleteAndTheNameIsParsedOnce) {
    for (auto& t : algorithm_table()) {
        EXPECT_NE(t.round_period, nullptr) << t.name;
        EXPECT_NE(t.memory, nullptr) << t.name;
        EXPECT_FALSE(t.topologies.empty()) << t.name;
        for (auto& k : t.defining_keys) EXPECT_NE(config_field(k), nullptr) << t.name << ": " << k;
    }
    EXPECT_EQ(RunConfig{}.outer.algorithm_id, Algorithm::kNone);  // the default name's
    for (auto& t : algorithm_table()) {
        const std::string name = t.name;
        auto r = parse_config("[outer]\nalgorithm = \"" + name + "\"\nreplicas = " + (name == "none" ? "1" : "2") +
                                  "\ninner_steps = 30\nfragments = 3\n",
                              "t.toml");
        ASSERT_TRUE(r) << name << ": " << r.message();
        EXPECT_EQ(r->outer.algorithm_id, t.id) << name;
        EXPECT_EQ(algorithm_of(*r), t.id) << name;
        // The schedule: H, or H/F for Streaming DiLoCo's fragments.
        EXPECT_EQ(round_period(*r), t.id == Algorithm::kStreamingDiLoCo ? 10 : 30) << name;
    }
    RunConfig c = parse_config("[outer]\nalgorithm = \"diloco\"\nreplicas = 2\n", "t.toml").value();
    c.outer.algorithm = "noloco";
    EXPECT_EQ(c.outer.algorithm_id, Algorithm::kDiLoCo);  // left behind by the change
    EXPECT_EQ(algorithm_of(c), Algorithm::kNoLoCo);
    EXPECT_EQ(named_algorithm(c), Algorithm::kNoLoCo);
    c.outer.algorithm = "gossip";
    EXPECT_FALSE(named_algorithm(c));
    resolve_algorithm(c);
    EXPECT_EQ(c.outer.algorithm_id, Algorithm::kDiLoCo);  // an unknown name leaves it
    c.outer.algorithm = "demo";
    resolve_algorithm(c);
    EXPECT_EQ(c.outer.algorithm_id, Algorithm::kDeMo);
}

TEST(AlgorithmRegistry, ValidationAsksTheTraits) {
    auto has = [](const Result<RunConfig>& r, const std::string& part) {
        return !r && r.message().find(part) != std::string::npos;
    };
    // Multi-node replicas: only the algorithms whose traits allow them.
    auto r = parse_config("[outer]\nalgorithm = \"sparseloco\"\nreplicas = 2\n[cluster]\nnodes_per_replica = 2\n", "x");
    EXPECT_TRUE(has(r, "cluster.nodes_per_replica 2: replicas of several nodes run ddp or diloco; sparseloco needs one "
                       "node per replica"))
        << r.message();
    EXPECT_TRUE(parse_config("[outer]\nalgorithm = \"diloco\"\nreplicas = 2\n[cluster]\nnodes_per_replica = 2\n", "x"));
    // Wire dtypes: an algorithm with its own wire format refuses outer.dtype.
    r = parse_config("[outer]\nalgorithm = \"noloco\"\nreplicas = 2\ndtype = \"bf16\"\n", "x");
    EXPECT_TRUE(has(r, "outer.dtype \"bf16\" does not apply to noloco")) << r.message();
    EXPECT_TRUE(parse_config("[outer]\nalgorithm = \"streaming_diloco\"\nreplicas = 2\ninner_steps = 30\ndtype = \"fp4\"\n", "x"));
    // Pipelines: Streaming DiLoCo has none.
    r = parse_config("[outer]\nalgorithm = \"streaming_diloco\"\nreplicas = 2\ninner_steps = 30\n[cluster]\nstages = 2\n"
                     "[model]\ntie_embeddings = false\n",
                     "x");
    EXPECT_TRUE(has(r, "not streaming_diloco")) << r.message();
    // A row's own check runs only for its algorithm: an odd topk_k matters to SparseLoCo alone.
    r = parse_config("[outer]\nalgorithm = \"sparseloco\"\nreplicas = 2\ntopk_k = 7\n", "x");
    EXPECT_TRUE(has(r, "outer.topk_k 7 must be even")) << r.message();
    EXPECT_TRUE(parse_config("[outer]\nalgorithm = \"diloco\"\nreplicas = 2\ntopk_k = 7\n", "x"));
    r = parse_config("[outer]\nalgorithm = \"demo\"\nreplicas = 2\ndemo_chunk = 4\ndemo_topk = 17\n", "x");
    EXPECT_TRUE(has(r, "outer.demo_topk 17 exceeds outer.demo_chunk² (16")) << r.message();
    r = parse_config("[outer]\nalgorithm = \"noloco\"\nreplicas = 2\ngroup_size = 3\n", "x");
    EXPECT_TRUE(has(r, "outer.group_size 3 exceeds outer.replicas 2")) << r.message();
}

TEST(AlgorithmRegistry, FieldTableKnowsWhichAlgorithmsEachKeyAppliesTo) {
    // Every key a traits row lists is a key of the field table.
    for (auto& t : algorithm_table())
        for (const char* k : t.keys) EXPECT_NE(config_field(k), nullptr) << t.name << ": " << k;
    const FieldInfo* topk = config_field("outer.demo_topk");
    ASSERT_NE(topk, nullptr);
    EXPECT_EQ(topk->type, FieldType::kInt);
    EXPECT_EQ(topk->min, 1);
    EXPECT_EQ(topk->max, 4096);
    EXPECT_EQ(topk->algorithms, std::vector<Algorithm>{Algorithm::kDeMo});
    EXPECT_FALSE(topk->label.empty());
    const FieldInfo* values = config_field("outer.demo_values");
    ASSERT_NE(values, nullptr);
    EXPECT_EQ(values->choices, (std::vector<std::string>{"fp32", "sign"}));
    EXPECT_EQ(config_field("outer.momentum")->algorithms,
              (std::vector<Algorithm>{Algorithm::kDiLoCo, Algorithm::kStreamingDiLoCo, Algorithm::kNoLoCo}));
    EXPECT_TRUE(config_field("outer.replicas")->algorithms.empty());  // general
    EXPECT_EQ(config_field("model.d_model")->label, "model.d_model");  // no label: the key
    // The algorithm's choices are the table's names.
    std::vector<std::string> names;
    for (auto& t : algorithm_table()) names.emplace_back(t.name);
    EXPECT_EQ(config_field("outer.algorithm")->choices, names);
    // Every outer.* key but the general ones belongs to some algorithm, so the editor draws it.
    for (auto& f : config_fields())
        if (f.key.rfind("outer.", 0) == 0 && f.key != "outer.algorithm" && f.key != "outer.replicas")
            EXPECT_FALSE(f.algorithms.empty()) << f.key;
    // The pointer reaches the value.
    RunConfig c;
    *std::get<int64_t*>(config_field_ptr(c, "outer.demo_topk")) = 12;
    EXPECT_EQ(c.outer.demo_topk, 12);
}

// outer.topology (core/topology.h): an empty value resolves to the algorithm's default when the
// config is parsed (ring for the dense exchanges, mesh for NoLoCo's pairs and for sparse payloads),
// an explicit one is checked against what the algorithm runs, with the reason; the stored text
// holds the resolved value, and a config built in code writes the same text.
TEST(AlgorithmRegistry, TopologyDefaultsPerAlgorithmAndRefusalsNameTheKey) {
    auto parsed = [](const std::string& algo, const std::string& extra = "") {
        return parse_config("[outer]\nalgorithm = \"" + algo + "\"\nreplicas = " + (algo == "none" ? "1" : "2") +
                                "\ninner_steps = 30\n" + extra,
                            "t.toml");
    };
    const std::vector<std::pair<std::string, std::string>> defaults{
        {"none", "ring"},   {"ddp", "ring"},    {"diloco", "ring"}, {"streaming_diloco", "ring"},
        {"noloco", "mesh"}, {"sparseloco", "mesh"}, {"demo", "mesh"}};
    for (auto& [algo, topo] : defaults) {
        auto r = parsed(algo);
        ASSERT_TRUE(r) << algo << ": " << r.message();
        EXPECT_EQ(r->outer.topology, topo) << algo;
        EXPECT_EQ(to_string(topology_of(*r)), topo) << algo;
        EXPECT_NE(to_toml(*r).find("topology = '" + topo + "'"), std::string::npos) << to_toml(*r);
        // Built in code, left empty: the same resolution, the same text.
        RunConfig c = *r;
        c.outer.topology.clear();
        EXPECT_EQ(to_string(topology_of(c)), topo) << algo;
        EXPECT_EQ(to_toml(c), to_toml(*r)) << algo;
    }
    // Both ways where an algorithm runs both.
    for (const char* algo : {"diloco", "streaming_diloco", "noloco"})
        for (const char* topo : {"ring", "mesh"}) {
            auto r = parsed(algo, std::string("topology = \"") + topo + "\"\n");
            ASSERT_TRUE(r) << algo << " " << topo << ": " << r.message();
            EXPECT_EQ(r->outer.topology, topo);
        }
    // Sparse payloads cannot be summed hop by hop.
    for (const char* algo : {"sparseloco", "demo"}) {
        auto r = parsed(algo, "topology = \"ring\"\n");
        ASSERT_FALSE(r) << algo;
        EXPECT_NE(r.message().find(std::string("outer.topology \"ring\" does not apply to ") + algo +
                                   ": its payloads are sparse"),
                  std::string::npos)
            << r.message();
        EXPECT_NE(r.message().find("(outer.topology = mesh or hub)"), std::string::npos) << r.message();
        r = parsed(algo, "topology = \"hub\"\n");  // the relay: sparse methods only
        ASSERT_TRUE(r) << algo << ": " << r.message();
        EXPECT_EQ(r->outer.topology, "hub");
    }
    for (const char* algo : {"diloco", "streaming_diloco", "noloco"}) {
        auto r = parsed(algo, "topology = \"hub\"\n");
        ASSERT_FALSE(r) << algo;
        EXPECT_NE(r.message().find(std::string("outer.topology \"hub\" does not apply to ") + algo +
                                   ": a hub relays whole payloads"),
                  std::string::npos)
            << r.message();
    }
    auto r = parsed("ddp", "topology = \"mesh\"\n");
    ASSERT_FALSE(r);
    EXPECT_NE(r.message().find("outer.topology \"mesh\" does not apply to ddp: ddp all-reduces its gradients through "
                               "Gloo's ring"),
              std::string::npos)
        << r.message();
    // Not a topology at all: the field table names the key and the choices.
    r = parsed("sparseloco", "topology = \"star\"\n");
    ASSERT_FALSE(r);
    EXPECT_NE(r.message().find("t.toml: outer.topology: unknown value \"star\" (expected one of: ring, mesh, hub)"),
              std::string::npos)
        << r.message();
    // The default follows the algorithm an override picks, whatever the file said.
    r = parse_config("[outer]\nalgorithm = \"diloco\"\nreplicas = 2\n", "t.toml", {"outer.algorithm=sparseloco"});
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(r->outer.topology, "mesh");
    // The layout editor draws the key for the algorithms that have a choice.
    EXPECT_EQ(config_field("outer.topology")->algorithms,
              (std::vector<Algorithm>{Algorithm::kDiLoCo, Algorithm::kSparseLoCo, Algorithm::kStreamingDiLoCo,
                                     Algorithm::kNoLoCo, Algorithm::kDeMo}));
}

}  // namespace
}  // namespace tw
