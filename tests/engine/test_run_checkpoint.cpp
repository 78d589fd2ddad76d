// Run-scoped checkpoints (engine/worker/run_checkpoint.h): the due schedule, a node's progress
// (clock with overlapped rounds still due, byte counters, losses) and named state through a file
// and back, training continued bit-identically from it, the files a node keeps, and errors.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include <zmq.hpp>

#include "engine/algo/outer.h"
#include "engine/train/trainer.h"
#include "engine/worker/run_checkpoint.h"
#include "remote/zmq_collective.h"
#include "tests/engine/micro_run.h"
#include "tests/engine/replica_threads.h"

namespace tw {
namespace {
namespace fs = std::filesystem;

struct Folder {
    Folder() {
        static int n = 0;
        root = (fs::path(::testing::TempDir()) / ("tw_run_ckpt_" + std::to_string(getpid()) + "_" + std::to_string(n++))).string();
        fs::remove_all(root);
    }
    ~Folder() { fs::remove_all(root); }
    std::string root;
};

RunConfig cfg_in(const std::string& cache_dir, int64_t every) {
    RunConfig c = testing_support::micro_run(56, 100);
    c.data.cache_dir = cache_dir;
    c.train.ckpt_every = every;
    return c;
}

NodeRole role(const std::string& run, int64_t resume = -1) {
    NodeRole r;
    r.name = "replica-0";
    r.checkpoint_run = run;
    r.resume_step = resume;
    return r;
}

TEST(RunCheckpoint, DueAtTheFirstRoundBoundaryAtOrAfterEachMultiple) {
    Folder f;
    RunCheckpoints ck(cfg_in(f.root, 25), role("run-1-ab"));
    ASSERT_TRUE(ck.enabled());
    EXPECT_FALSE(ck.due(24, true));
    EXPECT_FALSE(ck.due(25, false));  // H = 10: 25 is inside a round
    EXPECT_TRUE(ck.due(30, true));
    EXPECT_FALSE(RunCheckpoints(cfg_in(f.root, 0), role("run-1-ab")).enabled());
    EXPECT_FALSE(RunCheckpoints(cfg_in(f.root, 25), role("")).enabled());
    EXPECT_EQ(ck.path_of(30), f.root + "/checkpoints/run-1-ab/replica-0.step-30.ckpt");
}

TEST(RunCheckpoint, ProgressAndStateRoundTripAndTrainingContinuesBitIdentically) {
    Folder f;
    const RunConfig c = cfg_in(f.root, 4);
    Trainer a = testing_support::synthetic_trainer(c, 0, 1);
    for (int i = 0; i < 4; ++i) a.step();
    RunCheckpoints writer(c, role("run-7-x"));
    NodeProgress p;
    p.step = a.step_index();
    p.outer_step = 3;
    p.clock = {12.5, 10.25, 2.25, 1.5, 12.0, {{6, 13.75}, {6, 14.0}, {9, 20.5}}};
    p.bytes.sent_bytes[2] = 123456789012ull;
    p.bytes.recv_msgs[0] = 7;
    p.last_loss = 3.25;
    const NamedTensors state = {{"global.0", torch::arange(6, torch::kFloat32).reshape({2, 3})},
                                {"momentum.0", torch::full({3}, 0.5, torch::kFloat64)}};
    auto w = writer.save(p, *a.model(), a.optimizer(), state, "00000000000000ff");
    ASSERT_TRUE(w.is_ok()) << w.message();
    EXPECT_GT(w->bytes, 0);
    EXPECT_TRUE(fs::exists(w->path));
    EXPECT_FALSE(fs::exists(w->path + ".tmp"));
    EXPECT_TRUE(writer.holds(4));
    EXPECT_FALSE(writer.due(7, true));
    EXPECT_TRUE(writer.due(8, true));

    std::vector<double> straight;
    for (int i = 0; i < 4; ++i) straight.push_back(a.step().loss);

    Trainer b = testing_support::synthetic_trainer(c, 0, 1);
    RunCheckpoints reader(c, role("run-7-x", 4));
    auto l = reader.load(*b.model(), b.optimizer());
    ASSERT_TRUE(l.is_ok()) << l.message();
    const NodeProgress& q = l->progress;
    EXPECT_EQ(q.step, 4);
    EXPECT_EQ(q.outer_step, 3);
    EXPECT_EQ(q.clock.now_s, 12.5);
    EXPECT_EQ(q.clock.uplink_free_s, 12.0);
    EXPECT_EQ(q.clock.due, p.clock.due);
    EXPECT_EQ(q.bytes.sent_bytes[2], 123456789012ull);
    EXPECT_EQ(q.bytes.recv_msgs[0], 7u);
    EXPECT_EQ(q.last_loss, 3.25);
    EXPECT_TRUE(std::isnan(q.last_val));
    ASSERT_EQ(l->outer_state.size(), 2u);
    EXPECT_EQ(l->outer_state[0].first, "global.0");
    EXPECT_TRUE(torch::equal(l->outer_state[0].second, state[0].second));
    EXPECT_EQ(l->outer_state[1].first, "momentum.0");
    EXPECT_TRUE(torch::equal(l->outer_state[1].second, state[1].second));
    EXPECT_TRUE(reader.holds(4));
    EXPECT_TRUE(reader.due(8, true));  // the schedule goes on as the writer's did

    b.set_step_index(q.step);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(b.step().loss, straight[static_cast<size_t>(i)]) << "step " << 5 + i;
    auto pa = a.model()->parameters(), pb = b.model()->parameters();
    for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << "parameter " << i;
}

TEST(RunCheckpoint, ANodeKeepsItsNewestFilesOnly) {
    Folder f;
    const RunConfig c = cfg_in(f.root, 1);
    Trainer t = testing_support::synthetic_trainer(c, 0, 1);
    RunCheckpoints ck(c, role("run-2-k"));
    NodeRole other = role("run-2-k");
    other.name = "replica-0.1";  // a prefix-sharing neighbour's files are not this node's
    RunCheckpoints neighbour(c, other);
    NodeProgress p;
    p.step = 1;
    ASSERT_TRUE(neighbour.save(p, *t.model(), t.optimizer(), {}, "").is_ok());
    for (int64_t s = 1; s <= 5; ++s) {
        p.step = s;
        ASSERT_TRUE(ck.save(p, *t.model(), t.optimizer(), {}, "").is_ok());
    }
    for (int64_t s = 1; s <= 5; ++s) EXPECT_EQ(fs::exists(ck.path_of(s)), s > 5 - RunCheckpoints::kKeep) << s;
    EXPECT_TRUE(fs::exists(neighbour.path_of(1)));
}

TEST(RunCheckpoint, MissingOrForeignFilesAreNamedErrors) {
    Folder f;
    const RunConfig c = cfg_in(f.root, 5);
    Trainer t = testing_support::synthetic_trainer(c, 0, 1);
    RunCheckpoints missing(c, role("run-3-m", 10));
    auto l = missing.load(*t.model(), t.optimizer());
    ASSERT_FALSE(l.is_ok());
    EXPECT_NE(l.message().find("no checkpoint " + missing.path_of(10)), std::string::npos) << l.message();
    // A one-node file (engine/train/checkpoint.h without the node's progress) is not a run's.
    fs::create_directories(fs::path(missing.path_of(10)).parent_path());
    ASSERT_TRUE(save_checkpoint(missing.path_of(10), *t.model(), t.optimizer(), {10, ""}).is_ok());
    l = missing.load(*t.model(), t.optimizer());
    ASSERT_FALSE(l.is_ok());
    EXPECT_NE(l.message().find("is not a node checkpoint of a run"), std::string::npos) << l.message();
}

// Two replicas on threads: `before` steps of the algorithm, then (when `save` holds a folder) a
// run checkpoint per replica with the algorithm's state; or, when `resume_at` >= 0, each replica
// first loads its checkpoint of that step. Then steps to `end`. Returns replica r's losses of the
// steps after the checkpoint and its final weights.
struct Leg {
    std::vector<double> losses;
    std::vector<torch::Tensor> weights;
};
std::vector<Leg> two_replicas(const RunConfig& c, int64_t before, int64_t end, int64_t resume_at, const std::string& tag) {
    const int R = 2;
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps{"inproc://ckpt-" + tag + "-0", "inproc://ckpt-" + tag + "-1"};
    std::vector<Leg> out(R);
    auto errors = testing_support::on_threads(R, [&](int r) -> std::string {
        auto mesh = ZmqCollective::create(ctx, eps, r);
        if (!mesh) return mesh.message();
        Trainer t(c, WindowLoader(testing_support::synthetic_tokens(), {{0, 30000}}, 16, 4, 1, r, R),
                  WindowLoader(testing_support::synthetic_tokens(), {{0, 30000}}, 16, 4, 2));
        auto algo = make_outer_algorithm(c, t.model()->parameters(), testing_support::param_names(t), r, R);
        if (!algo) return algo.message();
        NodeRole role;
        role.name = "replica-" + std::to_string(r);
        role.checkpoint_run = "run-1-" + tag;
        role.resume_step = resume_at;
        RunCheckpoints ck(c, role);
        if (resume_at >= 0) {
            auto l = ck.load(*t.model(), t.optimizer());
            if (!l) return l.message();
            if (Status st = (*algo)->load_state(l->outer_state); !st) return st.message();
            t.set_step_index(l->progress.step);
        }
        for (int64_t s = t.step_index() + 1; s <= end; ++s) {
            const double loss = t.step().loss;
            auto rep = (*algo)->after_step(s, **mesh, 0);
            if (!rep) return rep.message();
            if (s > before) out[r].losses.push_back(loss);
            if (s == before && resume_at < 0) {
                NodeProgress p;
                p.step = s;
                auto w = ck.save(p, *t.model(), t.optimizer(), (*algo)->save_state(), "");
                if (!w) return w.message();
            }
        }
        for (auto& p : t.model()->parameters()) out[r].weights.push_back(p.detach().clone());
        return "";
    });
    testing_support::expect_no_errors(errors);
    return out;
}

// The outer algorithms' state through a run checkpoint file and back: a run resumed
// from it continues every replica's losses and weights bit for bit.
TEST(RunCheckpoint, EveryOuterAlgorithmResumesBitIdentically) {
    for (const char* name : {"diloco", "sparseloco", "streaming_diloco", "noloco", "demo"}) {
        SCOPED_TRACE(name);
        Folder f;
        RunConfig c = cfg_in(f.root, 4);
        c.outer.algorithm = name;
        c.outer.replicas = 2;
        c.outer.inner_steps = 4;
        c.outer.fragments = 2;       // streaming: fragment rounds at steps 2 and 4 ...
        c.outer.overlap_steps = 1;   // ... each applied a step later: one is in flight at the checkpoint
        c.outer.topology = "mesh";
        c.outer.demo_chunk = 8;
        c.outer.demo_topk = 4;
        c.outer.topk_chunk = 8;
        c.outer.topk_k = 4;
        const auto straight = two_replicas(c, 4, 12, -1, std::string("a-") + name);
        const auto resumed = two_replicas(c, 4, 12, 4, std::string("a-") + name);
        for (int r = 0; r < 2; ++r) {
            ASSERT_EQ(straight[r].losses.size(), 8u);
            EXPECT_EQ(resumed[r].losses, straight[r].losses) << "replica " << r;
            ASSERT_EQ(resumed[r].weights.size(), straight[r].weights.size());
            for (size_t i = 0; i < straight[r].weights.size(); ++i)
                EXPECT_TRUE(torch::equal(resumed[r].weights[i], straight[r].weights[i])) << "replica " << r << " tensor " << i;
        }
    }
}

}  // namespace
}  // namespace tw
