// A toy outer algorithm added through the registry alone: "plain_average", registered by
// tests/app/plain_average.cpp; no other source file but this test names it. Everything else
// finds its rows: the config's field table and validation, the name lists, the round schedule, the
// memory estimate, the worker (a coordinated run on threads) and the planner. Checked against
// evidence of its own: the mean of the replicas' weights computed here in double precision, the
// bytes from P × 4 × (R − 1), DiLoCo with outer lr 1 and no momentum (the same update up to
// rounding), and the planner against the run's bytes and simulated clocks to the last bit.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <unistd.h>
#include <zmq.hpp>

#include "app/engine_node.h"
#include "coordinator/run_session.h"
#include "core/algorithm.h"
#include "core/assert.h"
#include "core/config_io.h"
#include "core/memory_estimate.h"
#include "core/metric_names.h"
#include "core/model_size.h"
#include "core/settings_diff.h"
#include "engine/algo/registry.h"
#include "engine/plan/planner.h"
#include "remote/zmq_collective.h"
#include "tests/engine/micro_run.h"
#include "tests/engine/replica_threads.h"

namespace tw {
namespace {

namespace fs = std::filesystem;

Algorithm plain_average() {
    auto a = parse_algorithm("plain_average");
    TW_ASSERT(a.has_value());
    return *a;
}

// A second row, registered here without a planned round cost: the planner must refuse it by name.
Result<std::unique_ptr<OuterAlgorithm>> never_built(OuterBuild) {
    return Result<std::unique_ptr<OuterAlgorithm>>::error("not built in this test");
}
// Its own functions: the order in which two files' static initialisers run is not defined, so
// this row takes nothing from plain_average's.
int64_t every_round(const RunConfig& c) { return std::max<int64_t>(1, c.outer.inner_steps); }
ExchangeMemory no_memory(const RunConfig&, int64_t params) { return {0, false, params, 0, 0}; }
AlgorithmTraits unplanned_traits() {
    AlgorithmTraits t;
    t.name = "plain_average_unplanned";
    t.summary = "a row the planner has no cost for";
    t.outer_rounds = true;
    t.topologies = {Topology::kMesh};
    t.round_period = every_round;
    t.memory = no_memory;
    return t;
}
const Algorithm kUnplanned = register_algorithm(unplanned_traits());
[[maybe_unused]] const Algorithm kUnplannedEngine = register_outer_algorithm({kUnplanned, nullptr, never_built, nullptr});

const char* kMicro = "[outer]\nalgorithm = \"plain_average\"\nreplicas = 3\ninner_steps = 4\n"
                     "[model]\nvocab_size = 53\nd_model = 32\nn_layer = 2\nn_head = 2\nseq_len = 16\n"
                     "[train]\nbatch_size = 4\nsteps = 12\n";

TEST(PlainAverage, ItsRowIsSeenByNameByTheListsAndByTheConfig) {
    const Algorithm id = plain_average();
    // The built-in algorithms keep their numbers; a registered one comes after them.
    EXPECT_EQ(static_cast<int>(Algorithm::kDeMo), 6);
    EXPECT_EQ(parse_algorithm("demo"), Algorithm::kDeMo);
    EXPECT_GE(static_cast<int>(id), kBuiltinAlgorithms);
    EXPECT_STREQ(to_string(id), "plain_average");
    EXPECT_NE(algorithm_names().find("none, ddp, diloco, sparseloco, streaming_diloco, noloco, demo, plain_average"),
              std::string::npos)
        << algorithm_names();
    const auto users = algorithms_using("outer.inner_steps");
    EXPECT_NE(std::find(users.begin(), users.end(), id), users.end());
    const FieldInfo* algo_key = config_field("outer.algorithm");
    ASSERT_NE(algo_key, nullptr);
    EXPECT_NE(std::find(algo_key->choices.begin(), algo_key->choices.end(), "plain_average"), algo_key->choices.end());
    const FieldInfo* h = config_field("outer.inner_steps");
    EXPECT_NE(std::find(h->algorithms.begin(), h->algorithms.end(), id), h->algorithms.end());
    const FieldInfo* lr = config_field("outer.lr");  // a key it does not read
    EXPECT_EQ(std::find(lr->algorithms.begin(), lr->algorithms.end(), id), lr->algorithms.end());
    EXPECT_EQ(defining_keys(id), std::vector<std::string>{"outer.inner_steps"});

    // Parsed once: the id stored next to the name; the TOML holds the name and parses back to it.
    const RunConfig cfg = parse_config(kMicro, "plain.toml").value();
    EXPECT_EQ(cfg.outer.algorithm_id, id);
    EXPECT_EQ(algorithm_of(cfg), id);
    EXPECT_EQ(cfg.outer.topology, "mesh");  // its row's default
    const std::string toml = to_toml(cfg);
    EXPECT_NE(toml.find("algorithm = 'plain_average'"), std::string::npos) << toml;
    EXPECT_EQ(parse_config(toml, "again").value().outer.algorithm_id, id);
    // A name changed in code after parsing is still read by its name, not the stale id.
    RunConfig changed = cfg;
    changed.outer.algorithm = "diloco";
    EXPECT_EQ(algorithm_of(changed), Algorithm::kDiLoCo);

    // Validation asks its traits: one node per replica, no pipelines, the mesh only, fp32 only.
    auto refused = [](const std::string& extra) {
        auto r = parse_config(std::string(kMicro) + extra, "plain.toml");
        return r ? std::string("accepted") : r.message();
    };
    EXPECT_NE(refused("[cluster]\nnodes_per_replica = 2\n").find("plain_average needs one node per replica"),
              std::string::npos);
    EXPECT_NE(refused("[cluster]\nstages = 2\n").find("not plain_average"), std::string::npos)
        << refused("[cluster]\nstages = 2\n");
    EXPECT_NE(refused("").find("accepted"), std::string::npos);
    auto ring = parse_config(kMicro, "plain.toml", {"outer.topology=\"ring\""});
    ASSERT_FALSE(ring);
    EXPECT_NE(ring.message().find("outer.topology \"ring\" does not apply to plain_average: plain_average exchanges "
                                  "over mesh only"),
              std::string::npos)
        << ring.message();
    auto hub = parse_config(kMicro, "plain.toml", {"outer.topology=\"hub\""});
    ASSERT_FALSE(hub);
    EXPECT_NE(hub.message().find("a hub relays whole payloads, which only the sparse methods (sparseloco, demo) send"),
              std::string::npos)
        << hub.message();
    auto bf16 = parse_config(kMicro, "plain.toml", {"outer.dtype=\"bf16\""});
    ASSERT_FALSE(bf16);
    EXPECT_NE(bf16.message().find("does not apply to plain_average"), std::string::npos) << bf16.message();

    // Its round schedule and its memory: every H steps; R fp32 payloads and their mean in fp32.
    EXPECT_EQ(round_period(cfg), 4);
    const NodeMemoryEstimate m = estimate_node_memory(cfg);
    EXPECT_EQ(m.outer_state_bytes, 0);
    EXPECT_EQ(m.exchange_bytes, 3 * 4 * m.params + 4 * m.params);
}

TEST(PlainAverage, AWrongOrSecondRegistrationAbortsNamingIt) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            AlgorithmTraits t = traits_of(plain_average());
            t.name = "diloco";
            register_algorithm(t);
        },
        "register_algorithm\\(\"diloco\"\\): the name is registered already");
    EXPECT_DEATH(
        {
            AlgorithmTraits t = traits_of(plain_average());
            t.name = "Plain Average";
            register_algorithm(t);
        },
        "a name is 1.*32 characters");
    EXPECT_DEATH(
        {
            AlgorithmTraits t = traits_of(plain_average());
            t.name = "no_schedule";
            t.round_period = nullptr;
            register_algorithm(t);
        },
        "no_schedule.*no round_period");
    EXPECT_DEATH(register_outer_algorithm({plain_average(), nullptr, never_built, nullptr}),
                 "\"plain_average\".*has an engine row already");
    EXPECT_DEATH(
        {
            AlgorithmTraits t = traits_of(plain_average());
            t.name = "unbuilt";
            register_outer_algorithm({register_algorithm(t), nullptr, nullptr, nullptr});
        },
        "\"unbuilt\".*builds no OuterAlgorithm");
}

