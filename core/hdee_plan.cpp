// HDEE planning: the equal-FLOPs budget rule, the expert list and the domain split; see hdee_plan.h.
#include "core/hdee_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/assert.h"
#include "core/model_size.h"

namespace tw {

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
                    const double x = std::abs(err + static_cast<double>(delta) * expert_train_flops(base, e.d_ff[d], 1));
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

namespace {

// One entry for every domain, or one per domain; empty = `fallback` for every domain.
std::vector<int64_t> per_domain(const std::vector<int64_t>& v, size_t n, int64_t fallback) {
    if (v.empty()) return std::vector<int64_t>(n, fallback);
    if (v.size() == 1) return std::vector<int64_t>(n, v[0]);
    return v;
}

}  // namespace

Result<std::vector<HdeeEnsemble>> plan_hdee(const RunConfig& cfg) {
    using R = Result<std::vector<HdeeEnsemble>>;
    const HdeeConfig& h = cfg.hdee;
    const size_t D = h.domains.size();
    if (D == 0) return R::error("hdee.domains: no domains, so no experts to plan");
    if (cfg.model.vocab_size <= 0)
        return R::error("hdee: the budget needs the run's vocabulary (model.vocab_size is still 0)");
    const std::vector<const std::vector<int64_t>*> lists = {&h.hetero_size_d_ff, &h.hetero_size_steps,
                                                            &h.hetero_steps_d_ff, &h.hetero_steps_steps};
    for (const auto* v : lists)
        if (v->size() > 1 && v->size() != D)
            return R::error("hdee: a per-domain list has " + std::to_string(v->size()) + " entries for " +
                            std::to_string(D) + " domains");
    std::vector<HdeeEnsemble> ens(kHdeeEnsembles);
    for (size_t i = 0; i < kHdeeEnsembles; ++i) ens[i].name = kHdeeEnsembleNames[i];
    ens[0].d_ff.assign(D, h.homogeneous_d_ff);
    ens[0].steps_req.assign(D, cfg.train.steps);
    ens[1].d_ff = per_domain(h.hetero_size_d_ff, D, h.homogeneous_d_ff);
    ens[1].steps_req = per_domain(h.hetero_size_steps, D, 1);
    ens[2].d_ff = per_domain(h.hetero_steps_d_ff, D, h.homogeneous_d_ff);
    ens[2].steps_req = per_domain(h.hetero_steps_steps, D, 1);
    if (Status st = match_budget(cfg, ens); !st) return st;
    return ens;
}

std::string hdee_expert_name(const RunConfig& cfg, size_t ensemble, size_t domain) {
    TW_ASSERT(ensemble < kHdeeEnsembles && domain < cfg.hdee.domains.size());
    return std::string(kHdeeEnsembleNames[ensemble]) + "." + cfg.hdee.domains[domain];
}

std::vector<std::string> hdee_domain_genres(const RunConfig& cfg, size_t domain) {
    TW_ASSERT(domain < cfg.hdee.domain_genres.size());
    std::vector<std::string> out;
    for (char c : cfg.hdee.domain_genres[domain]) out.emplace_back(1, c);
    return out;
}

HdeeSpanSplit split_alternate(const std::vector<std::pair<int64_t, int64_t>>& docs, int64_t doc_tokens) {
    HdeeSpanSplit out;
    for (size_t i = 0; i < docs.size(); ++i) {
        auto span = docs[i];
        if (doc_tokens > 0) span.second = std::min(span.second, doc_tokens);
        (i % 2 == 0 ? out.eval : out.prior).push_back(span);
    }
    return out;
}

std::string hdee_metric(const std::string& ensemble, const std::string& what, const std::string& domain) {
    return "hdee." + ensemble + "." + what + (domain.empty() ? "" : "." + domain);
}

}  // namespace tw
