// SkipPipe as a node run (engine/worker/skippipe_worker.h, docs/methods.md §8): S·N = 3×2 workers on
// threads over an inproc data-plane mesh, on the micro corpus. Checked against the schedule every
// node computes (core/skippipe.h SkipPipeTiming) and the one-process form (engine/train/skippipe_step.h):
// every micro-batch visits its path's stages and nodes in order (forwards, head, backwards), the loss
// and validation losses are the one-process computation's, the stage-sync and stage-link bytes are
// the formulas', and the clock is skippipe_clocks'.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <zmq.hpp>

#include "core/config_io.h"
#include "core/layout.h"
#include "core/skippipe.h"
#include "engine/data/dataset.h"
#include "engine/model/llama.h"
#include "engine/train/schedule.h"
#include "engine/train/skippipe_step.h"
#include "engine/train/trainer.h"
#include "engine/worker/skippipe_worker.h"
#include "remote/zmq_collective.h"
#include "tests/app/micro_corpus.h"

namespace tw {
namespace {

namespace fs = std::filesystem;

struct Collect : MetricSink {
    std::mutex mu;
    std::vector<MetricRecord> rows;
    std::vector<std::string> events;
    void metrics(std::vector<MetricRecord> r) override {
        std::lock_guard<std::mutex> l(mu);
        rows.insert(rows.end(), r.begin(), r.end());
    }
    void event(EventRecord e) override {
        std::lock_guard<std::mutex> l(mu);
        events.push_back(e.node + ": " + e.text);
    }
    // The value of `name` at `step` on `node`; NaN when absent.
    double at(const std::string& node, const std::string& name, int64_t step) const {
        for (auto& r : rows)
            if (r.node == node && r.name == name && r.step == step) return r.value;
        return NAN;
    }
};

struct Op {
    SkipOpRecord r;
    int64_t seq;
};

TEST(SkipPipeNodes, ScheduleLossBytesAndClockOfThreeByTwoNodes) {
    const fs::path root = fs::temp_directory_path() / ("tw-skippipe-nodes-" + std::to_string(::getpid()));
    fs::remove_all(root);
    write_micro_corpus(root / "corpus");
    const std::string toml = "[data]\ncorpus = \"" + (root / "corpus").string() + "\"\ncache_dir = \"" +
                             (root / "cache").string() + "\"\nvocab_size = 200\n"
                             "[model]\nd_model = 32\nn_layer = 3\nn_head = 2\nseq_len = 16\n"
                             "[run]\nthreads = 1\n"
                             "[train]\nbatch_size = 4\nwarmup_steps = 2\nsteps = 4\neval_every = 2\neval_batches = 2\n"
                             "[skippipe]\nstages = 3\nreplicas = 2\nmicro_batches = 2\npath_stages = 2\nmax_swaps = 1\n"
                             "block_s = [1e-3, 2e-3]\nhead_s = [2e-3, 3e-3]\neval_paths = [[0, 2]]\n";
    RunConfig cfg = unwrap(parse_config(toml, "test"));
    PreparedData data = unwrap(prepare_data(cfg.data));
    cfg.model.vocab_size = data.vocab_size;
    const int S = 3, N = 2, m = 2, L = 2;
    const int64_t b = 2, T = 16, d = 32;

    // The mesh and the workers, node (s, n) at n·S + s.
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> control;
    for (int i = 0; i < S * N; ++i) control.push_back("inproc://skippipe-test-" + std::to_string(i));
    auto roles = unwrap(assign_roles(cfg, control, [] { return 0; }));
    ASSERT_EQ(roles.size(), 6u);
    EXPECT_EQ(roles[4].name, "replica-1.1");
    EXPECT_EQ(roles[4].kind, NodeKind::kSkipPipe);
    std::mutex mu;
    std::vector<Op> ops;
    std::atomic<int64_t> seq{0};
    std::vector<std::unique_ptr<Worker>> workers;
    for (int i = 0; i < S * N; ++i) {
        auto mesh = unwrap(ZmqCollective::create(ctx, roles[static_cast<size_t>(i)].mesh_endpoints, i, 120000));
        workers.push_back(make_skippipe_worker(cfg, roles[static_cast<size_t>(i)], std::move(mesh), {},
                                               [&](const SkipOpRecord& r) {
                                                   std::lock_guard<std::mutex> l(mu);
                                                   ops.push_back({r, seq++});
                                               }));
    }
    Collect sink;
    std::vector<std::string> errors(workers.size());
    std::vector<std::thread> threads;
    std::vector<WorkerControl> ctl(workers.size());
    for (size_t i = 0; i < workers.size(); ++i)
        threads.emplace_back([&, i] {
            auto r = workers[i]->run(ctl[i], sink);
            if (!r) errors[i] = r.message();
        });
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < errors.size(); ++i) ASSERT_EQ(errors[i], "") << roles[i].name;

