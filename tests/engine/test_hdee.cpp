// HDEE ensembles: both rules on hand-computed log-probabilities, the posterior mixture's bound
// against the best single expert, the prior estimator, the evaluator against direct losses, and the
// experiment's planning: the equal-FLOPs budget rule and the domain split, on hand-computed cases.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/config_io.h"
#include "engine/data/dataset.h"
#include "engine/data/loader.h"
#include "engine/ensemble/hdee.h"
#include "engine/model/llama.h"
#include "engine/train/trainer.h"
#include "tests/engine/micro_run.h"

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

// Two micro experts trained briefly on different halves of a patterned stream.
struct MicroSetup {
    RunConfig cfg;
    std::shared_ptr<std::vector<uint16_t>> tokens;
    std::vector<Llama> experts;
};

MicroSetup micro_setup() {
    MicroSetup s;
    s.cfg = testing_support::micro_run(32, 12);
    s.cfg.train.eval_batches = 1;
    s.cfg.train.eval_every = 0;
    s.tokens = std::make_shared<std::vector<uint16_t>>(12000);
    std::mt19937 rng(3);
    for (size_t i = 0; i < s.tokens->size(); ++i)  // half a counting pattern, half noise
        (*s.tokens)[i] = static_cast<uint16_t>(i < 6000 ? (i * 3 + rng() % 3) % 32 : rng() % 32);
    for (int e = 0; e < 2; ++e) {
        RunConfig c = s.cfg;
        c.model.d_ff = e == 0 ? 64 : 96;  // heterogeneous widths
        c.run.seed = 11 + e;
        const int64_t off = e == 0 ? 0 : 6000;
        Trainer t(c, WindowLoader(s.tokens, {{off, 5000}}, 16, 4, 1), WindowLoader(s.tokens, {{off, 400}}, 16, 4, 1));
        for (int i = 0; i < 12; ++i) t.step();
        s.experts.push_back(t.model());
    }
    return s;
}

