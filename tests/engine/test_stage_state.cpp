// A pipeline run's node state beside its model (engine/worker/stage_state.h): every part through
// a run checkpoint file and back into other live tensors and algorithms, and a file of another
// stage, of a node without that state, or with a name missing, added, doubled or reshaped, each a
// named error. A SkipPipe node's state likewise (engine/worker/skippipe_state.h).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "engine/algo/outer.h"
#include "engine/train/trainer.h"
#include "engine/worker/run_checkpoint.h"
#include "engine/worker/skippipe_state.h"
#include "engine/worker/stage_state.h"
#include "tests/engine/micro_run.h"
#include "tests/engine/replica_threads.h"

namespace tw {
namespace {
namespace fs = std::filesystem;

// One node's parts, built from `seed`: a stage slice (SparseLoCo over two tensors, so global
// weights, momentum-free outer step and error feedback), T_fixed, a reparam writer's Z and the
// embedding's shadow with its own algorithm. Different seeds give different values, same shapes.
struct Node {
    Node(int64_t stage, uint64_t seed) {
        torch::manual_seed(seed);
        cfg = testing_support::micro_run(56, 100);
        cfg.outer.algorithm = "sparseloco";
        cfg.outer.replicas = 2;
        cfg.outer.topk_chunk = 8;
        cfg.outer.topk_k = 4;
        params = {torch::randn({8, 8}), torch::randn({16})};
        auto a = make_outer_algorithm(cfg, params, {"layers.0.w", "norm"}, 0, 2);
        EXPECT_TRUE(a.is_ok()) << a.message();
        algo = std::move(*a);
        t_fixed = torch::randn({56, 32});
        reparam.push_back({"layers.0.wo", torch::randn({32, 32}), torch::randn({4, 32}).requires_grad_(), torch::randn({32, 4})});
        shadow_emb = torch::randn({56, 32});
        auto s = make_outer_algorithm(cfg, {shadow_emb}, {"tok_emb"}, 0, 2);
        EXPECT_TRUE(s.is_ok()) << s.message();
        shadow = std::move(*s);
        parts.slices = {{stage, algo.get()}};
        parts.t_fixed = t_fixed;
        parts.reparam = &reparam;
        parts.shadow_emb = shadow_emb;
        parts.shadow = shadow.get();
    }
    RunConfig cfg;
    std::vector<torch::Tensor> params;
    std::unique_ptr<OuterAlgorithm> algo, shadow;
    torch::Tensor t_fixed, shadow_emb;
    std::vector<ReparamWriter> reparam;
    StageStateParts parts;
};

void expect_same(const NamedTensors& a, const NamedTensors& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].first, b[i].first);
        EXPECT_TRUE(torch::equal(a[i].second, b[i].second)) << a[i].first;
    }
}

std::string load_error(const NamedTensors& saved, const StageStateParts& parts) {
    Status st = load_stage_state(saved, parts);
    return st ? std::string() : st.message();
}

TEST(StageState, EveryPartThroughARunCheckpointAndBackInPlace) {
    const std::string root = (fs::path(::testing::TempDir()) / ("tw_stage_state_" + std::to_string(getpid()))).string();
    fs::remove_all(root);
    Node a(1, 1), b(1, 2);
    const NamedTensors saved = save_stage_state(a.parts);
    EXPECT_EQ(saved.front().first, "stages");
    bool has[4] = {};
    for (auto& [name, t] : saved)
        has[0] |= name.rfind("stage.1/", 0) == 0, has[1] |= name == "t_fixed", has[2] |= name == "reparam/layers.0.wo",
            has[3] |= name.rfind("shadow/", 0) == 0;
    for (bool h : has) EXPECT_TRUE(h);

    RunConfig c = testing_support::micro_run(56, 100);
    c.data.cache_dir = root;
    c.train.ckpt_every = 4;
    NodeRole role;
    role.name = "replica-0.1";
    role.checkpoint_run = "run-1-stage";
    Trainer t = testing_support::synthetic_trainer(c, 0, 1);
    RunCheckpoints writer(c, role);
    NodeProgress p;
    p.step = 4;
    ASSERT_TRUE(writer.save(p, *t.model(), t.optimizer(), saved, "").is_ok());
    role.resume_step = 4;
    RunCheckpoints reader(c, role);
    auto l = reader.load(*t.model(), t.optimizer());
    ASSERT_TRUE(l.is_ok()) << l.message();

    const torch::Tensor t_fixed_storage = b.t_fixed, z_storage = b.reparam[0].z;
    ASSERT_FALSE(torch::equal(b.t_fixed, a.t_fixed));  // b starts elsewhere
    ASSERT_FALSE(torch::equal(b.algo->eval_params()[0], a.algo->eval_params()[0]));
    Status st = load_stage_state(l->outer_state, b.parts);
    ASSERT_TRUE(st.is_ok()) << st.message();
    expect_same(save_stage_state(b.parts), saved);
    // In place: the model, codecs and algorithms holding these tensors see the loaded values.
    EXPECT_TRUE(torch::equal(t_fixed_storage, a.t_fixed));
    EXPECT_TRUE(torch::equal(z_storage, a.reparam[0].z));
    EXPECT_TRUE(b.reparam[0].z.requires_grad());
    EXPECT_TRUE(torch::equal(b.shadow_emb, a.shadow_emb));
    fs::remove_all(root);
}

