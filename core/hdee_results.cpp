// Combining an HDEE run's expert scores; see hdee_results.h.
#include "core/hdee_results.h"

#include <algorithm>
#include <cstdio>


namespace tw {
namespace {

std::string fmt(const char* f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

std::string spaced(const std::string& letters) {
    std::string s;
    for (char c : letters) s += (s.empty() ? "" : " ") + std::string(1, c);
    return s;
}

}  // namespace

Result<HdeeResults> combine_hdee(const RunConfig& cfg, const std::map<std::string, ExpertScores>& scores) {
    using R = Result<HdeeResults>;
    HdeeResults out;
    auto plan = plan_hdee(cfg);
    if (!plan) return plan.status();
    out.plan = std::move(*plan);
    const size_t D = cfg.hdee.domains.size();
    const ExpertScores* first = nullptr;
    std::vector<std::vector<const ExpertScores*>> by_ensemble(kHdeeEnsembles);
    for (size_t e = 0; e < kHdeeEnsembles; ++e)
        for (size_t d = 0; d < D; ++d) {
            const std::string node = hdee_expert_name(cfg, e, d);
            auto it = scores.find(node);
            if (it == scores.end()) return R::error(node + ": sent no scores");
            if (Status st = check_scores(it->second, D, cfg.model.seq_len); !st)
                return R::error(node + ": scores: " + st.message());
            if (!first) first = &it->second;
            if (Status st = same_windows(*first, it->second); !st) return R::error(node + ": " + st.message());
            by_ensemble[e].push_back(&it->second);
        }
    out.sets = first->sets;
    out.seq_len = first->seq_len;
    for (size_t d = 0; d < D; ++d) {
        out.unigram.push_back(by_ensemble[0][d]->unigram);
        out.train_tokens.push_back(by_ensemble[0][d]->train_tokens);
    }
    for (size_t e = 0; e < kHdeeEnsembles; ++e)
        out.ensembles.push_back(combine_ensemble(by_ensemble[e], cfg.hdee.prior_alpha));
    return out;
}

std::vector<std::pair<std::string, double>> hdee_metrics(const RunConfig& cfg, const HdeeResults& r) {
    const auto& doms = cfg.hdee.domains;
    std::vector<std::pair<std::string, double>> m;
    for (size_t e = 0; e < r.ensembles.size(); ++e) {
        const std::string ens = r.plan[e].name;
        const HdeeEvaluation& ev = r.ensembles[e];
        for (size_t d = 0; d < doms.size(); ++d) {
            const HdeeDomainResult& x = ev.domains[d];
            m.emplace_back(hdee_metric(ens, kHdeePrior, doms[d]), ev.prior[d]);
            m.emplace_back(hdee_metric(ens, kHdeeLogprobMean, doms[d]), x.logprob_mean);
            m.emplace_back(hdee_metric(ens, kHdeePosterior, doms[d]), x.posterior);
            for (size_t k = 0; k < doms.size(); ++k)
                m.emplace_back(hdee_metric(ens, kHdeeExpertPrefix + doms[k], doms[d]), x.expert_nll[k]);
            m.emplace_back(hdee_metric(ens, kHdeeSteps, doms[d]), static_cast<double>(r.plan[e].steps[d]));
            m.emplace_back(hdee_metric(ens, kHdeeDff, doms[d]),
                           static_cast<double>(r.plan[e].d_ff[d] > 0 ? r.plan[e].d_ff[d] : cfg.model.ff_width()));
        }
        m.emplace_back(hdee_metric(ens, kHdeeTrainFlops), r.plan[e].train_flops);
    }
    for (size_t d = 0; d < doms.size(); ++d) m.emplace_back(kHdeeUnigramPrefix + doms[d], r.unigram[d]);
    return m;
}

std::string hdee_tables(const RunConfig& cfg, const HdeeResults& r) {
    const auto& doms = cfg.hdee.domains;
    const size_t D = doms.size();
    std::string s;
    char line[256];
    std::snprintf(line, sizeof line, "\n%-10s %-14s %12s %10s %16s\n", "domain", "genres", "train tokens", "val docs",
                  "unigram nats/tok");
    s += line;
    for (size_t d = 0; d < D; ++d) {
        std::snprintf(line, sizeof line, "%-10s %-14s %12lld %5lld+%-4lld %16.4f\n", doms[d].c_str(),
                      spaced(cfg.hdee.domain_genres[d]).c_str(), (long long)r.train_tokens[d],
                      (long long)r.sets[d].eval_docs, (long long)r.sets[d].prior_docs, r.unigram[d]);
        s += line;
    }
    s += "\nensembles (equal training FLOPs; the homogeneous ensemble sets the budget):\n";
    for (const HdeeEnsemble& e : r.plan) {
        std::string f, st;
        for (size_t d = 0; d < D; ++d) {
            ModelConfig m = cfg.model;
            m.d_ff = e.d_ff[d] > 0 ? e.d_ff[d] : cfg.model.d_ff;
            f += (d ? "/" : "") + std::to_string(m.ff_width());
            st += (d ? "/" : "") + std::to_string(e.steps[d]);
        }
        std::snprintf(line, sizeof line, "  %-13s d_ff %-14s steps %-14s %.4e FLOPs (%+.2f%%)\n", e.name.c_str(),
                      f.c_str(), st.c_str(), e.train_flops, 100 * (e.train_flops / r.plan[0].train_flops - 1));
        s += line;
    }
    for (size_t e = 0; e < r.ensembles.size(); ++e) {
        std::string prior;
        for (size_t d = 0; d < D; ++d) prior += (d ? ", " : "") + doms[d] + " " + fmt("%.3f", r.ensembles[e].prior[d]);
        std::snprintf(line, sizeof line, "  %-13s prior (%lld windows): ", r.plan[e].name.c_str(),
                      (long long)r.ensembles[e].prior_windows);
        s += line + prior + "\n";
    }
    for (size_t d = 0; d < D; ++d) {
        const HdeeDomainResult& first = r.ensembles[0].domains[d];
        std::snprintf(line, sizeof line,
                      "\ndomain %s (genres %s): %lld eval docs, %lld windows × %lld tokens; NLL in nats/token\n",
                      doms[d].c_str(), spaced(cfg.hdee.domain_genres[d]).c_str(), (long long)r.sets[d].eval_docs,
                      (long long)first.windows, (long long)r.seq_len);
        s += line;
        std::snprintf(line, sizeof line, "  %-13s %12s %10s   %s\n", "ensemble", "logprob_mean", "posterior",
                      "best single expert");
        s += line;
        for (size_t e = 0; e < r.ensembles.size(); ++e) {
            const HdeeDomainResult& x = r.ensembles[e].domains[d];
            const size_t b = static_cast<size_t>(std::min_element(x.expert_nll.begin(), x.expert_nll.end()) -
                                                 x.expert_nll.begin());
            std::snprintf(line, sizeof line, "  %-13s %12.4f %10.4f   %.4f (%s expert)\n", r.plan[e].name.c_str(),
                          x.logprob_mean, x.posterior, x.expert_nll[b], doms[b].c_str());
            s += line;
        }
    }
    std::snprintf(line, sizeof line,
                  "\nheterogeneous vs homogeneous at equal training FLOPs, domains where lower NLL (paper: 20 of 21):\n");
    s += line;
    for (size_t e = 1; e < r.ensembles.size(); ++e)
        for (const bool posterior : {false, true}) {
            int wins = 0;
            for (size_t d = 0; d < D; ++d) {
                const HdeeDomainResult &h = r.ensembles[e].domains[d], &u = r.ensembles[0].domains[d];
                wins += posterior ? h.posterior < u.posterior : h.logprob_mean < u.logprob_mean;
            }
            std::snprintf(line, sizeof line, "  %-13s %-13s beats homogeneous on %d of %zu domains\n",
                          r.plan[e].name.c_str(), posterior ? kHdeePosterior : kHdeeLogprobMean, wins, D);
            s += line;
        }
    return s;
}

}  // namespace tw
