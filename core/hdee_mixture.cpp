// HDEE ensemble arithmetic; see hdee_mixture.h.
#include "core/hdee_mixture.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/assert.h"

namespace tw {
namespace {

// log Σ_i exp(x_i), stable; −inf for an empty or all −inf input.
double log_sum_exp(const std::vector<double>& x) {
    double m = -std::numeric_limits<double>::infinity();
    for (double v : x) m = std::max(m, v);
    if (!std::isfinite(m)) return m;
    double s = 0;
    for (double v : x) s += std::exp(v - m);
    return m + std::log(s);
}

size_t check_shape(const ExpertLogProbs& logp) {
    TW_ASSERT(!logp.empty());
    const size_t n = logp[0].size();
    for (const auto& row : logp) TW_ASSERT(row.size() == n);
    return n;
}

double total_nll(const std::vector<double>& seq_logp) {
    double s = 0;
    for (double v : seq_logp) s -= v;
    return s;
}

}  // namespace

double logprob_mean_nll(const ExpertLogProbs& logp) {
    const size_t n = check_shape(logp);
    const double e = static_cast<double>(logp.size());
    double nll = 0;
    for (size_t t = 0; t < n; ++t) {
        double s = 0;
        for (const auto& row : logp) s += row[t];
        nll -= s / e;
    }
    return nll;
}

std::vector<double> posterior_mixture_logprobs(const ExpertLogProbs& logp, const std::vector<double>& log_prior) {
    const size_t n = check_shape(logp), E = logp.size();
    TW_ASSERT(log_prior.size() == E);
    // score[e] = log prior_e + Σ_{s<t} log p_e(x_s): the unnormalised log posterior before token t.
    std::vector<double> score = log_prior, joint(E), out(n);
    for (size_t t = 0; t < n; ++t) {
        for (size_t e = 0; e < E; ++e) joint[e] = score[e] + logp[e][t];
        // log Σ_e w_{e,t} p_e(x_t) = LSE_e(score + log p_e(x_t)) − LSE_e(score)
        out[t] = log_sum_exp(joint) - log_sum_exp(score);
        score = joint;
    }
    return out;
}

double posterior_mixture_nll(const ExpertLogProbs& logp, const std::vector<double>& log_prior) {
    return total_nll(posterior_mixture_logprobs(logp, log_prior));
}

std::vector<double> estimate_prior(const std::vector<std::vector<double>>& seq_nll, double alpha) {
    TW_ASSERT(alpha > 0 && !seq_nll.empty() && !seq_nll[0].empty());
    const size_t E = seq_nll[0].size();
    std::vector<double> wins(E, 0.0);
    for (const auto& row : seq_nll) {
        TW_ASSERT(row.size() == E);
        wins[static_cast<size_t>(std::min_element(row.begin(), row.end()) - row.begin())] += 1;
    }
    const double denom = static_cast<double>(seq_nll.size()) + alpha * static_cast<double>(E);
    for (double& w : wins) w = (w + alpha) / denom;
    return wins;
}

int64_t ExpertScores::expected_values() const {
    int64_t windows = 0;
    for (const HdeeSetShape& s : sets) windows += s.eval_windows + s.prior_windows;
    return windows * seq_len;
}

Status check_scores(const ExpertScores& s, size_t domains, int64_t seq_len) {
    if (s.seq_len != seq_len)
        return Status::error("windows of " + std::to_string(s.seq_len) + " tokens, the run's model.seq_len is " +
                             std::to_string(seq_len));
    if (s.sets.size() != domains)
        return Status::error(std::to_string(s.sets.size()) + " domains scored, the run has " + std::to_string(domains));
    for (size_t d = 0; d < s.sets.size(); ++d) {
        const HdeeSetShape& x = s.sets[d];
        if (x.eval_windows < 1 || x.prior_windows < 1 || x.eval_docs < 1 || x.prior_docs < 1)
            return Status::error("domain " + std::to_string(d) + " has " + std::to_string(x.eval_windows) + " eval and " +
                                 std::to_string(x.prior_windows) + " prior windows (" + std::to_string(x.eval_docs) +
                                 " + " + std::to_string(x.prior_docs) +
                                 " documents); the eval/prior split needs at least one of each (add genres or use "
                                 "whole documents)");
    }
    if (static_cast<int64_t>(s.logp.size()) != s.expected_values())
        return Status::error(std::to_string(s.logp.size()) + " log-probabilities for " +
                             std::to_string(s.expected_values()) + " scored tokens");
    for (size_t i = 0; i < s.logp.size(); ++i)
        if (!std::isfinite(s.logp[i]) || s.logp[i] > 0)
            return Status::error("log-probability " + std::to_string(i) + " is " + std::to_string(s.logp[i]) +
                                 " (must be finite and ≤ 0)");
    return Status::ok();
}

Status same_windows(const ExpertScores& a, const ExpertScores& b) {
    if (a.seq_len != b.seq_len || a.sets.size() != b.sets.size())
        return Status::error("scores other windows than the first expert (shape differs)");
    for (size_t d = 0; d < a.sets.size(); ++d)
        if (a.sets[d].eval_windows != b.sets[d].eval_windows || a.sets[d].prior_windows != b.sets[d].prior_windows)
            return Status::error("domain " + std::to_string(d) + ": " + std::to_string(b.sets[d].eval_windows) + "+" +
                                 std::to_string(b.sets[d].prior_windows) + " windows, the first expert scored " +
                                 std::to_string(a.sets[d].eval_windows) + "+" +
                                 std::to_string(a.sets[d].prior_windows) + " (different data?)");
    return Status::ok();
}

HdeeEvaluation combine_ensemble(const std::vector<const ExpertScores*>& experts, double prior_alpha) {
    TW_ASSERT(!experts.empty());
    const size_t E = experts.size(), D = experts[0]->sets.size();
    const size_t T = static_cast<size_t>(experts[0]->seq_len);
    // Offset of domain d's eval part in every expert's logp (all experts share the shape).
    std::vector<size_t> eval_at(D), prior_at(D);
    for (size_t d = 0, at = 0; d < D; ++d) {
        const HdeeSetShape& s = experts[0]->sets[d];
        eval_at[d] = at;
        prior_at[d] = at + static_cast<size_t>(s.eval_windows) * T;
        at = prior_at[d] + static_cast<size_t>(s.prior_windows) * T;
    }
    // Window w of a part starting at `at`, under every expert, as doubles (fp32 → double is exact).
    auto window = [&](size_t at, size_t w) {
        ExpertLogProbs lp(E);
        for (size_t e = 0; e < E; ++e) {
            const float* p = experts[e]->logp.data() + at + w * T;
            lp[e].assign(p, p + T);
        }
        return lp;
    };
    HdeeEvaluation ev;
    // Phase 1: the prior, from every prior window's per-expert total NLL, domains in order.
    std::vector<std::vector<double>> seq_nll;
    for (size_t d = 0; d < D; ++d)
        for (size_t w = 0; w < static_cast<size_t>(experts[0]->sets[d].prior_windows); ++w) {
            const ExpertLogProbs lp = window(prior_at[d], w);
            std::vector<double> row(E);
            for (size_t e = 0; e < E; ++e) row[e] = total_nll(lp[e]);
            seq_nll.push_back(std::move(row));
        }
    ev.prior_windows = static_cast<int64_t>(seq_nll.size());
    ev.prior =
        seq_nll.empty() ? std::vector<double>(E, 1.0 / static_cast<double>(E)) : estimate_prior(seq_nll, prior_alpha);
    std::vector<double> log_prior(E);
    for (size_t e = 0; e < E; ++e) log_prior[e] = std::log(ev.prior[e]);

    // Phase 2: each domain's eval windows under each expert and both rules; totals, then per token.
    for (size_t d = 0; d < D; ++d) {
        HdeeDomainResult r;
        r.expert_nll.assign(E, 0.0);
        const auto W = static_cast<size_t>(experts[0]->sets[d].eval_windows);
        for (size_t w = 0; w < W; ++w) {
            const ExpertLogProbs lp = window(eval_at[d], w);
            for (size_t e = 0; e < E; ++e) r.expert_nll[e] += total_nll(lp[e]);
            r.logprob_mean += logprob_mean_nll(lp);
            r.posterior += posterior_mixture_nll(lp, log_prior);
            r.tokens += static_cast<int64_t>(T);
        }
        r.windows = static_cast<int64_t>(W);
        const double n = static_cast<double>(std::max<int64_t>(r.tokens, 1));
        for (double& x : r.expert_nll) x /= n;
        r.logprob_mean /= n;
        r.posterior /= n;
        ev.domains.push_back(std::move(r));
    }
    return ev;
}

}  // namespace tw
