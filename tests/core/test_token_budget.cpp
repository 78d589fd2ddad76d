// Budgets in tokens per parameter (core/token_budget.h), seeds expanding into runs (run.seeds in
// core/config_io.h's load_run_plan) and their mean and spread (core/seed_spread.h), against
// hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/config_io.h"
#include "core/seed_spread.h"
#include "core/token_budget.h"

namespace tw {
namespace {

RunConfig parsed(const std::vector<std::string>& sets) {
    auto c = parse_config("", "<test>", sets);
    EXPECT_TRUE(c) << c.message();
    return c ? *c : RunConfig{};
}

// The micro preset with a 1024-piece vocabulary: d 64, 2 layers, SwiGLU width 192 (8/3·64 rounded up
// to 32s), tied embedding. Per block 2·64 (norms) + 3·64² (wqkv) + 64² (wo) + 3·192·64 (w13, w2) =
// 53,376; N = 1024·64 + 2·53,376 + 64 (final norm) = 172,352.
TEST(TokenBudget, MicroPresetHasTheCountedParameters) {
    const RunConfig c = parsed({"model.preset=\"micro\"", "data.vocab_size=1024"});
    EXPECT_EQ(c.model.d_model, 64);
    EXPECT_EQ(c.model.n_layer, 2);
    EXPECT_EQ(c.model.ff_width(), 192);
    EXPECT_EQ(budget_parameters(c), 172352);
}

TEST(TokenBudget, StepsFollowFromTokensPerParameter) {
    // One node, batch 16 × 128 = 2,048 tokens a step: 20 · 172,352 = 3,447,040 tokens → ⌈1,683.1⌉.
    RunConfig one = parsed({"model.preset=\"micro\"", "data.vocab_size=1024", "train.tokens_per_param=20",
                            "outer.inner_steps=1"});
    EXPECT_EQ(tokens_per_step(one), 2048);
    EXPECT_EQ(one.train.steps, 1684);
    // DiLoCo, 4 replicas of batch 4: the same 2,048 tokens a step across them, rounded up to whole
    // rounds of H = 30 (57 rounds, 1,710 steps), so no tail is left unsynchronised.
    RunConfig m4 = parsed({"model.preset=\"micro\"", "data.vocab_size=1024", "train.tokens_per_param=20",
                           "outer.algorithm=\"diloco\"", "outer.replicas=4", "train.batch_size=4", "outer.inner_steps=30"});
    EXPECT_EQ(tokens_per_step(m4), 2048);
    EXPECT_EQ(m4.train.steps, 1710);
    // One node and DDP (2 replicas of batch 8) of the same layout (H = 30): the same 1,710 steps, so
    // the variants see the same tokens.
    for (const char* algo : {"none", "ddp"}) {
        RunConfig dp = parsed({"model.preset=\"micro\"", "data.vocab_size=1024", "train.tokens_per_param=20",
                               std::string("outer.algorithm=\"") + algo + "\"",
                               std::string("outer.replicas=") + (algo[0] == 'n' ? "1" : "2"),
                               std::string("train.batch_size=") + (algo[0] == 'n' ? "16" : "8"), "outer.inner_steps=30"});
        EXPECT_EQ(dp.train.steps, 1710) << algo;
    }
    // The budget wins over an explicit steps, and the stored text resolves to the same run.
    RunConfig both = parsed({"train.tokens_per_param=1", "train.steps=5"});
    EXPECT_EQ(both.train.steps, steps_for_budget(both, 1.0));
    auto again = parse_config(to_toml(both), "<stored>", {});
    ASSERT_TRUE(again) << again.message();
    EXPECT_EQ(again->train.steps, both.train.steps);
    EXPECT_EQ(again->train.tokens_per_param, 1.0);
    // Without a budget the key is not written, so every earlier run keeps its text and hash.
    EXPECT_EQ(to_toml(parsed({})).find("tokens_per_param"), std::string::npos);
}

TEST(TokenBudget, RefusedWhereStepsComeFromElsewhere) {
    auto skip = parse_config("", "<test>", {"train.tokens_per_param=20", "skippipe.stages=2", "model.n_layer=4"});
    ASSERT_FALSE(skip);
    EXPECT_NE(skip.message().find("train.tokens_per_param: SkipPipe"), std::string::npos) << skip.message();
}

TEST(Seeds, ExpandIntoOneRunPerSeedAndVariant) {
    const std::string path = ::testing::TempDir() + "/seeds.toml";
    std::ofstream(path) << "[run]\nname = \"s\"\nseeds = [3, 1, 2]\n[variants]\na = [\"train.lr=0.001\"]\n"
                           "b = [\"train.lr=0.002\"]\n";
    auto plan = load_run_plan(path);
    ASSERT_TRUE(plan) << plan.message();
    ASSERT_EQ(plan->runs.size(), 6u);
    const int64_t want_seed[] = {3, 1, 2, 3, 1, 2};
    for (size_t i = 0; i < 6; ++i) {
        const RunConfig& c = plan->runs[i].second;
        EXPECT_EQ(c.run.seed, want_seed[i]);
        EXPECT_TRUE(c.run.seeds.empty()) << "a stored run must resolve to one run";
        EXPECT_EQ(c.run.name, i < 3 ? "s-a" : "s-b") << "seeds of a variant share its name";
        EXPECT_EQ(c.train.lr, i < 3 ? 0.001 : 0.002);
        EXPECT_EQ(to_toml(c).find("seeds"), std::string::npos);
    }
    EXPECT_EQ(plan->runs[1].first, "a seed=1");
    auto cli = load_run_plan("", {"run.seeds=[7, 8]"});  // --set on the built-in default
    ASSERT_TRUE(cli) << cli.message();
    ASSERT_EQ(cli->runs.size(), 2u);
    EXPECT_EQ(cli->runs[1].second.run.seed, 8);
    auto dup = load_run_plan("", {"run.seeds=[7, 7]"});
    ASSERT_FALSE(dup);
    EXPECT_NE(dup.message().find("run.seeds lists 7 twice"), std::string::npos) << dup.message();
}

TEST(SeedSpread, MeanSampleDeviationAndRange) {
    // 1, 2, 3, 4: mean 2.5; squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5 over n − 1 = 3 → √(5/3).
    const Spread s = spread_of({1, 2, 3, 4});
    EXPECT_EQ(s.n, 4u);
    EXPECT_DOUBLE_EQ(s.mean, 2.5);
    EXPECT_NEAR(s.sd, 1.2909944487358056, 1e-15);
    EXPECT_EQ(s.min, 1);
    EXPECT_EQ(s.max, 4);
    EXPECT_EQ(format_mean_sd(s), "2.5000 ± 1.2910");
    EXPECT_EQ(format_mean_sd(spread_of({6.25})), "6.2500");  // one run: no spread to quote
    EXPECT_EQ(spread_of({6.25}).sd, 0);
    EXPECT_EQ(format_mean_sd(spread_of({})), "-");
}

TEST(SeedSpread, GroupsAreRunsEqualApartFromTheSeed) {
    using C = std::map<std::string, std::string>;
    const std::vector<C> configs = {
        {{"run.seed", "1"}, {"outer.lr", "0.7"}}, {{"run.seed", "1"}, {"outer.lr", "0.5"}},
        {{"run.seed", "2"}, {"outer.lr", "0.7"}}, {{"run.seed", "2"}, {"outer.lr", "0.5"}},
        {{"run.seed", "3"}, {"outer.lr", "0.7"}, {"data.cache_dir", "'x'"}},
    };
    const auto g = group_over_seeds(configs);
    ASSERT_EQ(g.size(), 3u);
    EXPECT_EQ(g[0], (std::vector<size_t>{0, 2}));
    EXPECT_EQ(g[1], (std::vector<size_t>{1, 3}));
    EXPECT_EQ(g[2], (std::vector<size_t>{4}));
    EXPECT_EQ(group_over_seeds(configs, {"data.cache_dir"})[0], (std::vector<size_t>{0, 2, 4}));
}

TEST(SeedSpread, ADifferenceCountsBeyondBothDeviations) {
    Spread a{3, 1.0, 0.1, 0.9, 1.1}, b{3, 1.3, 0.1, 1.2, 1.4}, c{3, 1.15, 0.1, 1.0, 1.3}, one{1, 2.0, 0, 2, 2};
    EXPECT_TRUE(differs_beyond_spread(a, b));   // 0.3 > 0.1 + 0.1
    EXPECT_FALSE(differs_beyond_spread(a, c));  // 0.15 < 0.2
    EXPECT_FALSE(differs_beyond_spread(a, one)) << "one seed has no spread to compare against";
    EXPECT_EQ(against_text(b, a), "+0.3000, beyond the spread");
    EXPECT_EQ(against_text(c, a), "+0.1500, within the spread");
    EXPECT_EQ(against_text(one, a), "+1.0000, one seed: no spread");
    EXPECT_EQ(against_text(Spread{}, a), "—");
}

}  // namespace
}  // namespace tw
