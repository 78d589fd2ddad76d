// Trainer: schedule values, seeded determinism, bit-identical resume, checkpoint errors.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "engine/train/schedule.h"
#include "engine/train/trainer.h"
#include "tests/engine/micro_run.h"

namespace tw {
namespace {
namespace fs = std::filesystem;

RunConfig micro_run() {
    RunConfig c = testing_support::micro_run(61, 8);
    c.train.eval_batches = 2;
    c.train.eval_every = 0;
    return c;
}

std::shared_ptr<std::vector<uint16_t>> random_tokens(int n, int vocab) {
    auto t = std::make_shared<std::vector<uint16_t>>(n);
    std::mt19937 rng(9);
    for (auto& x : *t) x = static_cast<uint16_t>(rng() % vocab);
    return t;
}

Trainer make_trainer(const RunConfig& c) {
    auto toks = random_tokens(20000, static_cast<int>(c.model.vocab_size));
    return Trainer(c, WindowLoader(toks, {{0, 18000}}, c.model.seq_len, c.train.batch_size, c.run.seed),
                   WindowLoader(toks, {{18000, 2000}}, c.model.seq_len, c.train.batch_size, c.run.seed));
}

std::string temp_path(const std::string& name) { return (fs::path(::testing::TempDir()) / name).string(); }

TEST(Schedule, WarmupThenCosineToTheFloor) {
    EXPECT_DOUBLE_EQ(lr_at(0, 100, 1.0, 10, 0.1), 0.1);
    EXPECT_DOUBLE_EQ(lr_at(9, 100, 1.0, 10, 0.1), 1.0);
    EXPECT_DOUBLE_EQ(lr_at(10, 100, 1.0, 10, 0.1), 1.0);
    EXPECT_NEAR(lr_at(55, 100, 1.0, 10, 0.1), 0.55, 1e-12);  // halfway: (1 + 0.1) / 2
    EXPECT_NEAR(lr_at(100, 100, 1.0, 10, 0.1), 0.1, 1e-12);
}

TEST(Trainer, SameSeedAndThreadsGiveIdenticalLosses) {
    auto c = micro_run();
    auto a = make_trainer(c), b = make_trainer(c);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(a.step().loss, b.step().loss) << "step " << i;
    c.run.seed = 99;
    auto d = make_trainer(c);
    EXPECT_NE(d.step().loss, make_trainer(micro_run()).step().loss);
}

TEST(Trainer, ResumeFromCheckpointContinuesBitIdentically) {
    auto c = micro_run();
    auto straight = make_trainer(c);
    std::vector<double> expected;
    for (int i = 0; i < 8; ++i) expected.push_back(straight.step().loss);

    const auto path = temp_path("resume.ckpt");
    {
        auto first = make_trainer(c);
        for (int i = 0; i < 4; ++i) EXPECT_EQ(first.step().loss, expected[i]);
        ASSERT_TRUE(first.save(path).is_ok());
        (void)first.step();  // state moves on after the save; the checkpoint must not
    }
    auto resumed = make_trainer(c);
    ASSERT_TRUE(resumed.load(path).is_ok());
    EXPECT_EQ(resumed.step_index(), 4);
    for (int i = 4; i < 8; ++i) EXPECT_EQ(resumed.step().loss, expected[i]) << "step " << i;
    auto pa = straight.model()->parameters(), pb = resumed.model()->parameters();
    for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i]));
}

TEST(Trainer, RunHonoursResumeAndWritesTheFinalCheckpoint) {
    auto c = micro_run();
    c.train.ckpt_path = temp_path("run.ckpt");
    fs::remove(c.train.ckpt_path);
    c.train.steps = 3;
    int evals = 0;
    TrainHooks hooks;
    hooks.on_eval = [&](int64_t, double v) {
        ++evals;
        EXPECT_GT(v, 0);
    };
    auto a = make_trainer(c);
    ASSERT_TRUE(a.run(hooks).is_ok());
    EXPECT_EQ(evals, 1);
    c.train.steps = 6;
    c.train.resume = true;
    auto b = make_trainer(c);
    std::vector<int64_t> steps;
    hooks.on_step = [&](const StepReport& r) { steps.push_back(r.step); };
    ASSERT_TRUE(b.run(hooks).is_ok());
    EXPECT_EQ(steps, (std::vector<int64_t>{4, 5, 6}));
}

TEST(Trainer, TruncatedOrCorruptCheckpointsAreClearErrors) {
    auto c = micro_run();
    auto t = make_trainer(c);
    (void)t.step();
    const auto good = temp_path("good.ckpt"), bad = temp_path("bad.ckpt");
    ASSERT_TRUE(t.save(good).is_ok());
    std::ifstream in(good, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

    std::ofstream(bad, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    auto r = make_trainer(c).load(bad);
    EXPECT_NE(r.message().find("is truncated"), std::string::npos) << r.message();

    std::string flipped = bytes;
    flipped[flipped.size() - 100] ^= 0x40;
    std::ofstream(bad, std::ios::binary) << flipped;
    r = make_trainer(c).load(bad);
    EXPECT_NE(r.message().find("is corrupt: payload checksum mismatch"), std::string::npos) << r.message();

    std::ofstream(bad, std::ios::binary) << "not a checkpoint at all";
    r = make_trainer(c).load(bad);
    EXPECT_NE(r.message().find("not a thinwire checkpoint"), std::string::npos) << r.message();

    auto other = micro_run();
    other.model.d_model = 64;
    r = make_trainer(other).load(good);
    EXPECT_NE(r.message().find("does not fit this model"), std::string::npos) << r.message();
}

}  // namespace
}  // namespace tw