    // The schedules every node computed, recomputed here.
    const NetworkProfile net = unwrap(network_profile(cfg.network));
    const SkipPipeTiming timing = unwrap(SkipPipeTiming::create(cfg, net, {1e-3, 2e-3}, {2e-3, 3e-3}));
    std::vector<SkipStepTiming> steps;
    for (int64_t t = 0; t < cfg.train.steps; ++t) steps.push_back(unwrap(timing.step(t)));

    // 1. Every micro-batch ran F on each visit's node in path order, the head on its stage-0 node,
    //    then B in reverse order; an op's sequence number is taken before its output leaves.
    ASSERT_EQ(ops.size(), static_cast<size_t>(cfg.train.steps * N * m * (2 * L + 1)));
    for (int64_t t = 0; t < cfg.train.steps; ++t)
        for (int k = 0; k < N * m; ++k) {
            const SkipPath& p = steps[static_cast<size_t>(t)].schedule.paths[static_cast<size_t>(k)];
            std::vector<const Op*> chain(static_cast<size_t>(2 * L + 1), nullptr);
            for (const Op& o : ops)
                if (o.r.step == t && o.r.path == k) {
                    const int depth = o.r.kind == 'F' ? o.r.visit : o.r.kind == 'H' ? L : 2 * L - o.r.visit;
                    ASSERT_EQ(chain[static_cast<size_t>(depth)], nullptr) << "op ran twice";
                    chain[static_cast<size_t>(depth)] = &o;
                }
            for (int depth = 0; depth <= 2 * L; ++depth) {
                const Op* o = chain[static_cast<size_t>(depth)];
                ASSERT_NE(o, nullptr) << "step " << t << " path " << k << " depth " << depth << " never ran";
                if (depth > 0) {
                    EXPECT_GT(o->seq, chain[static_cast<size_t>(depth - 1)]->seq);
                }
                const int visit = depth < L ? depth : depth == L ? -1 : 2 * L - depth;
                if (visit < 0) {
                    EXPECT_EQ(o->r.stage, 0);
                    EXPECT_EQ(o->r.node, p.replica);
                } else {
                    EXPECT_EQ(o->r.stage, p.visits[static_cast<size_t>(visit)].stage) << "step " << t << " path " << k;
                    EXPECT_EQ(o->r.node, p.visits[static_cast<size_t>(visit)].node) << "step " << t << " path " << k;
                }
            }
        }

