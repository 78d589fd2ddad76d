// HDEE ensembles (arXiv 2502.19385): the mixture arithmetic, the evaluator over trained experts,
// the equal-FLOPs budget rule and the domain split.
#include "engine/ensemble/hdee.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/assert.h"
#include "engine/data/dataset.h"
#include "engine/data/loader.h"
#include "engine/model/llama.h"

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

ScoredWindows score_windows(std::vector<Llama>& experts, const WindowLoader& val) {
    TW_ASSERT(!experts.empty());
    torch::NoGradGuard no_grad;
    const size_t E = experts.size();
    const double inv_e = 1.0 / static_cast<double>(E);
    ScoredWindows out;
    const int64_t n_windows = val.num_windows();
    for (int64_t i = 0; static_cast<int64_t>(out.logp.size()) < n_windows; ++i) {
        torch::Tensor batch = val.sequential_batch(i);  // [B, T+1]
        const int64_t rows = std::min<int64_t>(batch.size(0), n_windows - static_cast<int64_t>(out.logp.size()));
        batch = batch.narrow(0, 0, rows);
        const int64_t T = batch.size(1) - 1;
        const torch::Tensor inputs = batch.narrow(1, 0, T), targets = batch.narrow(1, 1, T).unsqueeze(-1);
        std::vector<torch::Tensor> token_logp;  // E × [rows, T]
        torch::Tensor mean_lsm;                 // [rows, T, V]: (1/E)·Σ_e log_softmax_e
        for (auto& model : experts) {
            const torch::Tensor lsm = torch::log_softmax(model->forward(inputs), -1);  // fp32, as the training loss
            token_logp.push_back(lsm.gather(-1, targets).squeeze(-1).to(torch::kFloat64).contiguous());
            mean_lsm = mean_lsm.defined() ? mean_lsm.add_(lsm, inv_e) : lsm.mul(inv_e);
        }
        const torch::Tensor log_z = torch::logsumexp(mean_lsm, -1).to(torch::kFloat64).contiguous();  // [rows, T]
        for (int64_t r = 0; r < rows; ++r) {
            ExpertLogProbs w(E);
            for (size_t e = 0; e < E; ++e) {
                const double* p = token_logp[e][r].data_ptr<double>();
                w[e].assign(p, p + T);
            }
            const double* z = log_z[r].data_ptr<double>();
            out.logp.push_back(std::move(w));
            out.mean_log_z.emplace_back(z, z + T);
        }
    }
    return out;
}

HdeeEvaluation evaluate_hdee(std::vector<Llama>& experts, const std::vector<const WindowLoader*>& prior_sets,
                             const std::vector<const WindowLoader*>& eval_sets, double prior_alpha) {
    const size_t E = experts.size();
    HdeeEvaluation ev;
    // Phase 1: the prior, from every prior window's per-expert total NLL.
    std::vector<std::vector<double>> seq_nll;
    for (const WindowLoader* set : prior_sets)
        for (const ExpertLogProbs& w : score_windows(experts, *set).logp) {
            std::vector<double> row(E);
            for (size_t e = 0; e < E; ++e) row[e] = total_nll(w[e]);
            seq_nll.push_back(std::move(row));
        }
    ev.prior_windows = static_cast<int64_t>(seq_nll.size());
    ev.prior =
        seq_nll.empty() ? std::vector<double>(E, 1.0 / static_cast<double>(E)) : estimate_prior(seq_nll, prior_alpha);
    std::vector<double> log_prior(E);
    for (size_t e = 0; e < E; ++e) log_prior[e] = std::log(ev.prior[e]);

    // Phase 2: each domain's windows under each expert and both rules; totals, then per token.
    for (const WindowLoader* set : eval_sets) {
        const ScoredWindows s = score_windows(experts, *set);
        HdeeDomainResult d;
        d.expert_nll.assign(E, 0.0);
        for (size_t w = 0; w < s.logp.size(); ++w) {
            const ExpertLogProbs& lp = s.logp[w];
            for (size_t e = 0; e < E; ++e) d.expert_nll[e] += total_nll(lp[e]);
            const double mean = logprob_mean_nll(lp);
            d.logprob_mean += mean;
            // renormalised: log p(x_t) = mean_e log p_e(x_t) − log Z_t, so NLL = mean NLL + Σ_t log Z_t
            for (double z : s.mean_log_z[w]) d.logprob_mean_renorm += z;
            d.logprob_mean_renorm += mean;
            d.posterior += posterior_mixture_nll(lp, log_prior);
            d.tokens += static_cast<int64_t>(lp[0].size());
        }
        d.windows = static_cast<int64_t>(s.logp.size());
        const double n = static_cast<double>(std::max<int64_t>(d.tokens, 1));
        for (double& x : d.expert_nll) x /= n;
        d.logprob_mean /= n;
        d.logprob_mean_renorm /= n;
        d.posterior /= n;
        ev.domains.push_back(std::move(d));
    }
    return ev;
}