TEST(StageState, AnotherStagesOrAMalformedStateIsANamedError) {
    Node a(1, 1), here(0, 2);
    const NamedTensors saved = save_stage_state(a.parts);
    std::string e = load_error(saved, here.parts);
    EXPECT_NE(e.find("a checkpoint of stage(s) 1; this node holds stage(s) 0"), std::string::npos) << e;

    Node b(1, 3);
    // Not a pipeline node's: no "stages".
    e = load_error({{"global.0", torch::zeros({8, 8})}}, b.parts);
    EXPECT_NE(e.find("not a checkpoint of a pipeline run's node"), std::string::npos) << e;
    e = load_error({{"stages", torch::tensor({1.0})}}, b.parts);
    EXPECT_NE(e.find("\"stages\" missing or malformed"), std::string::npos) << e;
    auto without = [&](const std::string& name) {
        NamedTensors out;
        for (auto& kv : saved)
            if (kv.first != name) out.push_back(kv);
        return out;
    };
    e = load_error(without("t_fixed"), b.parts);
    EXPECT_NE(e.find("stage state \"t_fixed\" missing"), std::string::npos) << e;
    e = load_error(without("reparam/layers.0.wo"), b.parts);
    EXPECT_NE(e.find("\"reparam/layers.0.wo\" missing"), std::string::npos) << e;
    // An algorithm's state cut short is not taken for a newcomer's (which would start afresh).
    std::string outer_name;
    for (auto& kv : saved)
        if (kv.first.rfind("stage.1/", 0) == 0) outer_name = kv.first;
    e = load_error(without(outer_name), b.parts);
    EXPECT_NE(e.find("\"" + outer_name + "\" missing"), std::string::npos) << e;

    NamedTensors reshaped = saved;
    for (auto& kv : reshaped)
        if (kv.first == "t_fixed") kv.second = torch::zeros({55, 32});
    e = load_error(reshaped, b.parts);
    EXPECT_NE(e.find("\"t_fixed\" is Float[55, 32], expected Float[56, 32]"), std::string::npos) << e;
    for (auto& kv : reshaped)
        if (kv.first == "t_fixed") kv.second = torch::zeros({56, 32}, torch::kFloat64);
    e = load_error(reshaped, b.parts);
    EXPECT_NE(e.find("\"t_fixed\" is Double[56, 32]"), std::string::npos) << e;

    NamedTensors more = saved;
    more.emplace_back("shadow.other", torch::zeros({2}));
    e = load_error(more, b.parts);
    EXPECT_NE(e.find("\"shadow.other\" is not this node's"), std::string::npos) << e;
    NamedTensors twice = saved;
    twice.push_back(saved.back());
    e = load_error(twice, b.parts);
    EXPECT_NE(e.find("appears twice"), std::string::npos) << e;
    NamedTensors empty = saved;
    empty.back().second = torch::Tensor();
    e = load_error(empty, b.parts);
    EXPECT_NE(e.find("is empty"), std::string::npos) << e;

    // A node without a shadow or reparam refuses a file that has them, and the other way round.
    Node c(1, 4);
    c.parts.shadow = nullptr;
    c.parts.shadow_emb = torch::Tensor();
    e = load_error(saved, c.parts);
    EXPECT_NE(e.find("is not this node's"), std::string::npos) << e;
    e = load_error(save_stage_state(c.parts), b.parts);
    EXPECT_NE(e.find("\"shadow.emb\" missing"), std::string::npos) << e;
}