// Three replicas on threads, their real training steps and rounds over a ZeroMQ mesh built by name
// through the engine's registry: after each round every replica holds the mean of what the three
// held before it.
TEST(PlainAverage, EachRoundReplacesEveryReplicasWeightsByTheirMean) {
    RunConfig c = testing_support::micro_run(53, 8);
    c.outer = parse_config(kMicro, "plain.toml").value().outer;
    c.outer.inner_steps = 3;
    const int R = 3;
    const int64_t steps = 7;  // rounds after steps 3 and 6
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps;
    for (int r = 0; r < R; ++r) eps.push_back("inproc://plain-average-" + std::to_string(r));
    // [replica][round]: the weights before and after it, the bytes it sent.
    std::vector<std::vector<torch::Tensor>> before(R), after(R);
    std::vector<std::vector<uint64_t>> sent(R);
    std::vector<std::vector<int64_t>> synced_at(R);
    int64_t P = 0;
    testing_support::expect_no_errors(testing_support::on_threads(R, [&](int r) -> std::string {
        auto coll = ZmqCollective::create(ctx, eps, r, 20000).value();
        auto t = testing_support::synthetic_trainer(c, r, R);
        auto params = t.model()->parameters();
        if (r == 0) P = testing_support::flatten_copy(params).numel();
        auto algo = make_outer_algorithm(c, params, testing_support::param_names(t), r, R);
        if (!algo) return algo.message();
        if ((*algo)->name() != "plain_average") return "built " + (*algo)->name();
        for (int64_t s = 1; s <= steps; ++s) {
            (void)t.step();
            const torch::Tensor was = testing_support::flatten_copy(params);
            auto rep = (*algo)->after_step(s, *coll, 0.0);
            if (!rep) return rep.message();
            if (rep->synced != (*algo)->round_at(s)) return "round_at disagrees at step " + std::to_string(s);
            if (!rep->synced) {
                if (!torch::equal(was, testing_support::flatten_copy(params))) return "weights moved off a round";
                continue;
            }
            synced_at[r].push_back(s);
            before[r].push_back(was);
            after[r].push_back(testing_support::flatten_copy(params));
            sent[r].push_back(rep->bytes_sent);
            if (auto h = agree_on_round(**algo, *coll); !h) return h.message();
        }
        return "";
    }));
    ASSERT_GT(P, 0);
    for (int r = 0; r < R; ++r) {
        // The row's schedule: every round_period steps.
        EXPECT_EQ(synced_at[r], (std::vector<int64_t>{round_period(c), 2 * round_period(c)})) << r;
        for (uint64_t b : sent[r]) EXPECT_EQ(b, static_cast<uint64_t>((R - 1) * P * 4)) << r;
    }
    for (size_t k = 0; k < 2; ++k) {
        torch::Tensor mean = torch::zeros({P}, torch::kFloat64);
        for (int r = 0; r < R; ++r) mean += before[r][k].to(torch::kFloat64);
        mean /= R;
        // The replicas had drifted apart; each now holds the mean, all of them the same bits.
        EXPECT_FALSE(torch::equal(before[0][k], before[1][k]));
        for (int r = 0; r < R; ++r) {
            EXPECT_TRUE(torch::equal(after[r][k], after[0][k])) << "replica " << r << ", round " << k;
            const double err = (after[r][k].to(torch::kFloat64) - mean).abs().max().item<double>();
            EXPECT_LT(err, 1e-6) << "replica " << r << ", round " << k;
        }
    }
}