    // 2. The one-process form on the same windows and schedules: one whole model, every micro-batch's
    //    gradient accumulated, then clip and AdamW.
    const uint64_t seed = static_cast<uint64_t>(cfg.run.seed);
    auto reference = [&](bool full_paths, std::vector<double>& losses) {
        Llama model(cfg.model, seed);
        auto optim = make_adamw(model, cfg.train);
        WindowLoader train(data.train, select_spans(data, false, cfg.data.genres), T, N * cfg.train.batch_size, seed);
        for (int64_t t = 0; t < cfg.train.steps; ++t) {
            const torch::Tensor batch = train.batch(t);
            std::vector<torch::Tensor> windows;
            std::vector<std::vector<int64_t>> paths;
            for (int k = 0; k < N * m; ++k) {
                windows.push_back(batch.narrow(0, k * b, b));
                paths.push_back(full_paths ? std::vector<int64_t>{0, 1, 2}
                                           : path_stages_of(steps[static_cast<size_t>(t)].schedule.paths[static_cast<size_t>(k)]));
            }
            const auto& tc = cfg.train;
            losses.push_back(skippipe_step(model, *optim, windows, paths, S,
                                           lr_at(t, tc.steps, tc.lr, tc.warmup_steps, tc.min_lr_frac), tc.grad_clip)
                                 .loss);
        }
        return model;
    };
    std::vector<double> ref, ref_full;
    Llama model = reference(false, ref);
    reference(true, ref_full);
    // fp32 summation order: the node form sums each holder's accumulated gradient (its micro-batches
    // in its execution order) and then the N holders, the one-process form all N·m micro-batches in
    // path order; the clip norm is a double sum here and an fp32 one there. On this model the losses
    // agree to 1.2e-7 after 4 steps (one fp32 ulp of a loss near 5 is 4.8e-7); 2e-6 leaves room for
    // other BLAS builds, and is far below what a wrong path costs (full-path training differs by more
    // than 50 × that from step 2 on).
    constexpr double kTol = 2e-6;
    double worst = 0;
    for (int64_t t = 0; t < cfg.train.steps; ++t) {
        const double node_loss = (sink.at("replica-0.0", "train.loss", t + 1) + sink.at("replica-1.0", "train.loss", t + 1)) / 2;
        EXPECT_NEAR(node_loss, ref[static_cast<size_t>(t)], kTol) << "step " << t + 1;
        worst = std::max(worst, std::fabs(node_loss - ref[static_cast<size_t>(t)]));
        if (t >= 1) {
            EXPECT_GT(std::fabs(node_loss - ref_full[static_cast<size_t>(t)]), 50 * kTol) << "step " << t + 1;
        }
    }
    std::printf("largest train.loss difference against the one-process form: %.3g\n", worst);
    const WindowLoader val(data.val, select_spans(data, true, cfg.data.genres), T, cfg.train.batch_size, seed);
    EXPECT_NEAR(sink.at("replica-0.0", "val.loss", 4), evaluate_path(model, val, 2, {0, 1, 2}, S), kTol);
    EXPECT_NEAR(sink.at("replica-0.0", "val.loss.path_0_2", 4), evaluate_path(model, val, 2, {0, 2}, S), kTol);
    EXPECT_FALSE(std::isnan(sink.at("replica-0.0", "val.loss", 2)));  // eval_every 2

    // 3. Bytes: each holder of a visited stage sends (N − 1)·4·P_s per step on the intra link (P_s
    //    counted on the stage module itself); on the stage link every op's output, b·T·d·4 bytes, plus
    //    its squared norm to the replica's S − 1 other stages (8 B each).
    for (int i = 0; i < S * N; ++i) {
        const int s = i % S, n = i / S;
        Llama stage(cfg.model, seed, skippipe_stage_spec(cfg.model, s, S));
        const uint64_t P = static_cast<uint64_t>(stage->num_parameters());
        EXPECT_EQ(P, static_cast<uint64_t>(skip_stage_parameters(cfg.model, S)[static_cast<size_t>(s)]));
        uint64_t intra = 0, stage_bytes = 0;
        for (int64_t t = 0; t < cfg.train.steps; ++t) {
            const SkipStepTiming& st = steps[static_cast<size_t>(t)];
            if (st.visited[static_cast<size_t>(s)]) intra += (N - 1) * 4 * P;
            stage_bytes += 8 * (S - 1);
            for (const Op& o : ops)
                if (o.r.step == t && o.r.stage == s && o.r.node == n && !(o.r.kind == 'B' && o.r.visit == 0))
                    stage_bytes += static_cast<uint64_t>(b * T * d * 4);
        }
        EXPECT_EQ(sink.at(roles[static_cast<size_t>(i)].name, "bytes.intra.sent", 4), static_cast<double>(intra)) << roles[i].name;
        EXPECT_EQ(sink.at(roles[static_cast<size_t>(i)].name, "bytes.stage.sent", 4), static_cast<double>(stage_bytes)) << roles[i].name;
    }

    // 4. The clock: makespan plus stage sync per step, as `runs retime` replays it.
    const auto clocks = unwrap(skippipe_clocks(cfg, net, {1e-3, 2e-3}, {2e-3, 3e-3}, 4));
    for (auto& r : sink.rows) {
        if (r.name == "train.compute_s") {
            EXPECT_EQ(r.sim_s, clocks[static_cast<size_t>(r.step - 1)]) << r.node;
        }
    }
    fs::remove_all(root);
}

}  // namespace
}  // namespace tw
