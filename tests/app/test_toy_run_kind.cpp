// A run kind added through the run-kind registry alone (core/run_kind.h for its config, nodes,
// roles, banner and rules; engine/worker/run_kind_workers.h for its worker), from this file: no
// other file of the tree names it. "twins": two nodes train the same single replica side by side
// and exchange nothing — a determinism check a researcher might run. Checked against independent
// evidence: the node count, the shortfall message and the banner as the row writes them, the
// planner's refusal and the spares refusal in its words, and both twins' losses equal, bit for
// bit, to those of the same config run as the built-in one-node kind (the same worker code on the
// same arithmetic).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "coordinator/run_banner.h"
#include "core/config_io.h"
#include "core/fault_schedule.h"
#include "core/layout.h"
#include "core/run_kind.h"
#include "engine/data/dataset.h"
#include "engine/plan/planner.h"
#include "engine/worker/replica_worker.h"
#include "engine/worker/run_kind_workers.h"
#include "tests/app/micro_corpus.h"

namespace tw {
namespace {

namespace fs = std::filesystem;

// ---- the toy kind: its core row and its worker row, registered before main ----

Result<std::vector<NodeRole>> twin_roles(const RunConfig&, const std::vector<NodeEndpoints>&,
                                         const std::function<int()>&) {
    std::vector<NodeRole> roles(2);
    for (int i = 0; i < 2; ++i) roles[static_cast<size_t>(i)].name = "twin-" + std::to_string(i);
    return roles;  // each a full replica 0 of 1: no mesh, no group
}

std::unique_ptr<Worker> twin_worker(const RunConfig& cfg, const NodeRole& role, WorkerParts p) {
    return make_replica_worker(cfg, role, std::move(p.mesh), std::move(p.set_abort), std::move(p.store));
}

RunKind register_twins() {
    RunKindRow r;
    r.id = next_run_kind_id();
    r.name = "twins";
    r.claims = [](const RunConfig& c) { return c.run.name == "twins"; };
    r.check = [](const RunConfig& c, std::vector<std::string>& p) {
        if (c.run.name == "twins" && c.outer.algorithm != "none") p.push_back("outer.algorithm: twins exchange nothing");
    };
    r.nodes_needed = [](const RunConfig&) { return int64_t{2}; };
    r.too_few_nodes = [](const RunConfig&, int64_t need) { return "twins need " + std::to_string(need) + " (one per twin)"; };
    r.roles = twin_roles;
    r.banner = [](const RunConfig&) { return std::string("twins, one replica trained twice,"); };
    r.survives_loss = [](const RunConfig&) { return false; };
    r.not_planned = "twins exchange nothing";
    r.not_replaced = "twins";
    const RunKind id = register_run_kind(r);
    register_run_kind_worker({id, twin_worker});
    return id;
}
const RunKind kTwins = register_twins();

// ---- the test ----

struct Collect : MetricSink {
    std::mutex mu;
    std::map<std::string, std::vector<double>> loss;  // node → train.loss by step
    void metrics(std::vector<MetricRecord> r) override {
        std::lock_guard<std::mutex> l(mu);
        for (auto& m : r)
            if (m.name == "train.loss") loss[m.node].push_back(m.value);
    }
    void event(EventRecord) override {}
};

// Runs `roles` of `cfg` through the registry, each worker on its own thread.
std::map<std::string, std::vector<double>> run_nodes(const RunConfig& cfg, const std::vector<NodeRole>& roles) {
    Collect sink;
    std::vector<std::unique_ptr<Worker>> workers;
    for (const NodeRole& r : roles) workers.push_back(unwrap(make_run_kind_worker(run_kind_of(cfg).id, cfg, r, {})));
    std::vector<WorkerControl> ctl(workers.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < workers.size(); ++i)
        threads.emplace_back([&, i] { EXPECT_TRUE(workers[i]->run(ctl[i], sink)); });
    for (auto& t : threads) t.join();
    return sink.loss;
}

TEST(ToyRunKind, TwinsRegisteredFromTheirOwnFileRunAsTheOneNodeKindDoes) {
    const fs::path root = fs::temp_directory_path() / ("tw-toy-run-kind-" + std::to_string(::getpid()));
    fs::remove_all(root);
    write_micro_corpus(root / "corpus");
    const std::string toml = "[data]\ncorpus = \"" + (root / "corpus").string() + "\"\ncache_dir = \"" +
                             (root / "cache").string() + "\"\nvocab_size = 200\n"
                             "[model]\nd_model = 32\nn_layer = 2\nn_head = 2\nseq_len = 16\n"
                             "[run]\nthreads = 1\n[cluster]\nmode = \"threads\"\n"
                             "[train]\nbatch_size = 4\nwarmup_steps = 2\nsteps = 5\neval_every = 5\neval_batches = 1\n";
    RunConfig twins = unwrap(parse_config(toml, "test", {"run.name=twins"}));
    RunConfig single = unwrap(parse_config(toml, "test", {"run.name=single"}));
    const PreparedData data = unwrap(prepare_data(twins.data));
    twins.model.vocab_size = single.model.vocab_size = data.vocab_size;

    // The registry finds the row; the row's own check speaks through validate_config.
    EXPECT_EQ(run_kind_of(twins).id, kTwins);
    EXPECT_STREQ(run_kind_of(twins).name, "twins");
    EXPECT_EQ(run_kind_of(single).id, RunKind::kReplicas);
    EXPECT_TRUE(validate_config(twins));
    RunConfig wrong = twins;
    wrong.outer.algorithm = "diloco";
    const Status refused = validate_config(wrong);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.message().find("outer.algorithm: twins exchange nothing"), std::string::npos) << refused.message();

