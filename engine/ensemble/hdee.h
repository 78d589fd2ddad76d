// HDEE, heterogeneous domain expert ensembles (Ersoy et al., arXiv 2502.19385; METHODS.md §9).
//
// Experts are trained independently, one per domain, and meet only here, at evaluation. This
// file holds the two ensemble rules as pure functions over per-token log-probabilities, the
// prior estimator of the posterior rule, and an evaluator that scores E trained models on
// validation windows. A "sequence" is one loader window: T predicted tokens with the window's own
// prefix as context, so the posterior restarts at every window. Torch-free header: the models
// and loaders are only named.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tw {

class Llama;
class WindowLoader;

// ---- mixture arithmetic -------------------------------------------------------------------------

// Per-token log-probabilities of one sequence under E experts: logp[e][t] = log p_e(x_t), nats,
// [E][N]; every row has the same length N.
using ExpertLogProbs = std::vector<std::vector<double>>;

// Rule (a), "average of log-probabilities": token t scores (1/E)·Σ_e log p_e(x_t), the log of the
// experts' geometric-mean probability of the observed token, NOT renormalised over the vocabulary
// (that needs every token's probability, see HdeeDomainResult::logprob_mean_renorm). Since the
// geometric mean of E distributions sums to ≤ 1, this NLL is ≥ the renormalised one.
// Returns the total NLL of the sequence, −Σ_t (1/E)·Σ_e logp[e][t] (nats; 0 for N = 0).
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

// ---- evaluator ----------------------------------------------------------------------------------

// Every window of a loader, each exactly once, in stream order, scored by each expert.
struct ScoredWindows {
    std::vector<ExpertLogProbs> logp;             // [W][E][T]: log p_e(x_t) of window w
    std::vector<std::vector<double>> mean_log_z;  // [W][T]: log Σ_v exp((1/E)·Σ_e log p_e(v)), ≤ 0
};

// Scores all windows of `val` (num_windows() of them, read with sequential_batch, the last
// batch cut to the windows left) with every expert, without gradients. The experts must be whole
// models over the same vocabulary; they may differ in width.
ScoredWindows score_windows(std::vector<Llama>& experts, const WindowLoader& val);

struct HdeeDomainResult {
    std::vector<double> expert_nll;  // [E] each expert alone, nats/token
    double logprob_mean = 0;         // rule (a), nats/token
    double logprob_mean_renorm = 0;  // rule (a) renormalised over the vocabulary each token, nats/token
    double posterior = 0;            // rule (b) with HdeeEvaluation::prior, nats/token
    int64_t windows = 0;             // sequences scored
    int64_t tokens = 0;              // predicted tokens scored (windows·T)
};

struct HdeeEvaluation {
    std::vector<double> prior;              // [E] estimated on the prior windows
    int64_t prior_windows = 0;              // sequences the prior was estimated on
    std::vector<HdeeDomainResult> domains;  // one per eval loader
};

// Estimates the prior on the windows of all `prior_sets` pooled (so it reflects their mix of
// domains; a domain label is never used), then scores each of `eval_sets` (one per domain) with
// every expert alone and with both rules. Keep the two kinds of sets disjoint: the prior must not
// be fit on the sequences it is judged on. No prior sets gives the uniform prior.
HdeeEvaluation evaluate_hdee(std::vector<Llama>& experts, const std::vector<const WindowLoader*>& prior_sets,
                             const std::vector<const WindowLoader*>& eval_sets, double prior_alpha = 1.0);

// Intended usage:
//   std::vector<Llama> experts = {trainer_a.model(), trainer_b.model()};   // trained apart
//   HdeeEvaluation ev = evaluate_hdee(experts, {&prior_news, &prior_fiction}, {&eval_news, &eval_fiction});
//   ev.domains[0].posterior  // nats/token of the ensemble on news

}  // namespace tw
