// HDEE ensembles: both rules on hand-computed log-probabilities, the posterior mixture's bound
// against the best single expert, the prior estimator, and the evaluator against direct losses.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <random>

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

}  // namespace
}  // namespace tw