    // Nodes, shortfall and roles.
    EXPECT_EQ(nodes_needed(twins), 2);
    const auto one = assign_roles(twins, {"inproc://twin-a"}, [] { return 0; });
    ASSERT_FALSE(one);
    EXPECT_EQ(one.message(), "the layout does not fit the cluster: too few nodes: twins need 2 (one per twin), the cluster has 1");
    const auto roles = unwrap(assign_roles(twins, {"inproc://twin-a", "inproc://twin-b"}, [] { return 0; }));
    ASSERT_EQ(roles.size(), 2u);
    EXPECT_EQ(roles[1].name, "twin-1");

    // The spares refusal names the kinds whose nodes are not replaced from their rows, this one's last.
    RunConfig spared = single;
    spared.outer.algorithm = "diloco";
    spared.outer.replicas = 2;
    spared.cluster.spares = 1;
    spared.cluster.nodes_per_replica = 2;
    std::vector<std::string> spare_problems;
    FaultSchedule::problems(spared, spare_problems);
    const std::string spares_refusal = "cluster.spares 1: spares stand in for replicas of one node only (no pipelines, "
                                       "Gloo groups, SkipPipe stage nodes, HDEE experts or twins)";
    EXPECT_NE(std::find(spare_problems.begin(), spare_problems.end(), spares_refusal), spare_problems.end())
        << (spare_problems.empty() ? std::string("no problems") : spare_problems.front());

    // The banner and the planner in the row's words.
    RunBannerFacts facts;
    facts.run_id = 7;
    facts.nodes = 2;
    EXPECT_EQ(run_banner(twins, facts).at(0),
              "run 7 \"twins\": twins, one replica trained twice, on threads (2 nodes, 1 thread each), 5 steps");
    const auto plan = plan_run(twins);
    ASSERT_FALSE(plan);
    EXPECT_EQ(plan.message(), "plan: twins runs are not planned: twins exchange nothing");

    // Both twins train as the one-node kind does, to the last bit.
    const auto twin_losses = run_nodes(twins, roles);
    const auto single_roles = unwrap(assign_roles(single, {"inproc://single"}, [] { return 0; }));
    ASSERT_EQ(single_roles.size(), 1u);
    const auto single_losses = run_nodes(single, single_roles);
    const auto& reference = single_losses.at("replica-0");
    ASSERT_EQ(reference.size(), 5u);
    EXPECT_TRUE(std::isfinite(reference.back()));
    EXPECT_EQ(twin_losses.at("twin-0"), reference);
    EXPECT_EQ(twin_losses.at("twin-1"), reference);
    fs::remove_all(root);
}

}  // namespace
}  // namespace tw
