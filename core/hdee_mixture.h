// HDEE's ensemble rules (docs/methods.md §9; docs/hdee.md) as plain arithmetic over per-token
// log-probabilities, Torch-free: the coordinator combines what the expert nodes send up
// (ExpertScores, the `scores` stream message of remote/protocol.h). A "sequence" is one loader
// window: T predicted tokens with the window's own prefix as context, so the posterior restarts at
// every window. All functions are pure; none keeps state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace tw {

// Per-token log-probabilities of one sequence under E experts: logp[e][t] = log p_e(x_t), nats,
// [E][N]; every row has the same length N.
using ExpertLogProbs = std::vector<std::vector<double>>;

// Rule (a), "average of log-probabilities": token t scores (1/E)·Σ_e log p_e(x_t), the log of the
// experts' geometric-mean probability of the observed token, NOT renormalised over the vocabulary
// (that needs every token's probability from every expert; docs/hdee.md says why the node form
// does not send it). Since the geometric mean of E distributions sums to ≤ 1, this NLL is ≥ the
// renormalised one. Returns the total NLL of the sequence, −Σ_t (1/E)·Σ_e logp[e][t] (nats; 0 for N = 0).
double logprob_mean_nll(const ExpertLogProbs& logp);

// Rule (b), per-token posterior mixture: p(x_t) = Σ_e w_{e,t}·p_e(x_t) with
// w_{·,t} = softmax_e(Σ_{s<t} log p_e(x_s) + log_prior[e]). log_prior [E] needs no normalisation
// (the softmax normalises). Returns the total NLL of the sequence, −Σ_t log p(x_t) (nats).
// Over a whole sequence this telescopes to −log Σ_e prior_e·Π_t p_e(x_t) (Bayesian model
// averaging), so it never exceeds min_e [NLL_e − log prior_e]; for a uniform prior, best + log E.
double posterior_mixture_nll(const ExpertLogProbs& logp, const std::vector<double>& log_prior);

// Per-token log p(x_t) of rule (b), [N]: what posterior_mixture_nll sums.
std::vector<double> posterior_mixture_logprobs(const ExpertLogProbs& logp, const std::vector<double>& log_prior);

// The prior of rule (b), estimated from validation sequences: seq_nll[s][e] = total NLL of
// sequence s under expert e, [S][E]. prior_e = (wins_e + alpha) / (S + alpha·E), where wins_e counts
// the sequences on which expert e has the lowest NLL (ties go to the lowest index). Add-alpha
// (Laplace for alpha = 1) smoothing keeps every entry > 0, so no expert is ruled out. Requires
// S ≥ 1, E ≥ 1 and alpha > 0. Returns probabilities [E], summing to 1.
std::vector<double> estimate_prior(const std::vector<std::vector<double>>& seq_nll, double alpha = 1.0);

// ---- what an expert node sends, and the coordinator's combination ---------------------------------

// One domain's two parts of the shared evaluation documents (core/hdee_plan.h split_alternate).
struct HdeeSetShape {
    int64_t eval_windows = 0, prior_windows = 0;  // windows of T tokens scored in each part
    int64_t eval_docs = 0, prior_docs = 0;        // documents in each part (for the tables)
};

// An expert node's scores of every domain's evaluation documents after training.
struct ExpertScores {
    int64_t seq_len = 0;               // T: predicted tokens per window
    std::vector<HdeeSetShape> sets;    // [D], one per domain in hdee.domains order
    double unigram = 0;                // the node's own domain: add-one unigram NLL, nats/token
    int64_t train_tokens = 0;          // the node's own domain's training tokens
    // log p(x_t) of every scored token, nats, fp32 exactly as the model computed it: domain by
    // domain, each domain's eval windows then its prior windows, window-major, T tokens each.
    std::vector<float> logp;

    // Σ_d (eval_windows + prior_windows) · seq_len: the length logp must have.
    int64_t expected_values() const;
};

// Whether `s` is well formed for a run of `domains` domains and windows of `seq_len` tokens: one
// set per domain, no negative count, at least one eval and one prior window per domain, logp of
// expected_values() finite values ≤ 0. The error says what is wrong (the caller names the node).
Status check_scores(const ExpertScores& s, size_t domains, int64_t seq_len);
// Whether b scores the same windows as a (same T and set shapes); the error names the first difference.
Status same_windows(const ExpertScores& a, const ExpertScores& b);

struct HdeeDomainResult {
    std::vector<double> expert_nll;  // [E] each expert alone, nats/token
    double logprob_mean = 0;         // rule (a), nats/token
    double posterior = 0;            // rule (b) with HdeeEvaluation::prior, nats/token
    int64_t windows = 0;             // sequences scored
    int64_t tokens = 0;              // predicted tokens scored (windows·T)
};

struct HdeeEvaluation {
    std::vector<double> prior;              // [E] estimated on the prior windows
    int64_t prior_windows = 0;              // sequences the prior was estimated on
    std::vector<HdeeDomainResult> domains;  // one per domain
};

// One ensemble's figures from its experts' scores, experts[e] = the expert of domain e (all
// checked by check_scores and same_windows; E = experts.size() = sets.size()). The prior is
// estimated on the prior windows of every domain pooled (a domain label is never used), then each
// domain's eval windows are scored by every expert alone and by both rules. Sums run in the order
// of windows and tokens, in double, exactly as the one-process evaluator did.
HdeeEvaluation combine_ensemble(const std::vector<const ExpertScores*>& experts, double prior_alpha);

}  // namespace tw
