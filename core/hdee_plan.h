// HDEE planning (Ersoy et al., arXiv 2502.19385; docs/methods.md §9; docs/hdee.md), Torch-free: the
// coordinator turns a config's [hdee] section into expert nodes once, before any node trains.
//
// Three ensembles of one expert per domain: "homogeneous" (every expert the same width, train.steps
// steps; it sets the training-FLOPs budget), "hetero_size" (a width per domain) and "hetero_steps"
// (steps per domain). The heterogeneous ensembles' steps are proportions, scaled to the budget by
// match_budget. Expert node i = ensemble · D + domain, named "ENSEMBLE.DOMAIN".
//
// Also here: the domain split of the validation documents (split_alternate) and the names of the
// metrics an HDEE run stores (hdee_metric, kHdee*).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/status.h"

namespace tw {

// The ensembles, in node and table order; [0] sets the budget.
inline constexpr const char* kHdeeEnsembleNames[] = {"homogeneous", "hetero_size", "hetero_steps"};
inline constexpr size_t kHdeeEnsembles = 3;

// One ensemble of per-domain experts. Every vector is [D], one entry per domain in domain order.
struct HdeeEnsemble {
    std::string name;                // kHdeeEnsembleNames[i]; errors say "hdee.NAME"
    std::vector<int64_t> d_ff;       // MLP width of each expert; 0 = the base model's d_ff
    std::vector<int64_t> steps_req;  // optimizer steps as written (for all but the budget ensemble: proportions)
    std::vector<int64_t> steps;      // optimizer steps after match_budget
    double train_flops = 0;          // ensemble_train_flops after match_budget, FLOPs
};

// Training FLOPs of one expert: train_flops_per_token(base.model with MLP width d_ff) ·
// base.train.batch_size · base.model.seq_len · steps, where train_flops_per_token (core/model_size.h)
// is 6·N_matmul + 12·n_layer·seq_len·d_model per token. d_ff 0 keeps base.model.d_ff. The
// vocabulary counts (the head is a matrix product): base.model.vocab_size must be the run's.
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

// The three ensembles of cfg.hdee (validated, config_io.h), budget-matched: homogeneous =
// homogeneous_d_ff × train.steps for every domain; the per-domain lists broadcast one entry to all
// domains, an empty width list means homogeneous_d_ff and an empty steps list equal proportions.
// cfg.model.vocab_size must be the run's vocabulary (the coordinator plans after `prepare`).
Result<std::vector<HdeeEnsemble>> plan_hdee(const RunConfig& cfg);

// Expert nodes of an HDEE layout: kHdeeEnsembles × domains.
inline size_t hdee_experts(const RunConfig& cfg) { return kHdeeEnsembles * cfg.hdee.domains.size(); }
// "ENSEMBLE.DOMAIN", the node (role) name of expert `ensemble`·D + `domain`.
std::string hdee_expert_name(const RunConfig& cfg, size_t ensemble, size_t domain);
// Domain d's Brown genres as data.genres takes them: "abc" → {"a", "b", "c"}.
std::vector<std::string> hdee_domain_genres(const RunConfig& cfg, size_t domain);

// A domain's validation documents (offset, length) in document order, split alternately: the i-th
// goes to eval when i is even, to prior when odd, so the prior is never fit on what it is judged
// on. With doc_tokens > 0 each span is cut to its first doc_tokens tokens (a shorter document stays
// whole), so every document still counts.
struct HdeeSpanSplit {
    std::vector<std::pair<int64_t, int64_t>> eval;   // documents 0, 2, 4, …: scored
    std::vector<std::pair<int64_t, int64_t>> prior;  // documents 1, 3, 5, …: fit the posterior rule's prior
};
HdeeSpanSplit split_alternate(const std::vector<std::pair<int64_t, int64_t>>& docs, int64_t doc_tokens);

// ---- stored metrics ----------------------------------------------------------------------------------
// The coordinator stores an HDEE run's combined figures as metrics of node kHdeeMetricNode at step 0
// (nats/token unless said otherwise):
//   hdee.ENS.logprob_mean.DOMAIN   rule (a) on DOMAIN's evaluation part
//   hdee.ENS.posterior.DOMAIN      rule (b)
//   hdee.ENS.expert_E.DOMAIN       ENS's expert of domain E alone
//   hdee.ENS.prior.E               the prior of ENS's expert E (probability)
//   hdee.ENS.train_flops           the ensemble's training FLOPs after match_budget
//   hdee.ENS.steps.E, hdee.ENS.d_ff.E   the expert's planned steps and MLP width
//   hdee.unigram.DOMAIN            add-one unigram of DOMAIN (train genres → whole val documents)
// The experts' own train.* / val.loss metrics are those of every trainer, under their node names.
inline constexpr const char* kHdeeMetricNode = "hdee";
inline constexpr const char* kHdeeLogprobMean = "logprob_mean";
inline constexpr const char* kHdeePosterior = "posterior";
inline constexpr const char* kHdeeExpertPrefix = "expert_";
inline constexpr const char* kHdeePrior = "prior";
inline constexpr const char* kHdeeTrainFlops = "train_flops";
inline constexpr const char* kHdeeSteps = "steps";
inline constexpr const char* kHdeeDff = "d_ff";
inline constexpr const char* kHdeeUnigramPrefix = "hdee.unigram.";
// Each expert node's own check, from its own scores: its NLL on DOMAIN's evaluation part, summed
// over windows in the coordinator's order, so it equals hdee.ENS.expert_E.DOMAIN exactly.
inline constexpr const char* kHdeeEvalNllPrefix = "hdee.eval_nll.";
// "hdee.ENS.WHAT" or, with a domain, "hdee.ENS.WHAT.DOMAIN".
std::string hdee_metric(const std::string& ensemble, const std::string& what, const std::string& domain = "");

}  // namespace tw
