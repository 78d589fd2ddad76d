// HDEE, heterogeneous domain expert ensembles (Ersoy et al., arXiv 2502.19385; METHODS.md §9).
//
// Experts are trained independently, one per domain, and meet only here, at evaluation. This
// file holds the two ensemble rules as pure functions over per-token log-probabilities, the
// prior estimator of the posterior rule, an evaluator that scores E trained models on
// validation windows, and the experiment's planning: the equal-FLOPs budget rule over the
// ensembles (match_budget) and each domain's split of its validation documents (split_domain). A "sequence" is one loader window: T predicted tokens with the window's own
// prefix as context, so the posterior restarts at every window. Torch-free header: the models
// and loaders are only named.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/status.h"

namespace tw {

class Llama;
class WindowLoader;
struct PreparedData;

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

// ---- planning: the equal-FLOPs budget and the domain split ------------------------------------------

// One ensemble of per-domain experts. Every vector is [D], one entry per domain in domain order.
struct HdeeEnsemble {
    std::string name;                // "homogeneous", "hetero_size", "hetero_steps"; errors say "hdee.NAME"
    std::vector<int64_t> d_ff;       // MLP width of each expert; 0 = the base model's d_ff
    std::vector<int64_t> steps_req;  // optimizer steps as written (for all but the budget ensemble: proportions)
    std::vector<int64_t> steps;      // optimizer steps after match_budget
    double train_flops = 0;          // ensemble_train_flops after match_budget, FLOPs
};

// Training FLOPs of one expert: train_flops_per_token(base.model with MLP width d_ff) ·
// base.train.batch_size · base.model.seq_len · steps, where train_flops_per_token (engine/model/llama.h)
// is 6·N_matmul + 12·n_layer·seq_len·d_model per token. d_ff 0 keeps base.model.d_ff.
double expert_train_flops(const RunConfig& base, int64_t d_ff, int64_t steps);

// Σ_d expert_train_flops(base, e.d_ff[d], e.steps[d]) over the domains, FLOPs (uses `steps`, not
// `steps_req`).
double ensemble_train_flops(const RunConfig& base, const HdeeEnsemble& e);

// Largest relative deviation |total / budget − 1| match_budget accepts.
constexpr double kHdeeBudgetTolerance = 0.01;

// The equal-FLOPs rule. ens[0] sets the budget: its steps = steps_req. Every other ensemble's
// steps_req are all scaled by one factor, budget / ensemble_train_flops(steps_req), and rounded
// (half away from zero, at least 1); then, one step at a time, the single ±1 change to one expert
// (never below 1 step) that brings the total closest to the budget is applied, while one brings it
// strictly closer (ties: the lower domain index, −1 before +1). Sets steps and train_flops of every
// ensemble. Fails with "hdee.NAME: cannot match the homogeneous budget within 1% (…)" when an
// ensemble's total still deviates by more than kHdeeBudgetTolerance. Requires ens non-empty, and
// d_ff and steps_req of one length per ensemble.
Status match_budget(const RunConfig& base, std::vector<HdeeEnsemble>& ens);

// A domain's validation documents, split for the evaluation. Spans are (offset, length) in tokens
// into PreparedData::val.
struct HdeeDomainSplit {
    std::vector<std::pair<int64_t, int64_t>> eval;   // documents 0, 2, 4, … of the domain: scored
    std::vector<std::pair<int64_t, int64_t>> prior;  // documents 1, 3, 5, …: fit the posterior rule's prior
    double unigram = 0;  // nats/token: add-one unigram of the domain's training documents on its whole
                         // validation documents (uncut), a model-free difficulty proxy (unigram_loss)
};

// Splits the validation documents of `genres` (Brown letters; select_spans order, i.e. the order of
// PreparedData::docs) alternately: the i-th goes to eval when i is even, to prior when odd. With
// doc_tokens > 0 each span is cut to its first doc_tokens tokens (a shorter document stays whole), so
// every document still counts. `vocab` is the unigram model's vocabulary size.
HdeeDomainSplit split_domain(const PreparedData& data, const std::vector<std::string>& genres, int64_t vocab,
                             int64_t doc_tokens);

// Intended usage:
//   std::vector<Llama> experts = {trainer_a.model(), trainer_b.model()};   // trained apart
//   HdeeEvaluation ev = evaluate_hdee(experts, {&prior_news, &prior_fiction}, {&eval_news, &eval_fiction});
//   ev.domains[0].posterior  // nats/token of the ensemble on news

}  // namespace tw