TEST(HdeeEvaluator, PerExpertNllMatchesDirectMeanLossAndRulesMatchTheArithmetic) {
    torch::manual_seed(0);
    MicroSetup s = micro_setup();
    // 12 windows of 16 tokens in batches of 4, and 13 windows (the last batch cut to one window)
    const WindowLoader even(s.tokens, {{5000, 16 * 12 + 1}}, 16, 4, 1);
    const WindowLoader odd(s.tokens, {{11000, 16 * 13 + 1}}, 16, 4, 1);
    const WindowLoader prior_set(s.tokens, {{5500, 400}, {11500, 400}}, 16, 4, 1);
    const HdeeEvaluation ev = evaluate_hdee(s.experts, {&prior_set}, {&even, &odd});
    ASSERT_EQ(ev.domains.size(), 2u);
    EXPECT_EQ(ev.prior_windows, prior_set.num_windows());
    EXPECT_NEAR(ev.prior[0] + ev.prior[1], 1.0, 1e-12);
    EXPECT_EQ(ev.domains[0].windows, 12);
    EXPECT_EQ(ev.domains[1].windows, 13);
    EXPECT_EQ(ev.domains[1].tokens, 13 * 16);

    torch::NoGradGuard no_grad;
    for (size_t e = 0; e < 2; ++e) {
        // Trainer::evaluate's rule: mean of the model's mean loss over full sequential batches
        double sum = 0;
        for (int64_t i = 0; i < 3; ++i) sum += s.experts[e]->loss(even.sequential_batch(i)).item<double>();
        EXPECT_NEAR(ev.domains[0].expert_nll[e], sum / 3, 1e-5) << "expert " << e;
        // all 13 windows at once
        const torch::Tensor all = torch::cat({odd.sequential_batch(0), odd.sequential_batch(1), odd.sequential_batch(2),
                                              odd.sequential_batch(3).narrow(0, 0, 1)});
        EXPECT_NEAR(ev.domains[1].expert_nll[e], s.experts[e]->loss(all).item<double>(), 1e-5) << "expert " << e;
    }
    EXPECT_GT(std::abs(ev.domains[0].expert_nll[0] - ev.domains[0].expert_nll[1]), 1e-3) << "experts must differ";

    // the rules on the evaluator's own per-token scores
    const ScoredWindows sw = score_windows(s.experts, odd);
    ASSERT_EQ(sw.logp.size(), 13u);
    double mean = 0, post = 0, z = 0;
    for (size_t w = 0; w < sw.logp.size(); ++w) {
        mean += logprob_mean_nll(sw.logp[w]);
        post += posterior_mixture_nll(sw.logp[w], logs(ev.prior));
        for (double x : sw.mean_log_z[w]) {
            z += x;
            EXPECT_LE(x, 1e-12);
        }
    }
    const double n = 13 * 16;
    EXPECT_NEAR(ev.domains[1].logprob_mean, mean / n, 1e-12);
    EXPECT_NEAR(ev.domains[1].posterior, post / n, 1e-12);
    EXPECT_NEAR(ev.domains[1].logprob_mean_renorm, (mean + z) / n, 1e-12);
    EXPECT_LT(ev.domains[1].logprob_mean_renorm, ev.domains[1].logprob_mean);
    // per window, the mixture is within −log prior of its best expert; averaged, within the worst case
    const double best = std::min(ev.domains[1].expert_nll[0], ev.domains[1].expert_nll[1]);
    EXPECT_LE(ev.domains[1].posterior, best - std::log(std::min(ev.prior[0], ev.prior[1])) / 16 + 1e-9);
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

// ---- the domain split -----------------------------------------------------------------------------------

// Train stream: an "a" document [0, 0, 1] and a "k" document [1, 1]. Val stream, in document order:
//   A1 "a" [0, 0, 1, 1] @0   K1 "k" [1, 1] @4   B1 "b" [0, 1, 0] @6   A2 "a" [1, 1] @9   B2 "b" [0, 0, 0, 0, 1] @11
// Domain {a, b}: its val documents in order A1, B1, A2, B2 → eval A1, A2 (even), prior B1, B2 (odd);
// K1 belongs to no part. Cut to 3 tokens: A1 (0, 3), B2 (11, 3); B1 and A2 are short enough already.
// Unigram, vocabulary 2, fit on the domain's training tokens [0, 0, 1] with add-one: p(0) = 3/5,
// p(1) = 2/5; its val tokens (uncut) hold eight 0s and six 1s: −(8·ln 3/5 + 6·ln 2/5) / 14.
PreparedData genre_data() {
    PreparedData d;
    d.vocab_size = 2;
    d.train = std::make_shared<const std::vector<uint16_t>>(std::vector<uint16_t>{0, 0, 1, 1, 1});
    d.val = std::make_shared<const std::vector<uint16_t>>(
        std::vector<uint16_t>{0, 0, 1, 1, 1, 1, 0, 1, 0, 1, 1, 0, 0, 0, 0, 1});
    d.docs = {{"a01", 'a', false, 0, 3}, {"k01", 'k', false, 3, 2}, {"a02", 'a', true, 0, 4},
              {"k02", 'k', true, 4, 2},  {"b01", 'b', true, 6, 3},  {"a03", 'a', true, 9, 2},
              {"b02", 'b', true, 11, 5}};
    return d;
}

using Spans = std::vector<std::pair<int64_t, int64_t>>;

TEST(HdeeDomainSplit, AlternatesTheDomainsValidationDocumentsByHand) {
    const PreparedData d = genre_data();
    const HdeeDomainSplit whole = split_domain(d, {"a", "b"}, 2, 0);
    EXPECT_EQ(whole.eval, (Spans{{0, 4}, {9, 2}}));
    EXPECT_EQ(whole.prior, (Spans{{6, 3}, {11, 5}}));
    const double unigram = -(8 * std::log(3.0 / 5) + 6 * std::log(2.0 / 5)) / 14;
    EXPECT_NEAR(whole.unigram, unigram, 1e-12);

    const HdeeDomainSplit cut = split_domain(d, {"a", "b"}, 2, 3);
    EXPECT_EQ(cut.eval, (Spans{{0, 3}, {9, 2}}));
    EXPECT_EQ(cut.prior, (Spans{{6, 3}, {11, 3}}));
    EXPECT_NEAR(cut.unigram, unigram, 1e-12);  // the difficulty proxy reads whole documents
}

// A one-genre domain with one validation document: all of it evaluates, nothing is left for the
// prior (the command refuses such a domain). Unigram on "k": train [1, 1] → p(0) = 1/4, p(1) = 3/4,
// val [1, 1]: −ln 3/4.
TEST(HdeeDomainSplit, OtherGenresNeverEnterADomain) {
    const PreparedData d = genre_data();
    const HdeeDomainSplit k = split_domain(d, {"k"}, 2, 0);
    EXPECT_EQ(k.eval, (Spans{{4, 2}}));
    EXPECT_TRUE(k.prior.empty());
    EXPECT_NEAR(k.unigram, -std::log(3.0 / 4), 1e-12);
    // the parts of all domains partition the validation documents, each exactly once
    const HdeeDomainSplit ab = split_domain(d, {"a", "b"}, 2, 0);
    Spans all = ab.eval;
    all.insert(all.end(), ab.prior.begin(), ab.prior.end());
    all.insert(all.end(), k.eval.begin(), k.eval.end());
    std::sort(all.begin(), all.end());
    EXPECT_EQ(all, (Spans{{0, 4}, {4, 2}, {6, 3}, {9, 2}, {11, 5}}));
}

}  // namespace
}  // namespace tw