TEST(PlainAverage, ThePlannerCostsItsRoundsAndRefusesARowWithoutCostByName) {
    RunConfig cfg = parse_config(kMicro, "plain.toml").value();
    auto plan = plan_run(cfg);
    ASSERT_TRUE(plan) << plan.message();
    const int64_t P = count_parameters(cfg.model);
    EXPECT_EQ(plan->params, P);
    ASSERT_EQ(plan->nodes.size(), 3u);
    for (const PlannedNode& n : plan->nodes) {
        EXPECT_EQ(n.rounds, 3);  // 12 steps, H = 4
        EXPECT_EQ(n.round_bytes, static_cast<uint64_t>(2 * P * 4));
        EXPECT_EQ(n.total_bytes, 3 * n.round_bytes);
        EXPECT_GT(n.exposed_s, 0);
    }

    cfg.outer.algorithm = "plain_average_unplanned";
    auto refused = plan_run(cfg);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.message().find("outer.algorithm \"plain_average_unplanned\" has no planned round cost"),
              std::string::npos)
        << refused.message();
}

// The micro corpus of tests/app/micro_corpus.sh.
void write_corpus(const fs::path& dir) {
    fs::create_directories(dir);
    for (int i = 10; i <= 39; ++i) {
        std::ofstream f(dir / ("doc" + std::to_string(i) + ".txt"));
        for (int j = 1; j <= 40; ++j)
            f << "Document " << i << " line " << j << ": the quick brown fox " << (i * j % 7)
              << " jumps over the lazy dog while it rains " << (j % 5) << " times.\n";
    }
}

