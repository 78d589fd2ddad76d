// The engine's algorithm registry (engine/algo/registry.h): one row per algorithm of core's table,
// each outer algorithm built by name through it and named by its traits, DDP and none the worker's
// own; and DeMo added through the registry alone: a TOML config naming it parses and validates, its
// traits say what it supports, the registry builds it and a round runs.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <zmq.hpp>

#include "core/algorithm.h"
#include "core/config_io.h"
#include "engine/algo/registry.h"
#include "remote/zmq_collective.h"
#include "tests/engine/micro_run.h"
#include "tests/engine/replica_threads.h"

namespace tw {
namespace {

TEST(OuterRegistry, HasOneRowPerAlgorithmInEnumOrder) {
    const auto& rows = outer_registry();
    ASSERT_EQ(rows.size(), algorithm_table().size());
    for (size_t i = 0; i < rows.size(); ++i) {
        EXPECT_EQ(rows[i].id, algorithm_table()[i].id) << i;
        // What the engine builds is exactly what the traits say syncs in outer rounds.
        EXPECT_EQ(rows[i].make != nullptr, algorithm_table()[i].outer_rounds) << algorithm_table()[i].name;
        // Every built-in row has its planned round cost.
        EXPECT_NE(rows[i].plan_rounds, nullptr) << algorithm_table()[i].name;
        EXPECT_EQ(outer_registration(rows[i].id), &rows[i]);
    }
}

TEST(OuterRegistry, BuildsEveryOuterAlgorithmNamedByItsTraitsAndRefusesTheWorkersOwn) {
    auto c = testing_support::micro_run(56, 10);
    c.outer.replicas = 2;
    c.outer.inner_steps = 4;
    c.outer.fragments = 2;
    auto t = testing_support::synthetic_trainer(c, 0, 1);
    for (auto& traits : algorithm_table()) {
        c.outer.algorithm = traits.name;
        auto algo = make_outer_algorithm(c, t.model()->parameters(), testing_support::param_names(t), 0, 2);
        if (!traits.outer_rounds) {
            ASSERT_FALSE(algo) << traits.name;
            EXPECT_NE(algo.message().find(std::string("\"") + traits.name + "\" has no outer algorithm"),
                      std::string::npos)
                << algo.message();
            EXPECT_NE(algo.message().find("demo"), std::string::npos) << "the list comes from the registry";
            continue;
        }
        ASSERT_TRUE(algo) << traits.name << ": " << algo.message();
        EXPECT_EQ((*algo)->name(), traits.name);
    }
}

TEST(OuterRegistry, AddsDeMoThroughTheRegistryAlone) {
    // The field table knows its keys and their ranges; the traits row its capabilities.
    auto parsed = parse_config("[outer]\nalgorithm = \"demo\"\nreplicas = 2\ninner_steps = 2\ndemo_chunk = 8\n"
                               "demo_topk = 4\ndemo_values = \"sign\"\n",
                               "demo.toml");
    ASSERT_TRUE(parsed) << parsed.message();
    EXPECT_EQ(algorithm_of(*parsed), Algorithm::kDeMo);
    const AlgorithmTraits& traits = algorithm_traits(*parsed);
    EXPECT_TRUE(traits.outer_rounds);
    EXPECT_FALSE(traits.pipelines);
    EXPECT_FALSE(traits.multi_node_replicas);
    EXPECT_FALSE(traits.dense_wire_dtypes);
    auto bad = parse_config("[outer]\nalgorithm = \"demo\"\nreplicas = 2\ndemo_values = \"fp8\"\n", "demo.toml");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.message().find("outer.demo_values: unknown value \"fp8\""), std::string::npos) << bad.message();
    bad = parse_config("[outer]\nalgorithm = \"demo\"\nreplicas = 2\n[cluster]\nstages = 2\n[model]\ntie_embeddings = false\n",
                       "demo.toml");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.message().find("cluster.stages 2: pipeline replicas sync by stage with diloco, sparseloco or noloco"),
              std::string::npos)
        << bad.message();

    // Built by the registry and run for one round over a real collective.
    RunConfig c = testing_support::micro_run(56, 2);
    c.outer = parsed->outer;
    const int R = 2;
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps{"inproc://registry-demo-0", "inproc://registry-demo-1"};
    std::vector<uint64_t> sent(R);
    testing_support::expect_no_errors(testing_support::on_threads(R, [&](int r) -> std::string {
        auto coll = ZmqCollective::create(ctx, eps, r, 20000).value();
        auto t = testing_support::synthetic_trainer(c, r, R);
        auto algo = make_outer_algorithm(c, t.model()->parameters(), {}, r, R);
        if (!algo) return algo.message();
        if ((*algo)->name() != "demo") return "built " + (*algo)->name();
        for (int64_t s = 1; s <= 2; ++s) {
            (void)t.step();
            auto rep = (*algo)->after_step(s, *coll, 0.0);
            if (!rep) return rep.message();
            if (rep->synced != (s == 2)) return "synced at step " + std::to_string(s);
            if (rep->synced) sent[r] = rep->bytes_sent;
        }
        if (auto h = agree_on_round(**algo, *coll); !h) return h.message();
        return "";
    }));
    EXPECT_GT(sent[0], 0u);
    EXPECT_EQ(sent[0], sent[1]);
}

}  // namespace
}  // namespace tw