// ---- planning ----------------------------------------------------------------------------------------

double expert_train_flops(const RunConfig& base, int64_t d_ff, int64_t steps) {
    ModelConfig m = base.model;
    m.d_ff = d_ff > 0 ? d_ff : base.model.d_ff;
    return train_flops_per_token(m) * static_cast<double>(base.train.batch_size * base.model.seq_len * steps);
}

double ensemble_train_flops(const RunConfig& base, const HdeeEnsemble& e) {
    double s = 0;
    for (size_t d = 0; d < e.d_ff.size(); ++d) s += expert_train_flops(base, e.d_ff[d], e.steps[d]);
    return s;
}

Status match_budget(const RunConfig& base, std::vector<HdeeEnsemble>& ens) {
    TW_ASSERT(!ens.empty());
    for (const HdeeEnsemble& e : ens) TW_ASSERT(e.d_ff.size() == e.steps_req.size());
    HdeeEnsemble& ref = ens[0];
    ref.steps = ref.steps_req;
    ref.train_flops = ensemble_train_flops(base, ref);
    for (size_t i = 1; i < ens.size(); ++i) {
        HdeeEnsemble& e = ens[i];
        e.steps = e.steps_req;
        const double factor = ref.train_flops / ensemble_train_flops(base, e);
        for (int64_t& s : e.steps) s = std::max<int64_t>(1, std::llround(static_cast<double>(s) * factor));
        for (int guard = 0; guard < 1000; ++guard) {
            const double err = ensemble_train_flops(base, e) - ref.train_flops;
            size_t best = 0;
            double best_err = std::abs(err);
            int64_t best_delta = 0;
            for (size_t d = 0; d < e.steps.size(); ++d)
                for (int64_t delta : {-1, 1}) {
                    if (e.steps[d] + delta < 1) continue;
                    const double x = std::abs(err + delta * expert_train_flops(base, e.d_ff[d], 1));
                    if (x < best_err) best = d, best_err = x, best_delta = delta;
                }
            if (best_delta == 0) break;
            e.steps[best] += best_delta;
        }
        e.train_flops = ensemble_train_flops(base, e);
        if (std::abs(e.train_flops / ref.train_flops - 1) > kHdeeBudgetTolerance) {
            char buf[160];
            std::snprintf(buf, sizeof buf, "cannot match the homogeneous budget within 1%% (%.4e vs %.4e FLOPs)",
                          e.train_flops, ref.train_flops);
            return Status::error("hdee." + e.name + ": " + buf + "; use more steps or closer widths");
        }
    }
    return Status::ok();
}

HdeeDomainSplit split_domain(const PreparedData& data, const std::vector<std::string>& genres, int64_t vocab,
                             int64_t doc_tokens) {
    HdeeDomainSplit out;
    const auto val = select_spans(data, true, genres);
    for (size_t i = 0; i < val.size(); ++i) {
        auto span = val[i];
        if (doc_tokens > 0) span.second = std::min(span.second, doc_tokens);
        (i % 2 == 0 ? out.eval : out.prior).push_back(span);
    }
    auto gather = [](const std::vector<uint16_t>& stream, const std::vector<std::pair<int64_t, int64_t>>& spans) {
        std::vector<uint16_t> v;
        for (auto& [off, len] : spans) v.insert(v.end(), stream.begin() + off, stream.begin() + off + len);
        return v;
    };
    out.unigram = unigram_loss(gather(*data.train, select_spans(data, false, genres)), gather(*data.val, val), vocab);
    return out;
}

}  // namespace tw