// A coordinated run on threads, as `thinwire run` starts it: the worker builds it through the
// registry and runs its rounds; the flops clock makes the run's simulated time the planner's.
TEST(PlainAverage, TrainsOnThreadsAsPlannedAndAsDiLoCoWithoutItsOuterStep) {
    const fs::path root = fs::temp_directory_path() / ("tw-plain-average-" + std::to_string(::getpid()));
    fs::remove_all(root);
    write_corpus(root / "corpus");
    const std::string dir = fs::canonical(root).string();
    const std::string toml = "[data]\ncorpus = \"corpus\"\ncache_dir = \"cache\"\nvocab_size = 200\n"
                             "[model]\nd_model = 32\nn_layer = 2\nn_head = 2\nseq_len = 32\n"
                             "[train]\nbatch_size = 4\nwarmup_steps = 2\neval_every = 10\nsteps = 12\n"
                             "[outer]\nreplicas = 2\ninner_steps = 4\ntopology = \"mesh\"\n"
                             "[network]\nprofile = \"home-20m\"\n"
                             "[compute]\nmodel = \"flops\"\nhardware = \"a100\"\n[cluster]\nmode = \"threads\"\n";
    const RunConfig plain = parse_config(toml, "plain.toml", {"outer.algorithm=\"plain_average\""}).value();
    const RunConfig diloco =
        parse_config(toml, "diloco.toml", {"outer.algorithm=\"diloco\"", "outer.lr=1.0", "outer.momentum=0.0"}).value();
    std::vector<SessionResult> results;
    for (const RunConfig& cfg : {plain, diloco}) {
        Session s(cfg, dir + "/runs.db", "g", cli::engine_hooks(""), dir, /*print_progress=*/false);
        results.push_back(s.wait());
        ASSERT_EQ(results.back().status, RunStatus::kFinished) << cfg.outer.algorithm << ": " << results.back().reason;
    }
    RunConfig planned_cfg = plain;
    planned_cfg.model.vocab_size = 200;
    const Plan plan = plan_run(planned_cfg).value();
    const int64_t P = plan.params;
    ASSERT_EQ(plan.nodes.size(), 2u);
    for (const PlannedNode& n : plan.nodes) {
        const WorkerSummary& run = results[0].summary.at(n.name);
        const WorkerSummary& ref = results[1].summary.at(n.name);
        // Three rounds of P fp32 values to the other replica, plus the start-up weight check
        // (8 bytes to each other replica), as the plan says and as DiLoCo's mesh sends them.
        EXPECT_EQ(n.total_bytes, static_cast<uint64_t>(3 * P * 4)) << n.name;
        EXPECT_EQ(run.at(metric::kBytesOuterSent), static_cast<double>(n.total_bytes + 8)) << n.name;
        EXPECT_EQ(run.at(metric::kBytesOuterSent), ref.at(metric::kBytesOuterSent)) << n.name;
        // The run's simulated clock is the plan's to the last bit.
        EXPECT_EQ(run.at(summary::kSimS), n.sim_s) << n.name;
        // DiLoCo with η = 1 and μ = 0 steps θ ← θ − mean(θ − θ_r), the mean up to rounding.
        EXPECT_NEAR(run.at(metric::kTrainLoss), ref.at(metric::kTrainLoss), 1e-3) << n.name;
        EXPECT_EQ(run.at(summary::kSteps), 12) << n.name;
    }
    EXPECT_NEAR(results[0].summary.at("replica-0").at(metric::kValLoss),
                results[1].summary.at("replica-0").at(metric::kValLoss), 1e-3);
    fs::remove_all(root);
}

}  // namespace
}  // namespace tw