TEST(StageState, ATruncatedStageNodeFileIsANamedError) {
    const std::string root = (fs::path(::testing::TempDir()) / ("tw_stage_trunc_" + std::to_string(getpid()))).string();
    fs::remove_all(root);
    Node a(1, 1);
    RunConfig c = testing_support::micro_run(56, 100);
    c.data.cache_dir = root;
    c.train.ckpt_every = 4;
    NodeRole role;
    role.name = "replica-0.1";
    role.checkpoint_run = "run-2-stage";
    Trainer t = testing_support::synthetic_trainer(c, 0, 1);
    RunCheckpoints writer(c, role);
    NodeProgress p;
    p.step = 4;
    auto w = writer.save(p, *t.model(), t.optimizer(), save_stage_state(a.parts), "");
    ASSERT_TRUE(w.is_ok()) << w.message();
    fs::resize_file(w->path, fs::file_size(w->path) / 2);
    role.resume_step = 4;
    RunCheckpoints reader(c, role);
    auto l = reader.load(*t.model(), t.optimizer());
    ASSERT_FALSE(l.is_ok());
    EXPECT_NE(l.message().find(w->path), std::string::npos) << l.message();
    fs::remove_all(root);
}

TEST(SkipPipeState, RoundTripAndMalformedStateNamed) {
    SkipPipeNodeState s;
    s.busy_s = 1.25, s.iter_sum_s = 7.5, s.skip_iter_sum_s = 6.0625;
    s.block = {1e-3, 2e-3}, s.head = {3e-3, 4.5e-3};
    s.paths["val.loss.path_0_2"] = 4.125;
    const std::vector<std::string> known = {"val.loss.path_0_2", "val.loss.path_0_1"};
    const NamedTensors saved = save_skippipe_state(s);
    auto back = load_skippipe_state(saved, known);
    ASSERT_TRUE(back.is_ok()) << back.message();
    EXPECT_EQ(back->busy_s, 1.25);
    EXPECT_EQ(back->iter_sum_s, 7.5);
    EXPECT_EQ(back->skip_iter_sum_s, 6.0625);
    EXPECT_EQ(back->block.bwd_s, 2e-3);
    EXPECT_EQ(back->head.fwd_s, 3e-3);
    EXPECT_EQ(back->head.bwd_s, 4.5e-3);
    EXPECT_EQ(back->paths, s.paths);

    auto error = [&](const NamedTensors& n) {
        auto r = load_skippipe_state(n, known);
        return r ? std::string() : r.message();
    };
    // A pipeline stage node's state, or none, is not a SkipPipe node's.
    std::string e = error({{"stages", torch::tensor({0}, torch::kInt64)}});
    EXPECT_NE(e.find("is empty or not fp64"), std::string::npos) << e;
    e = error({});
    EXPECT_NE(e.find("not a SkipPipe node's checkpoint (\"skippipe/sums\" missing"), std::string::npos) << e;
    NamedTensors cut = {saved[0]};
    e = error(cut);
    EXPECT_NE(e.find("\"skippipe/stage_times\" missing or malformed"), std::string::npos) << e;
    NamedTensors bad = saved;
    bad[1].second = torch::tensor(std::vector<double>{1e-3, -2e-3, 3e-3, 4e-3}, torch::kFloat64);
    e = error(bad);
    EXPECT_NE(e.find("negative or not finite"), std::string::npos) << e;
    bad[1].second = torch::tensor(std::vector<double>{1e-3, NAN, 3e-3, 4e-3}, torch::kFloat64);
    EXPECT_NE(error(bad).find("negative or not finite"), std::string::npos);
    bad[1].second = torch::tensor(std::vector<double>{1e-3, 2e-3, 3e-3}, torch::kFloat64);
    EXPECT_NE(error(bad).find("missing or malformed"), std::string::npos);
    NamedTensors other = saved;
    other.emplace_back("skippipe/val/val.loss.path_1_2", torch::tensor(std::vector<double>{1.0}, torch::kFloat64));
    e = error(other);
    EXPECT_NE(e.find("\"skippipe/val/val.loss.path_1_2\" is not this run's"), std::string::npos) << e;
    NamedTensors twice = saved;
    twice.push_back(saved[0]);
    EXPECT_NE(error(twice).find("appears twice"), std::string::npos);
}

}  // namespace
}  // namespace tw
