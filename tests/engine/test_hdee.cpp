// HDEE's engine side (engine/ensemble/hdee.h): scoring windows with a trained model against the
// model's own loss, and a domain's split of prepared data with its unigram difficulty proxy. The
// Torch-free rules, plan and combination are tested in tests/core/test_hdee.cpp; the expert nodes
// end to end in tests/app/hdee_test.sh.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/hdee_mixture.h"
#include "engine/data/dataset.h"
#include "engine/data/loader.h"
#include "engine/ensemble/hdee.h"
#include "engine/model/llama.h"
#include "engine/train/trainer.h"
#include "tests/engine/micro_run.h"

namespace tw {
namespace {

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

// score_windows gives every window's per-token log-probabilities: their mean is the model's own
// loss (Trainer::evaluate's rule on full batches; all windows at once when the last batch is cut),
// and a posterior mixture of the two experts' scores stays within its bound of the better one.
TEST(HdeeEvaluator, ScoredWindowsMatchTheModelsOwnLoss) {
    torch::manual_seed(0);
    MicroSetup s = micro_setup();
    // 12 windows of 16 tokens in batches of 4, and 13 windows (the last batch cut to one window)
    const WindowLoader even(s.tokens, {{5000, 16 * 12 + 1}}, 16, 4, 1);
    const WindowLoader odd(s.tokens, {{11000, 16 * 13 + 1}}, 16, 4, 1);
    std::vector<std::vector<std::vector<float>>> odd_scores;
    torch::NoGradGuard no_grad;
    for (size_t e = 0; e < 2; ++e) {
        const auto ev = score_windows(s.experts[e], even);
        ASSERT_EQ(ev.size(), 12u);
        double nll = 0;
        for (const auto& w : ev) {
            ASSERT_EQ(w.size(), 16u);
            for (float v : w) {
                EXPECT_LE(v, 0.0f);
                nll -= v;
            }
        }
        double sum = 0;
        for (int64_t i = 0; i < 3; ++i) sum += s.experts[e]->loss(even.sequential_batch(i)).item<double>();
        EXPECT_NEAR(nll / (12 * 16), sum / 3, 1e-5) << "expert " << e;
        odd_scores.push_back(score_windows(s.experts[e], odd));
        ASSERT_EQ(odd_scores.back().size(), 13u);
        double odd_nll = 0;
        for (const auto& w : odd_scores.back())
            for (float v : w) odd_nll -= v;
        const torch::Tensor all = torch::cat({odd.sequential_batch(0), odd.sequential_batch(1), odd.sequential_batch(2),
                                              odd.sequential_batch(3).narrow(0, 0, 1)});
        EXPECT_NEAR(odd_nll / (13 * 16), s.experts[e]->loss(all).item<double>(), 1e-5) << "expert " << e;
    }
    // The two experts differ, and per window the uniform mixture is within log 2 of the better one.
    double diff = 0;
    for (size_t w = 0; w < 13; ++w) {
        ExpertLogProbs lp(2);
        for (size_t e = 0; e < 2; ++e) lp[e].assign(odd_scores[e][w].begin(), odd_scores[e][w].end());
        double a = 0, b = 0;
        for (size_t t = 0; t < 16; ++t) a -= lp[0][t], b -= lp[1][t];
        diff += std::abs(a - b);
        const double mix = posterior_mixture_nll(lp, {std::log(0.5), std::log(0.5)});
        EXPECT_LE(mix, std::min(a, b) + std::log(2.0) + 1e-9);
        EXPECT_GE(mix, std::min(a, b) - 1e-9);
    }
    EXPECT_GT(diff, 1e-3) << "experts must differ";
}

// ---- the domain split of prepared data ---------------------------------------------------------------------

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

TEST(HdeePreparedSplit, AlternatesTheDomainsValidationDocumentsByHand) {
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
TEST(HdeePreparedSplit, OtherGenresNeverEnterADomain) {
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
