// HDEE's Torch-free parts (core/hdee_plan.h, core/hdee_mixture.h): both ensemble rules on
// hand-computed log-probabilities, the posterior mixture's bound against the best single expert, the
// prior estimator, the equal-FLOPs budget rule and the plan from an [hdee] section, the alternate
// domain split, the [hdee] keys' checks, and the coordinator's combination of expert scores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/hdee_results.h"
#include "core/config_io.h"
#include "core/hdee_mixture.h"
#include "core/hdee_plan.h"
#include "core/layout.h"

namespace tw {
namespace {

double total(const std::vector<double>& logp) {
    double s = 0;
    for (double v : logp) s -= v;
    return s;
}

// Two experts, three tokens:
//   p_A(x_t) = 1/2, 1/4, 1/2      p_B(x_t) = 1/4, 1/2, 1/8
// (a) token means of the logs: (ln½+ln¼)/2 = −1.5·ln2, (ln¼+ln½)/2 = −1.5·ln2, (ln½+ln⅛)/2 = −2·ln2,
//     total NLL = 5·ln2.
// (b) uniform prior. t0: w = (½, ½), p = ½·½ + ½·¼ = 3/8.
//     t1: w ∝ (½·½, ½·¼) = (¼, ⅛) → (⅔, ⅓), p = ⅔·¼ + ⅓·½ = 1/3.
//     t2: w ∝ (¼·¼, ⅛·½) = (1/16, 1/16) → (½, ½), p = ½·½ + ½·⅛ = 5/16.
//     total NLL = −ln(3/8 · 1/3 · 5/16) = ln(128/5)  (= −ln(½·1/16 + ½·1/64), the telescoped form).
//     prior (¾, ¼): t0 p = ¾·½ + ¼·¼ = 7/16; total NLL = −ln(¾·1/16 + ¼·1/64) = ln(256/13).
TEST(HdeeRules, HandComputedTwoExpertsThreeTokens) {
    const ExpertLogProbs logp = {{std::log(0.5), std::log(0.25), std::log(0.5)},
                                 {std::log(0.25), std::log(0.5), std::log(0.125)}};
    EXPECT_NEAR(logprob_mean_nll(logp), 5 * std::log(2.0), 1e-12);

    const std::vector<double> uniform = {std::log(0.5), std::log(0.5)};
    const std::vector<double> per_token = posterior_mixture_logprobs(logp, uniform);
    ASSERT_EQ(per_token.size(), 3u);
    EXPECT_NEAR(per_token[0], std::log(3.0 / 8), 1e-12);
    EXPECT_NEAR(per_token[1], std::log(1.0 / 3), 1e-12);
    EXPECT_NEAR(per_token[2], std::log(5.0 / 16), 1e-12);
    EXPECT_NEAR(posterior_mixture_nll(logp, uniform), std::log(128.0 / 5), 1e-12);

    const std::vector<double> skewed = {std::log(0.75), std::log(0.25)};
    EXPECT_NEAR(posterior_mixture_logprobs(logp, skewed)[0], std::log(7.0 / 16), 1e-12);
    EXPECT_NEAR(posterior_mixture_nll(logp, skewed), std::log(256.0 / 13), 1e-12);
    // an unnormalised log prior is normalised by the softmax
    EXPECT_NEAR(posterior_mixture_nll(logp, {std::log(3.0), 0.0}), std::log(256.0 / 13), 1e-12);
}

struct Case {
    ExpertLogProbs logp;
    std::vector<double> prior;  // probabilities
};

Case random_case(std::mt19937_64& rng, bool uniform_prior) {
    std::uniform_int_distribution<int> n_experts(2, 6), length(1, 64);
    std::uniform_real_distribution<double> lp(-9.0, -0.01), u(0.02, 1.0);
    Case c;
    const int E = n_experts(rng), N = length(rng);
    c.logp.assign(static_cast<size_t>(E), std::vector<double>(static_cast<size_t>(N)));
    for (auto& row : c.logp)
        for (auto& x : row) x = lp(rng);
    double s = 0;
    for (int e = 0; e < E; ++e) c.prior.push_back(uniform_prior ? 1.0 : u(rng)), s += c.prior.back();
    for (double& p : c.prior) p /= s;
    return c;
}

std::vector<double> logs(const std::vector<double>& p) {
    std::vector<double> out;
    for (double x : p) out.push_back(std::log(x));
    return out;
}

// Over a sequence, NLL_mix = −log Σ_e prior_e·exp(−NLL_e) ≤ NLL_e − log prior_e for every e: the
// mixture never loses more than −log prior of the best expert (log E for a uniform prior).
TEST(HdeeRules, PosteriorMixtureWithinMinusLogPriorOfBestExpertOnRandomCases) {
    std::mt19937_64 rng(20250226);
    for (int i = 0; i < 2000; ++i) {
        const bool uniform = i % 2 == 0;
        const Case c = random_case(rng, uniform);
        const size_t E = c.logp.size();
        const double mix = posterior_mixture_nll(c.logp, logs(c.prior));
        std::vector<double> nll;
        for (const auto& row : c.logp) nll.push_back(total(row));
        const size_t best = static_cast<size_t>(std::min_element(nll.begin(), nll.end()) - nll.begin());
        const double bound = nll[best] - std::log(c.prior[best]);
        ASSERT_LE(mix, bound + 1e-9) << "case " << i;
        for (size_t e = 0; e < E; ++e) ASSERT_LE(mix, nll[e] - std::log(c.prior[e]) + 1e-9) << "case " << i;
        if (uniform) {
            EXPECT_NEAR(bound - nll[best], std::log(static_cast<double>(E)), 1e-12);
        }
        ASSERT_GE(mix, nll[best] - 1e-9) << "a mixture cannot beat its best member on a whole sequence";
        // the per-token recursion equals the telescoped Bayesian model average
        std::vector<double> joint;
        for (size_t e = 0; e < E; ++e) joint.push_back(std::log(c.prior[e]) - nll[e]);
        const double m = *std::max_element(joint.begin(), joint.end());
        double s = 0;
        for (double j : joint) s += std::exp(j - m);
        ASSERT_NEAR(mix, -(m + std::log(s)), 1e-9 * std::max(1.0, mix)) << "case " << i;
    }
}

TEST(HdeeRules, BoundIsTightWhenOneExpertDominates) {
    for (const bool uniform : {true, false}) {
        const std::vector<double> prior =
            uniform ? std::vector<double>(4, 0.25) : std::vector<double>{0.1, 0.2, 0.3, 0.4};
        ExpertLogProbs logp(4, std::vector<double>(30, -9.0));
        for (auto& x : logp[0]) x = -0.2;  // expert 0 is better by 8.8 nats on every token
        const double bound = total(logp[0]) - std::log(prior[0]);
        const double mix = posterior_mixture_nll(logp, logs(prior));
        EXPECT_LE(mix, bound + 1e-9);
        EXPECT_NEAR(mix, bound, 1e-6);
        if (uniform) {
            EXPECT_NEAR(mix - total(logp[0]), std::log(4.0), 1e-6);
        }
    }
}

TEST(HdeePrior, SmoothedWinFractionsSumToOneAndNeverZero) {
    // 4 sequences: expert 0 wins once, expert 2 three times, expert 1 never → (1+1, 0+1, 3+1) / (4+3)
    const std::vector<std::vector<double>> nll = {{1, 2, 3}, {5, 4, 3}, {9, 9, 2}, {4, 4, 1}};
    const auto p = estimate_prior(nll, 1.0);
    ASSERT_EQ(p.size(), 3u);
    EXPECT_NEAR(p[0], 2.0 / 7, 1e-12);
    EXPECT_NEAR(p[1], 1.0 / 7, 1e-12);
    EXPECT_NEAR(p[2], 4.0 / 7, 1e-12);
    // ties go to the lowest index
    const auto tie = estimate_prior({{1, 1}}, 0.5);
    EXPECT_NEAR(tie[0], 1.5 / 2, 1e-12);
    EXPECT_NEAR(tie[1], 0.5 / 2, 1e-12);

    std::mt19937_64 rng(7);
    std::normal_distribution<double> noise(0, 1);
    for (int E = 2; E <= 6; ++E) {
        const int best = E - 1;
        std::vector<std::vector<double>> seq(200, std::vector<double>(static_cast<size_t>(E)));
        for (auto& row : seq)
            for (int e = 0; e < E; ++e) row[static_cast<size_t>(e)] = 50 + noise(rng) - (e == best ? 3.0 : 0.0);
        const auto q = estimate_prior(seq);
        double s = 0;
        for (double x : q) {
            s += x;
            EXPECT_GT(x, 0.0);
        }
        EXPECT_NEAR(s, 1.0, 1e-12);
        EXPECT_EQ(std::max_element(q.begin(), q.end()) - q.begin(), best) << "E = " << E;
        EXPECT_GT(q[static_cast<size_t>(best)], 0.8);
    }
}

// ---- the equal-FLOPs budget ----------------------------------------------------------------------------

// A model small enough to count by hand: d_model 1, one layer, seq_len 1, no vocabulary, batch 1.
// train_flops_per_token = 6·(n_layer·(4·d² + 3·f·d) + V·d) + 12·n_layer·T·d = 6·(4 + 3f) + 12 = 36 + 18·f,
// so one step of an expert of width f costs 72 (f = 2), 108 (f = 4), 144 (f = 6) FLOPs.
RunConfig unit_model() {
    RunConfig c;
    c.model.d_model = 1;
    c.model.n_layer = 1;
    c.model.n_head = 1;
    c.model.seq_len = 1;
    c.model.vocab_size = 0;
    c.model.d_ff = 4;
    c.train.batch_size = 1;
    return c;
}

HdeeEnsemble ensemble(const std::string& name, std::vector<int64_t> d_ff, std::vector<int64_t> steps) {
    HdeeEnsemble e;
    e.name = name;
    e.d_ff = std::move(d_ff);
    e.steps_req = std::move(steps);
    return e;
}

TEST(HdeeBudget, ExpertFlopsByHand) {
    const RunConfig base = unit_model();
    EXPECT_EQ(expert_train_flops(base, 2, 1), 72.0);
    EXPECT_EQ(expert_train_flops(base, 6, 1), 144.0);
    EXPECT_EQ(expert_train_flops(base, 0, 1), 108.0);  // 0 = the base width, 4
    EXPECT_EQ(expert_train_flops(base, 4, 10), 1080.0);
    RunConfig wide = base;  // batch 3 × seq_len 1 → 3 tokens per step, and T = 1 still
    wide.train.batch_size = 3;
    EXPECT_EQ(expert_train_flops(wide, 4, 10), 3240.0);
}

// Budget: homogeneous widths 4 (written as 0 = the base width) and 4, steps 100 and 101:
//   201 · 108 = 21708 FLOPs.
// hetero_size, widths 2 and 6, steps [1, 1] as proportions: 72 + 144 = 216, factor 21708 / 216 = 100.5,
//   both round (half away from zero) to 101: 101 · 216 = 21816, +108 over. One step less on the
//   width-2 expert gives +36, one less on the width-6 one −36: a tie, the lower domain wins → [100, 101],
//   7200 + 14544 = 21744; no single step brings it closer (−36 … +180), so it stays +36 = +0.166%.
// hetero_steps, widths 4 and 4, steps [1, 2]: 324, factor exactly 67 → [67, 134], 201 · 108 = 21708.
TEST(HdeeBudget, ScaledThenNudgedToTheHomogeneousBudgetByHand) {
    const RunConfig base = unit_model();
    std::vector<HdeeEnsemble> ens = {ensemble("homogeneous", {0, 4}, {100, 101}),
                                     ensemble("hetero_size", {2, 6}, {1, 1}),
                                     ensemble("hetero_steps", {4, 4}, {1, 2})};
    ASSERT_TRUE(match_budget(base, ens)) << match_budget(base, ens).message();
    EXPECT_EQ(ens[0].steps, (std::vector<int64_t>{100, 101}));
    EXPECT_EQ(ens[0].train_flops, 21708.0);
    EXPECT_EQ(ens[1].steps, (std::vector<int64_t>{100, 101}));
    EXPECT_EQ(ens[1].train_flops, 21744.0);
    EXPECT_EQ(ens[2].steps, (std::vector<int64_t>{67, 134}));
    EXPECT_EQ(ens[2].train_flops, 21708.0);
    for (const HdeeEnsemble& e : ens) {
        EXPECT_EQ(e.train_flops, ensemble_train_flops(base, e)) << e.name;
        EXPECT_LE(std::abs(e.train_flops / ens[0].train_flops - 1), kHdeeBudgetTolerance) << e.name;
    }
    EXPECT_NEAR(ens[1].train_flops / ens[0].train_flops - 1, 36.0 / 21708, 1e-15);
    // steps_req are left as written
    EXPECT_EQ(ens[1].steps_req, (std::vector<int64_t>{1, 1}));
}

// Budget 1 step of width 4 on each of two domains: 216. Widths 6 and 6 cost 288 at the minimum of one
// step each (the factor 0.75 rounds to 1 and no expert may drop below 1): +33%, refused.
TEST(HdeeBudget, RefusesAnEnsembleBeyondTheTolerance) {
    const RunConfig base = unit_model();
    std::vector<HdeeEnsemble> ens = {ensemble("homogeneous", {4, 4}, {1, 1}), ensemble("hetero_size", {6, 6}, {5, 9})};
    const Status st = match_budget(base, ens);
    ASSERT_FALSE(st);
    EXPECT_EQ(st.message(),
              "hdee.hetero_size: cannot match the homogeneous budget within 1% (2.8800e+02 vs 2.1600e+02 FLOPs); "
              "use more steps or closer widths");
    EXPECT_EQ(ens[1].steps, (std::vector<int64_t>{1, 1}));
}

// experiments/hdee.toml: tiny (d_model 128, 4 layers), seq_len 64, batch 8, and the Brown tokenizer's
// 4096 tokens. Per token at width 352: 6·(4·(4·128² + 3·352·128) + 4096·128) + 12·4·64·128
// = 6·(802816 + 524288) + 393216 = 8355840 FLOPs; an expert's step is 512 tokens, the homogeneous
// ensemble 3 × 120 steps: 8355840 · 512 · 360 = 1540148428800 ≈ 1.5401e12 (docs/hdee.md). Widths
// 224 + 480 = 2·352 (FLOPs are linear in the width) and steps 84 + 156 = 2·120, so both heterogeneous
// ensembles match it exactly, with their steps as written.
TEST(HdeeBudget, ExperimentFileComesOutExactlyEqual) {
    auto cfg = parse_config("[model]\npreset = \"tiny\"\nseq_len = 64\nvocab_size = 4096\n[train]\nbatch_size = 8\n",
                            "test");
    ASSERT_TRUE(cfg) << cfg.message();
    ASSERT_EQ(cfg->model.d_model, 128);
    ASSERT_EQ(cfg->model.n_layer, 4);
    std::vector<HdeeEnsemble> ens = {ensemble("homogeneous", {352, 352, 352}, {120, 120, 120}),
                                     ensemble("hetero_size", {352, 224, 480}, {120, 120, 120}),
                                     ensemble("hetero_steps", {352, 352, 352}, {120, 84, 156})};
    ASSERT_TRUE(match_budget(*cfg, ens));
    EXPECT_EQ(ens[0].train_flops, 1540148428800.0);
    EXPECT_EQ(ens[1].train_flops, 1540148428800.0);
    EXPECT_EQ(ens[2].train_flops, 1540148428800.0);
    EXPECT_EQ(ens[1].steps, (std::vector<int64_t>{120, 120, 120}));
    EXPECT_EQ(ens[2].steps, (std::vector<int64_t>{120, 84, 156}));
}

// ---- the plan from an [hdee] section ----------------------------------------------------------------

const char* kExperiment =
    "[model]\npreset = \"tiny\"\nseq_len = 64\nvocab_size = 4096\n[train]\nsteps = 120\nbatch_size = 8\n"
    "[hdee]\ndomains = [\"news\", \"fiction\", \"learned\"]\ndomain_genres = [\"abc\", \"klmnpr\", \"hj\"]\n"
    "eval_doc_tokens = 1024\nhomogeneous_d_ff = 352\nhetero_size_d_ff = [352, 224, 480]\n"
    "hetero_size_steps = [1]\nhetero_steps_d_ff = [352]\nhetero_steps_steps = [120, 84, 156]\n";

// The section as experiments/hdee.toml writes it: the same plan as the hand-built ensembles above,
// and train.steps is the homogeneous experts' steps, so `--set train.steps=60` halves every expert.
TEST(HdeePlan, SectionPlansTheExperimentAndTrainStepsSetsTheBudget) {
    auto cfg = parse_config(kExperiment, "hdee.toml");
    ASSERT_TRUE(cfg) << cfg.message();
    auto plan = plan_hdee(*cfg);
    ASSERT_TRUE(plan) << plan.message();
    ASSERT_EQ(plan->size(), kHdeeEnsembles);
    EXPECT_EQ((*plan)[0].steps, (std::vector<int64_t>{120, 120, 120}));
    EXPECT_EQ((*plan)[1].d_ff, (std::vector<int64_t>{352, 224, 480}));
    EXPECT_EQ((*plan)[1].steps, (std::vector<int64_t>{120, 120, 120}));
    EXPECT_EQ((*plan)[2].d_ff, (std::vector<int64_t>{352, 352, 352}));
    EXPECT_EQ((*plan)[2].steps, (std::vector<int64_t>{120, 84, 156}));
    for (const HdeeEnsemble& e : *plan) EXPECT_EQ(e.train_flops, 1540148428800.0) << e.name;

    auto half = parse_config(kExperiment, "hdee.toml", {"train.steps=60"});
    ASSERT_TRUE(half) << half.message();
    auto p2 = plan_hdee(*half);
    ASSERT_TRUE(p2) << p2.message();
    EXPECT_EQ((*p2)[0].steps, (std::vector<int64_t>{60, 60, 60}));
    EXPECT_EQ((*p2)[1].steps, (std::vector<int64_t>{60, 60, 60}));
    EXPECT_EQ((*p2)[2].steps, (std::vector<int64_t>{60, 42, 78}));
    EXPECT_EQ((*p2)[2].train_flops, 1540148428800.0 / 2);

    // Empty lists: the homogeneous width and equal proportions.
    auto plain = parse_config("[model]\nvocab_size = 64\n[train]\nsteps = 10\n[hdee]\ndomains = [\"x\", \"y\"]\n"
                              "domain_genres = [\"a\", \"b\"]\n",
                              "t");
    ASSERT_TRUE(plain) << plain.message();
    auto p3 = plan_hdee(*plain);
    ASSERT_TRUE(p3) << p3.message();
    for (const HdeeEnsemble& e : *p3) EXPECT_EQ(e.steps, (std::vector<int64_t>{10, 10})) << e.name;
    plain->model.vocab_size = 0;
    EXPECT_FALSE(plan_hdee(*plain));  // the budget counts the head: it needs the vocabulary
}

// The section is a config section like any: stored in the resolved config (and so in its hash),
// read back to the same values; a run without it keeps its resolved text.
TEST(HdeePlan, SectionIsStoredAndHashedLikeEveryKey) {
    auto cfg = parse_config(kExperiment, "hdee.toml");
    ASSERT_TRUE(cfg) << cfg.message();
    const std::string text = to_toml(*cfg);
    EXPECT_NE(text.find("[hdee]"), std::string::npos);
    auto back = parse_config(text, "resolved");
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(to_toml(*back), text);
    EXPECT_EQ(back->hdee.domain_genres, (std::vector<std::string>{"abc", "klmnpr", "hj"}));
    EXPECT_EQ(back->hdee.hetero_steps_steps, (std::vector<int64_t>{120, 84, 156}));
    auto other = parse_config(kExperiment, "hdee.toml", {"hdee.hetero_size_d_ff=[352,256,448]"});
    ASSERT_TRUE(other) << other.message();
    EXPECT_NE(config_hash(*other), config_hash(*cfg));
    auto none = parse_config("", "<default>");
    ASSERT_TRUE(none);
    EXPECT_EQ(to_toml(*none).find("[hdee]"), std::string::npos);
}

TEST(HdeePlan, BadSectionsNameTheKey) {
    auto expect_error = [](const std::vector<std::string>& sets, const std::string& needle) {
        auto c = parse_config(kExperiment, "hdee.toml", sets);
        ASSERT_FALSE(c) << "accepted " << sets[0];
        EXPECT_NE(c.message().find(needle), std::string::npos) << c.message();
    };
    expect_error({"hdee.domain_genres=[\"abc\",\"kla\",\"hj\"]"}, "hdee.domain_genres: genre 'a' is in two domains");
    expect_error({"hdee.domain_genres=[\"abc\",\"kq\",\"hj\"]"}, "'q' is not a Brown genre");
    expect_error({"hdee.domain_genres=[\"abc\",\"klm\"]"}, "hdee.domain_genres has 2 entries for 3 domains");
    expect_error({"hdee.hetero_size_d_ff=[352,224]"}, "hdee.hetero_size_d_ff has 2 entries for 3 domains");
    expect_error({"hdee.hetero_steps_steps=[0,1,1]"}, "hdee.hetero_steps_steps: value 0 is out of range");
    expect_error({"hdee.domains=[\"news\",\"news\",\"x\"]"}, "\"news\" is listed twice");
    expect_error({"hdee.domains=[\"a.b\",\"c\",\"d\"]"}, "hdee.domains: \"a.b\" must be");
    expect_error({"hdee.prior_alpha=0"}, "hdee.prior_alpha: value 0 is out of range");
    expect_error({"hdee.eval_doc_tokens=64"}, "hdee.eval_doc_tokens 64 is not above model.seq_len 64");
    expect_error({"hdee.homogenous_d_ff=3"}, "hdee.homogenous_d_ff: unknown key");
    expect_error({"data.genres=[\"a\"]"}, "data.genres: leave unset with [hdee]");
    expect_error({"outer.algorithm=diloco"}, "HDEE experts train alone");
    expect_error({"train.ckpt_path=x.ckpt"}, "train.ckpt_path: a one-node run's file; HDEE experts checkpoint with train.ckpt_every alone");
    // A budget no heterogeneous ensemble can meet fails at planning, naming the ensemble.
    auto c = parse_config(kExperiment, "hdee.toml", {"train.steps=1", "hdee.hetero_size_d_ff=[4000,4000,4000]"});
    ASSERT_TRUE(c) << c.message();
    auto plan = plan_hdee(*c);
    ASSERT_FALSE(plan);
    EXPECT_NE(plan.message().find("hdee.hetero_size: cannot match the homogeneous budget within 1%"), std::string::npos)
        << plan.message();
}

// Node ensemble·D + domain is that expert, with the planned width and steps; nothing else.
TEST(HdeePlan, LayoutAssignsOneExpertNodePerEnsembleAndDomain) {
    auto cfg = parse_config(kExperiment, "hdee.toml");
    ASSERT_TRUE(cfg) << cfg.message();
    EXPECT_EQ(nodes_needed(*cfg), 9);
    std::vector<std::string> eps;
    for (int i = 0; i < 9; ++i) eps.push_back("inproc://n" + std::to_string(i));
    auto roles = assign_roles(*cfg, eps, [] { return 0; });
    ASSERT_TRUE(roles) << roles.message();
    ASSERT_EQ(roles->size(), 9u);
    EXPECT_EQ((*roles)[0].name, "homogeneous.news");
    EXPECT_EQ((*roles)[5].name, "hetero_size.learned");
    EXPECT_EQ((*roles)[7].name, "hetero_steps.fiction");
    for (size_t i = 0; i < 9; ++i) {
        const NodeRole& r = (*roles)[i];
        EXPECT_EQ(r.kind, NodeKind::kExpert);
        EXPECT_EQ(r.expert_ensemble, static_cast<int>(i / 3));
        EXPECT_EQ(r.expert_domain, static_cast<int>(i % 3));
        EXPECT_EQ(r.mesh_rank, -1);
        EXPECT_TRUE(r.mesh_endpoints.empty());
        EXPECT_EQ(r.grad_group.size, 1);
    }
    EXPECT_EQ((*roles)[5].expert_d_ff, 480);
    EXPECT_EQ((*roles)[7].expert_steps, 84);
    EXPECT_EQ((*roles)[8].expert_steps, 156);
    eps.pop_back();
    auto few = assign_roles(*cfg, eps, [] { return 0; });
    ASSERT_FALSE(few);
    EXPECT_NE(few.message().find("needs 9 (3 ensembles × 3 domains, one expert node each)"), std::string::npos)
        << few.message();
}

// ---- the domain split ---------------------------------------------------------------------------------

using Spans = std::vector<std::pair<int64_t, int64_t>>;

// Five documents in order: even-indexed ones evaluate, odd-indexed ones fit the prior; cut to 3
// tokens, long documents keep their first 3 and short ones stay whole.
TEST(HdeeDomainSplit, AlternatesDocumentsAndCutsThemByHand) {
    const Spans docs = {{0, 4}, {6, 3}, {9, 2}, {11, 5}, {20, 7}};
    const HdeeSpanSplit whole = split_alternate(docs, 0);
    EXPECT_EQ(whole.eval, (Spans{{0, 4}, {9, 2}, {20, 7}}));
    EXPECT_EQ(whole.prior, (Spans{{6, 3}, {11, 5}}));
    const HdeeSpanSplit cut = split_alternate(docs, 3);
    EXPECT_EQ(cut.eval, (Spans{{0, 3}, {9, 2}, {20, 3}}));
    EXPECT_EQ(cut.prior, (Spans{{6, 3}, {11, 3}}));
    const HdeeSpanSplit one = split_alternate({{4, 2}}, 0);
    EXPECT_EQ(one.eval, (Spans{{4, 2}}));
    EXPECT_TRUE(one.prior.empty());
}

// ---- the coordinator's combination ---------------------------------------------------------------------

// Two domains, T = 2, one eval and one prior window each. Expert A (domain 0) and B (domain 1):
//   domain 0  eval  A ½ ¼     B ¼ ½        prior  A ½ ½ (NLL 2ln2)  B ¼ ¼ (4ln2): A wins
//   domain 1  eval  A ½ ½     B ⅛ ¼        prior  A ¼ ½ (3ln2)      B ½ ½ (2ln2): B wins
// Prior, α = 1: (1+1)/(2+2) = ½ each. Per token (÷ 2):
//   domain 0: A alone 3ln2/2, B alone 3ln2/2; mean (1.5ln2 + 1.5ln2)/2 = 1.5ln2;
//             posterior −ln(3/8 · 1/3)/2 = ln 8 / 2 = 1.5ln2.
//   domain 1: A alone ln2, B alone 2.5ln2; mean (2ln2 + 1.5ln2)/2 = 1.75ln2;
//             posterior −ln(½·¼ + ½·1/32)/2 = ln(64/9)/2.
ExpertScores scores_of(std::vector<double> p) {
    ExpertScores s;
    s.seq_len = 2;
    s.sets = {{1, 1, 1, 1}, {1, 1, 1, 1}};
    for (double x : p) s.logp.push_back(static_cast<float>(std::log(x)));
    return s;
}
const ExpertScores kA = scores_of({0.5, 0.25, 0.5, 0.5, 0.5, 0.5, 0.25, 0.5});
const ExpertScores kB = scores_of({0.25, 0.5, 0.25, 0.25, 0.125, 0.25, 0.5, 0.5});

TEST(HdeeCombine, HandComputedTwoDomains) {
    ASSERT_TRUE(check_scores(kA, 2, 2));
    const HdeeEvaluation ev = combine_ensemble({&kA, &kB}, 1.0);
    const double l2 = std::log(2.0);
    ASSERT_EQ(ev.prior.size(), 2u);
    EXPECT_NEAR(ev.prior[0], 0.5, 1e-12);
    EXPECT_EQ(ev.prior_windows, 2);
    ASSERT_EQ(ev.domains.size(), 2u);
    EXPECT_NEAR(ev.domains[0].expert_nll[0], 1.5 * l2, 1e-7);
    EXPECT_NEAR(ev.domains[0].expert_nll[1], 1.5 * l2, 1e-7);
    EXPECT_NEAR(ev.domains[0].logprob_mean, 1.5 * l2, 1e-7);
    EXPECT_NEAR(ev.domains[0].posterior, 1.5 * l2, 1e-7);
    EXPECT_NEAR(ev.domains[1].expert_nll[0], l2, 1e-7);
    EXPECT_NEAR(ev.domains[1].expert_nll[1], 2.5 * l2, 1e-7);
    EXPECT_NEAR(ev.domains[1].logprob_mean, 1.75 * l2, 1e-7);
    EXPECT_NEAR(ev.domains[1].posterior, std::log(64.0 / 9) / 2, 1e-7);
    EXPECT_EQ(ev.domains[1].tokens, 2);
    // A one-expert ensemble: both rules are that expert alone, and the prior is 1.
    const HdeeEvaluation solo = combine_ensemble({&kB}, 1.0);
    EXPECT_EQ(solo.prior, (std::vector<double>{1.0}));
    for (const HdeeDomainResult& d : solo.domains) {
        EXPECT_DOUBLE_EQ(d.logprob_mean, d.expert_nll[0]);
        EXPECT_NEAR(d.posterior, d.expert_nll[0], 1e-12);
    }
}

TEST(HdeeCombine, RunFiguresNameEveryMetricAndRefuseBadScoresNamingTheNode) {
    auto cfg = parse_config("[model]\nvocab_size = 64\nseq_len = 2\n[train]\nsteps = 10\n[hdee]\n"
                            "domains = [\"x\", \"y\"]\ndomain_genres = [\"a\", \"b\"]\n",
                            "t");
    ASSERT_TRUE(cfg) << cfg.message();
    std::map<std::string, ExpertScores> scores;
    for (const char* e : kHdeeEnsembleNames) {
        scores[std::string(e) + ".x"] = kA;
        scores[std::string(e) + ".y"] = kB;
    }
    auto r = combine_hdee(*cfg, scores);
    ASSERT_TRUE(r) << r.message();
    std::map<std::string, double> m;
    for (auto& [k, v] : hdee_metrics(*cfg, *r)) m[k] = v;
    EXPECT_NEAR(m.at("hdee.homogeneous.posterior.y"), std::log(64.0 / 9) / 2, 1e-7);
    EXPECT_NEAR(m.at("hdee.hetero_steps.expert_x.y"), std::log(2.0), 1e-7);
    EXPECT_NEAR(m.at("hdee.hetero_size.prior.x"), 0.5, 1e-12);
    EXPECT_EQ(m.at("hdee.homogeneous.steps.y"), 10);
    EXPECT_EQ(m.at("hdee.homogeneous.d_ff.y"), 352);
    EXPECT_GT(m.at("hdee.hetero_size.train_flops"), 0);
    EXPECT_EQ(m.count("hdee.unigram.x"), 1u);
    EXPECT_NE(hdee_tables(*cfg, *r).find("domain y (genres b)"), std::string::npos);

    auto refused = [&](std::map<std::string, ExpertScores> s, const std::string& needle) {
        auto res = combine_hdee(*cfg, s);
        ASSERT_FALSE(res);
        EXPECT_NE(res.message().find(needle), std::string::npos) << res.message();
    };
    auto missing = scores;
    missing.erase("hetero_size.y");
    refused(missing, "hetero_size.y: sent no scores");
    auto shorter = scores;
    shorter["hetero_steps.x"].logp.pop_back();
    refused(shorter, "hetero_steps.x: scores: 7 log-probabilities for 8 scored tokens");
    auto positive = scores;
    positive["homogeneous.y"].logp[3] = 0.5f;
    refused(positive, "homogeneous.y: scores: log-probability 3 is");
    auto nan = scores;
    nan["homogeneous.y"].logp[0] = NAN;
    refused(nan, "homogeneous.y: scores: log-probability 0 is");
    auto other = scores;
    other["hetero_size.x"].sets[1].eval_windows = 2;
    other["hetero_size.x"].logp.insert(other["hetero_size.x"].logp.end(), {-1.0f, -1.0f});
    refused(other, "hetero_size.x: domain 1: 2+1 windows, the first expert scored 1+1");
    auto wide = scores;
    wide["homogeneous.x"].seq_len = 4;
    refused(wide, "homogeneous.x: scores: windows of 4 tokens, the run's model.seq_len is 2");
    auto three = scores;
    three["homogeneous.x"].sets.push_back({1, 1, 1, 1});
    refused(three, "homogeneous.x: scores: 3 domains scored, the run has 2");
    auto empty = scores;
    empty["homogeneous.x"].sets[0] = {0, 1, 0, 1};
    refused(empty, "homogeneous.x: scores: domain 0 has 0 eval and 1 prior windows");
}

}  // namespace
}  // namespace tw
