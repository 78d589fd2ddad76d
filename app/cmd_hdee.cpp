// `thinwire hdee FILE [--set k=v]...`: HDEE (Ersoy et al., arXiv 2502.19385; METHODS.md §9,
// docs/hdee.md). One expert per domain, trained alone on that domain's Brown genres (no
// communication), for three ensembles: "homogeneous" (every expert alike), "hetero_size" (MLP width
// d_ff per domain) and "hetero_steps" (steps per domain). The ensembles get equal total training
// FLOPs: the homogeneous one sets the budget, and each other ensemble's steps are scaled by one
// factor (then nudged by single steps) until its total is within 1% of it (match_budget in
// engine/ensemble/hdee.h). Every expert is a run of its own (kind "train", a config `thinwire train`
// reproduces), and one run of kind "hdee" holds the ensemble results; all of one invocation share a
// group.
//
// Evaluation: each domain's validation documents are split alternately (split_domain) —
// even-indexed documents are the evaluation part, odd-indexed ones estimate the posterior rule's
// prior (pooled over all domains, estimate_prior) — so the prior is never fit on what it is judged
// on. Each ensemble is scored on every domain's evaluation part by each expert alone, the
// log-probability mean (plain and renormalised) and the posterior mixture.
//
// The FILE is a run config plus an [hdee] table (keys in HdeeConfig below); `--set hdee.KEY=V`
// (dotted, e.g. hdee.hetero_size.d_ff=[256,352,448]) overrides those, every other `--set` goes to
// the run config. data.genres must stay unset (the domains set it) and outer.algorithm "none".
#include <toml++/toml.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "app/commands.h"
#include "app/toml_file.h"
#include "app/progress.h"
#include "core/config_io.h"
#include "core/hash.h"
#include "core/metric_names.h"
#include "engine/data/dataset.h"
#include "engine/ensemble/hdee.h"
#include "engine/train/trainer.h"
#include "storage/metric_writer.h"
#include "storage/run_store.h"

namespace tw::cli {
namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_sigint_hdee(int) { g_stop = true; }

// ---- [hdee] ------------------------------------------------------------------------------------------

const char* const kEnsembleNames[] = {"homogeneous", "hetero_size", "hetero_steps"};
constexpr size_t kEnsembles = 3;

struct HdeeConfig {
    std::vector<std::string> domains;              // in table order
    std::vector<std::vector<std::string>> genres;  // per domain, Brown letters
    std::vector<HdeeEnsemble> ens = std::vector<HdeeEnsemble>(kEnsembles);  // [0] sets the budget
    double prior_alpha = 1.0;     // add-alpha smoothing of the prior's win counts
    int64_t eval_doc_tokens = 0;  // leading tokens of each validation document scored; 0 = all
};

std::string join(const std::vector<std::string>& v, const char* sep) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
    return s;
}

// An integer (the same for every domain) or an array of one integer per domain, each ≥ lo.
std::vector<int64_t> per_domain(const toml::node* v, size_t n, int64_t lo, const std::string& key,
                                std::vector<std::string>& problems) {
    std::vector<int64_t> out;
    if (auto x = v->value_exact<int64_t>())
        out.assign(n, *x);
    else if (const toml::array* a = v->as_array())
        for (auto& el : *a)
            if (auto y = el.value_exact<int64_t>()) out.push_back(*y);
    if (out.size() != n || (v->is_array() && v->as_array()->size() != n)) {
        problems.push_back(key + ": expected an integer or an array of " + std::to_string(n) +
                           " integers (one per domain)");
        return std::vector<int64_t>(n, std::max<int64_t>(lo, 1));
    }
    for (int64_t x : out)
        if (x < lo) problems.push_back(key + ": " + std::to_string(x) + " is below " + std::to_string(lo));
    return out;
}

std::vector<std::string> strings(const toml::node* v, const std::string& key, std::vector<std::string>& problems) {
    std::vector<std::string> out;
    const toml::array* a = v ? v->as_array() : nullptr;
    if (a)
        for (auto& el : *a)
            if (auto s = el.value_exact<std::string>()) out.push_back(*s);
    if (!a || out.size() != a->size() || out.empty())
        problems.push_back(key + ": expected a non-empty array of strings");
    return out;
}

void parse_hdee(const toml::table& h, const std::string& at, HdeeConfig& c, std::vector<std::string>& problems) {
    for (auto& [k, v] : h) {
        const std::string key(k.str());
        const bool known =
            key == "domains" || key == "genres" || key == "prior_alpha" || key == "eval_doc_tokens" ||
            std::find(std::begin(kEnsembleNames), std::end(kEnsembleNames), key) != std::end(kEnsembleNames);
        if (!known)
            problems.push_back(at + key +
                               ": unknown key (known: domains, genres, prior_alpha, eval_doc_tokens, "
                               "homogeneous, hetero_size, hetero_steps)");
    }
    c.domains = strings(h.get("domains"), at + "domains", problems);
    if (std::set<std::string>(c.domains.begin(), c.domains.end()).size() != c.domains.size())
        problems.push_back(at + "domains: names must be distinct");
    const toml::table* g = h.get("genres") ? h.get("genres")->as_table() : nullptr;
    if (!g) problems.push_back(at + "genres: expected a table NAME = [\"a\", ...] with one entry per domain");
    std::set<std::string> seen;
    for (const std::string& d : c.domains) {
        c.genres.push_back(g ? strings(g->get(d), at + "genres." + d, problems) : std::vector<std::string>{});
        for (const std::string& l : c.genres.back()) {
            if (l.size() != 1 || std::string("abcdefghjklmnpr").find(l) == std::string::npos)
                problems.push_back(at + "genres." + d + ": \"" + l + "\" is not a Brown genre (a–h, j–n, p, r)");
            if (!seen.insert(l).second) problems.push_back(at + "genres." + d + ": \"" + l + "\" is in two domains");
        }
    }
    if (g)
        for (auto& [k, v] : *g)
            if (std::find(c.domains.begin(), c.domains.end(), std::string(k.str())) == c.domains.end())
                problems.push_back(at + "genres." + std::string(k.str()) + ": not listed in domains");
    if (const toml::node* a = h.get("prior_alpha")) {
        if (!a->is_number() || *a->value<double>() <= 0)
            problems.push_back(at + "prior_alpha: expected a number > 0");
        else
            c.prior_alpha = *a->value<double>();
    }
    if (const toml::node* t = h.get("eval_doc_tokens")) {
        const auto x = t->value_exact<int64_t>();
        if (!x || *x < 0)
            problems.push_back(at + "eval_doc_tokens: expected an integer ≥ 0 (0 = whole documents)");
        else
            c.eval_doc_tokens = *x;
    }
    const size_t n = c.domains.size();
    for (size_t i = 0; i < kEnsembles; ++i) {
        HdeeEnsemble& e = c.ens[i];
        e.name = kEnsembleNames[i];
        const toml::table* t = h.get(e.name) ? h.get(e.name)->as_table() : nullptr;
        if (!t) {
            problems.push_back(at + e.name + ": expected a table with d_ff and steps");
            continue;
        }
        for (auto& [k, v] : *t)
            if (k.str() != "d_ff" && k.str() != "steps")
                problems.push_back(at + e.name + "." + std::string(k.str()) + ": unknown key (known: d_ff, steps)");
        const toml::node* d_ff = t->get("d_ff");
        const toml::node* steps = t->get("steps");
        if (!d_ff || !steps) problems.push_back(at + e.name + ": needs both d_ff and steps");
        if (d_ff) e.d_ff = per_domain(d_ff, n, 0, at + e.name + ".d_ff", problems);
        if (steps) e.steps_req = per_domain(steps, n, 1, at + e.name + ".steps", problems);
    }
}

// Sets a dotted key ("hetero_size.d_ff") in `h` from "--set hdee.KEY=V"; bare words are strings.
void apply_set(toml::table& h, const std::string& o, std::vector<std::string>& problems) {
    const size_t eq = o.find('=');
    if (eq == std::string::npos) return problems.push_back("--set " + o + ": expected key=value");
    std::string path = o.substr(5, eq - 5);
    toml::table v;
    try {
        v = toml::parse("x = " + o.substr(eq + 1));
    } catch (const toml::parse_error&) {
        v.insert_or_assign("x", o.substr(eq + 1));
    }
    toml::table* t = &h;
    for (size_t dot; (dot = path.find('.')) != std::string::npos; path = path.substr(dot + 1)) {
        const std::string part = path.substr(0, dot);
        if (!t->get(part)) t->insert(part, toml::table{});
        if (!(t = t->get(part)->as_table())) return problems.push_back("--set " + o + ": " + part + " is not a table");
    }
    t->insert_or_assign(path, *v.get("x"));
}

struct Loaded {
    RunConfig cfg;
    HdeeConfig hdee;
};

Result<Loaded> load(const std::string& path, const std::vector<std::string>& sets) {
    auto parsed = read_toml_file(path);
    if (!parsed) return parsed.status();
    toml::table t = std::move(*parsed);
    std::vector<std::string> problems, run_sets;
    toml::table h;
    if (toml::node* n = t.get("hdee")) {
        if (n->is_table())
            h = *n->as_table();
        else
            problems.push_back(path + ": hdee: expected a table");
        t.erase("hdee");
    } else {
        problems.push_back(path + ": hdee: missing (domains, genres and the three ensembles)");
    }
    for (const std::string& o : sets) {
        if (o.rfind(metric::kHdeePrefix, 0) == 0)
            apply_set(h, o, problems);
        else
            run_sets.push_back(o);
    }
    Loaded out;
    parse_hdee(h, path + ": hdee.", out.hdee, problems);
    std::ostringstream rest;
    rest << t << "\n";
    auto cfg = parse_config(rest.str(), path, run_sets);
    if (cfg)
        out.cfg = std::move(*cfg);
    else
        problems.insert(problems.begin(), cfg.message());
    if (!out.cfg.data.genres.empty())
        problems.push_back(path + ": data.genres: leave unset, [hdee.genres] sets it per expert");
    if (out.cfg.outer.algorithm != "none")
        problems.push_back(path + ": outer.algorithm: HDEE experts train alone (\"none\")");
    if (!out.cfg.data.train_shard.empty())
        problems.push_back(path + ": data.train_shard: HDEE needs the corpus's genres");
    if (out.hdee.eval_doc_tokens > 0 && out.hdee.eval_doc_tokens <= out.cfg.model.seq_len)
        problems.push_back(path + ": hdee.eval_doc_tokens: " + std::to_string(out.hdee.eval_doc_tokens) +
                           " is not above model.seq_len " + std::to_string(out.cfg.model.seq_len) +
                           " (0 = whole documents)");
    if (!problems.empty()) return Result<Loaded>::error(join(problems, "\n  "));
    return out;
}

// The resolved [hdee] table as comments, stored ahead of the run config (which must stay parseable).
std::string hdee_comments(const HdeeConfig& c) {
    std::ostringstream os;
    os << "# thinwire hdee; [hdee] resolved, steps after the equal-FLOPs rule\n# hdee.domains = [\""
       << join(c.domains, "\", \"") << "\"]\n";
    for (size_t d = 0; d < c.domains.size(); ++d)
        os << "# hdee.genres." << c.domains[d] << " = [\"" << join(c.genres[d], "\", \"") << "\"]\n";
    os << "# hdee.prior_alpha = " << c.prior_alpha << "\n# hdee.eval_doc_tokens = " << c.eval_doc_tokens << "\n";
    for (const HdeeEnsemble& e : c.ens) {
        std::vector<std::string> f, s;
        for (size_t d = 0; d < e.d_ff.size(); ++d)
            f.push_back(std::to_string(e.d_ff[d])), s.push_back(std::to_string(e.steps[d]));
        os << "# hdee." << e.name << ".d_ff = [" << join(f, ", ") << "]\n# hdee." << e.name << ".steps = ["
           << join(s, ", ") << "]\n";
    }
    return os.str() + "\n";
}

// ---- training -----------------------------------------------------------------------------------------

struct Session {
    RunConfig base;
    HdeeConfig hdee;
    PreparedData data;
    RunStore* store = nullptr;
    std::string group;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    double wall() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
};

struct Expert {
    Llama model{nullptr};
    int64_t run_id = 0;
    double val_loss = NAN;
    double seconds = 0;
};

// Trains one expert as its own stored run. Throws on failure; returns nullopt when interrupted.
std::optional<Expert> train_expert(Session& s, size_t ens, size_t d) {
    const HdeeEnsemble& e = s.hdee.ens[ens];
    RunConfig cfg = s.base;
    cfg.model.d_ff = e.d_ff[d] > 0 ? e.d_ff[d] : s.base.model.d_ff;
    cfg.train.steps = e.steps[d];
    cfg.data.genres = s.hdee.genres[d];
    cfg.run.name = s.base.run.name + "-" + e.name + "-" + s.hdee.domains[d];
    const uint64_t seed = static_cast<uint64_t>(cfg.run.seed);
    Expert out;
    out.run_id = unwrap(s.store->create_run(cfg.run.name, "train", to_toml(cfg), config_hash(cfg), cfg.run.seed));
    check(s.store->set_run_group(out.run_id, s.group, ""));
    std::printf("run %lld \"%s\": d_ff %lld, %lld parameters, %lld steps\n", (long long)out.run_id,
                cfg.run.name.c_str(), (long long)cfg.model.ff_width(), (long long)count_parameters(cfg.model),
                (long long)cfg.train.steps);
    Trainer trainer(cfg,
                    WindowLoader(s.data.train, select_spans(s.data, false, cfg.data.genres), cfg.model.seq_len,
                                 cfg.train.batch_size, seed),
                    WindowLoader(s.data.val, select_spans(s.data, true, cfg.data.genres), cfg.model.seq_len,
                                 cfg.train.batch_size, seed));
    MetricBuffer metrics(*s.store, out.run_id);
    const double t_start = s.wall();
    double sim_s = 0;
    auto record = [&](int64_t step, const char* name, double v) {
        metrics.add({"local", step, -1, s.wall() - t_start, sim_s, name, v});
    };
    Progress progress(cfg.train.steps, cfg.train.log_every);
    TrainHooks hooks;
    hooks.on_step = [&](const StepReport& r) {
        sim_s += r.compute_s;
        const double tps = static_cast<double>(cfg.train.batch_size * cfg.model.seq_len) / r.compute_s;
        record(r.step, metric::kTrainLoss, r.loss);
        record(r.step, metric::kTrainLr, r.lr);
        record(r.step, metric::kTrainGradNorm, r.grad_norm);
        record(r.step, metric::kTrainTokens, static_cast<double>(r.tokens));
        record(r.step, metric::kTrainComputeS, r.compute_s);
        record(r.step, metric::kTrainTokensPerS, tps);
        progress.update(r.step, 0, r.loss, tps);
    };
    hooks.on_eval = [&](int64_t step, double v) {
        out.val_loss = v;
        record(step, metric::kValLoss, v);
    };
    hooks.should_stop = [] { return g_stop.load(); };
    Status st;
    try {
        st = trainer.run(hooks);
    } catch (const std::exception& ex) {
        st = Status::error(ex.what());
    }
    progress.finish();
    if (Status f = metrics.flush(); st && !f) st = Status::error("metrics not stored: " + f.message());
    if (Status w = s.store->add_event(out.run_id, {s.wall() - t_start, "local", EventLevel::kInfo, "hdee",
                                          "expert of ensemble " + e.name + " for domain " + s.hdee.domains[d] +
                                              " (genres " + join(cfg.data.genres, " ") + "), group " + s.group}); !w)
        std::fprintf(stderr, "thinwire: event not stored: %s\n", w.message().c_str());
    if (!st) {
        if (Status w = s.store->finish_run(out.run_id, RunStatus::kFailed, st.message()); !w)
            std::fprintf(stderr, "thinwire: run status not stored: %s\n", w.message().c_str());
        throw Error(cfg.run.name + ": " + st.message());
    }
    if (trainer.stopped_early()) {
        check(s.store->finish_run(out.run_id, RunStatus::kInterrupted,
                                  "interrupted at step " + std::to_string(trainer.step_index())));
        return std::nullopt;
    }
    check(s.store->finish_run(out.run_id, RunStatus::kFinished, ""));
    out.model = trainer.model();
    out.seconds = s.wall() - t_start;
    return out;
}

// ---- evaluation and the table --------------------------------------------------------------------------

void print_tables(const HdeeConfig& c, const std::vector<HdeeEvaluation>& ev, const std::vector<HdeeDomainSplit>& splits) {
    const size_t D = c.domains.size();
    for (size_t d = 0; d < D; ++d) {
        std::printf("\ndomain %s (genres %s): %zu eval docs, %lld windows × %lld tokens; NLL in nats/token\n",
                    c.domains[d].c_str(), join(c.genres[d], " ").c_str(), splits[d].eval.size(),
                    (long long)ev[0].domains[d].windows,
                    (long long)(ev[0].domains[d].tokens / ev[0].domains[d].windows));
        std::printf("  %-13s %12s %12s %10s   %s\n", "ensemble", "logprob_mean", "(renormed)", "posterior",
                    "best single expert");
        for (size_t i = 0; i < kEnsembles; ++i) {
            const HdeeDomainResult& r = ev[i].domains[d];
            const size_t b =
                static_cast<size_t>(std::min_element(r.expert_nll.begin(), r.expert_nll.end()) - r.expert_nll.begin());
            std::printf("  %-13s %12.4f %12.4f %10.4f   %.4f (%s expert)\n", c.ens[i].name.c_str(), r.logprob_mean,
                        r.logprob_mean_renorm, r.posterior, r.expert_nll[b], c.domains[b].c_str());
        }
    }
    std::printf("\nheterogeneous vs homogeneous at equal training FLOPs, domains where lower NLL (paper: 20 of 21):\n");
    const char* rules[] = {"logprob_mean", "posterior"};
    for (size_t i = 1; i < kEnsembles; ++i)
        for (int k = 0; k < 2; ++k) {
            int wins = 0;
            for (size_t d = 0; d < D; ++d) {
                const HdeeDomainResult &h = ev[i].domains[d], &u = ev[0].domains[d];
                wins += k == 0 ? h.logprob_mean < u.logprob_mean : h.posterior < u.posterior;
            }
            std::printf("  %-13s %-13s beats homogeneous on %d of %zu domains\n", c.ens[i].name.c_str(), rules[k], wins,
                        D);
        }
}

// The domains (sizes, split, difficulty) and the ensembles after the budget rule.
void print_plan(const Session& s, const std::vector<HdeeDomainSplit>& splits) {
    const HdeeConfig& c = s.hdee;
    const size_t D = c.domains.size();
    std::printf("\n%-10s %-14s %12s %10s %16s\n", "domain", "genres", "train tokens", "val docs", "unigram nats/tok");
    for (size_t d = 0; d < D; ++d) {
        int64_t train_tokens = 0;
        for (auto& [off, len] : select_spans(s.data, false, c.genres[d])) train_tokens += len;
        std::printf("%-10s %-14s %12lld %5zu+%-4zu %16.4f\n", c.domains[d].c_str(), join(c.genres[d], " ").c_str(),
                    (long long)train_tokens, splits[d].eval.size(), splits[d].prior.size(), splits[d].unigram);
    }
    std::printf("\nensembles (equal training FLOPs; the homogeneous ensemble sets the budget):\n");
    for (const HdeeEnsemble& e : c.ens) {
        std::string f, st;
        for (size_t d = 0; d < D; ++d) {
            ModelConfig m = s.base.model;
            m.d_ff = e.d_ff[d] > 0 ? e.d_ff[d] : s.base.model.d_ff;
            f += (d ? "/" : "") + std::to_string(m.ff_width());
            st += (d ? "/" : "") + std::to_string(e.steps[d]);
        }
        std::printf("  %-13s d_ff %-14s steps %-14s %.4e FLOPs (%+.2f%%)\n", e.name.c_str(), f.c_str(), st.c_str(),
                    e.train_flops, 100 * (e.train_flops / c.ens[0].train_flops - 1));
    }
}

// Scores every ensemble on every domain's evaluation part (prior from the prior parts) and
// records the results as metrics of the summary run.
std::vector<HdeeEvaluation> evaluate_ensembles(Session& s, std::vector<std::vector<Expert>>& experts,
                                               const std::vector<HdeeDomainSplit>& splits, int64_t summary_id) {
    const HdeeConfig& c = s.hdee;
    const size_t D = c.domains.size();
    const uint64_t seed = static_cast<uint64_t>(s.base.run.seed);
    std::vector<WindowLoader> eval_loaders, prior_loaders;
    for (const HdeeDomainSplit& sp : splits) {
        eval_loaders.emplace_back(s.data.val, sp.eval, s.base.model.seq_len, s.base.train.batch_size, seed);
        prior_loaders.emplace_back(s.data.val, sp.prior, s.base.model.seq_len, s.base.train.batch_size, seed);
    }
    std::vector<const WindowLoader*> eval_sets, prior_sets;
    for (size_t d = 0; d < D; ++d) {
        eval_sets.push_back(&eval_loaders[d]);
        prior_sets.push_back(&prior_loaders[d]);
    }
    std::printf("\nevaluating %zu ensembles on %zu domains\n", kEnsembles, D);
    std::vector<HdeeEvaluation> ev;
    MetricBuffer metrics(*s.store, summary_id);
    auto record = [&](const std::string& name, double v) {
        metrics.add({"local", 0, -1, s.wall(), s.wall(), name, v});
    };
    for (size_t i = 0; i < kEnsembles; ++i) {
        std::vector<Llama> models;
        for (Expert& x : experts[i]) models.push_back(x.model);
        ev.push_back(evaluate_hdee(models, prior_sets, eval_sets, c.prior_alpha));
        const std::string p = metric::kHdeePrefix + c.ens[i].name + ".";
        std::string prior_text;
        for (size_t d = 0; d < D; ++d) {
            const HdeeDomainResult& r = ev[i].domains[d];
            record(p + "prior." + c.domains[d], ev[i].prior[d]);
            record(p + "logprob_mean." + c.domains[d], r.logprob_mean);
            record(p + "logprob_mean_renorm." + c.domains[d], r.logprob_mean_renorm);
            record(p + "posterior." + c.domains[d], r.posterior);
            for (size_t e = 0; e < D; ++e) record(p + "expert_" + c.domains[e] + "." + c.domains[d], r.expert_nll[e]);
            char buf[64];
            std::snprintf(buf, sizeof buf, "%s%s %.3f", d ? ", " : "", c.domains[d].c_str(), ev[i].prior[d]);
            prior_text += buf;
        }
        record(p + "train_flops", c.ens[i].train_flops);
        std::printf("  %-13s prior (%lld windows): %s\n", c.ens[i].name.c_str(), (long long)ev[i].prior_windows,
                    prior_text.c_str());
    }
    for (size_t d = 0; d < D; ++d) record(metric::kHdeeUnigramPrefix + c.domains[d], splits[d].unigram);
    check(metrics.flush());
    return ev;
}

struct HdeeArgs {
    std::string file;
    std::vector<std::string> sets;
};

int run_hdee(const Globals& g, const HdeeArgs& a) {
    Loaded loaded = unwrap(load(a.file, a.sets));
    Session s;
    s.base = std::move(loaded.cfg);
    s.hdee = std::move(loaded.hdee);
    const HdeeConfig& c = s.hdee;
    const size_t D = c.domains.size();
    std::printf("preparing data (%s)\n", s.base.data.corpus.c_str());
    s.data = unwrap(prepare_data(s.base.data, nullptr));
    if (s.base.model.vocab_size == 0) s.base.model.vocab_size = s.data.vocab_size;
    if (s.base.model.vocab_size < s.data.vocab_size)
        throw Error("model.vocab_size " + std::to_string(s.base.model.vocab_size) + " is smaller than the data's " +
                    std::to_string(s.data.vocab_size));
    check(match_budget(s.base, s.hdee.ens));  // engine/ensemble/hdee.h
    std::vector<HdeeDomainSplit> splits;
    for (size_t d = 0; d < D; ++d) {
        splits.push_back(split_domain(s.data, c.genres[d], s.base.model.vocab_size, c.eval_doc_tokens));
        if (splits[d].eval.empty() || splits[d].prior.empty())
            throw Error("domain " + c.domains[d] + " has " +
                        std::to_string(splits[d].eval.size() + splits[d].prior.size()) +
                        " validation documents; the eval/prior split needs at least 2 (add genres)");
    }
    print_plan(s, splits);

    RunStore store = unwrap(RunStore::open(g.db_path));
    s.store = &store;
    std::string stem = a.file.substr(a.file.find_last_of('/') + 1);
    s.group = stem.substr(0, stem.find('.')) + "@" + std::to_string(std::time(nullptr));
    const std::string stored = hdee_comments(c) + to_toml(s.base);
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(seeded_hash64(stored)));
    const int64_t summary_id =
        unwrap(store.create_run(s.base.run.name + "-ensembles", "hdee", stored, hash, s.base.run.seed));
    check(store.set_run_group(summary_id, s.group, ""));
    std::printf("group %s: summary run %lld\n\n", s.group.c_str(), (long long)summary_id);

    g_stop = false;
    auto prev = std::signal(SIGINT, on_sigint_hdee);
    std::vector<std::vector<Expert>> experts(kEnsembles);
    std::vector<HdeeEvaluation> ev;
    try {
        // Phase 1: train every expert, no communication between any two.
        for (size_t i = 0; i < kEnsembles; ++i)
            for (size_t d = 0; d < D; ++d) {
                std::optional<Expert> x = train_expert(s, i, d);
                if (!x) {
                    std::signal(SIGINT, prev);
                    check(store.finish_run(summary_id, RunStatus::kInterrupted, "an expert was interrupted"));
                    std::printf("interrupted; runs marked interrupted\n");
                    return 130;
                }
                std::printf("  val loss %.4f on %s, %.1f s\n", x->val_loss, c.domains[d].c_str(), x->seconds);
                experts[i].push_back(std::move(*x));
            }
        // Phase 2: score each ensemble on each domain's evaluation documents.
        ev = evaluate_ensembles(s, experts, splits, summary_id);
    } catch (const std::exception& ex) {
        std::signal(SIGINT, prev);
        if (Status w = store.finish_run(summary_id, RunStatus::kFailed, ex.what()); !w)
            std::fprintf(stderr, "thinwire: run status not stored: %s\n", w.message().c_str());
        throw;
    }
    std::signal(SIGINT, prev);
    check(store.finish_run(summary_id, RunStatus::kFinished, ""));
    print_tables(c, ev, splits);
    std::printf("\ngroup %s: %zu expert runs + summary run %lld, %.1f s\n", s.group.c_str(), kEnsembles * D,
                (long long)summary_id, s.wall());
    return 0;
}

}  // namespace

Command add_hdee(CLI::App& app, const Globals& g) {
    auto* sub = app.add_subcommand("hdee", "HDEE domain-expert ensembles at equal compute (METHODS.md §9)");
    auto args = std::make_shared<HdeeArgs>();
    sub->add_option("file", args->file, "TOML run file with an [hdee] table")->required();
    sub->add_option("--set", args->sets,
                    "Override a key, e.g. --set hdee.hetero_steps.steps=[100,150,250] (repeatable)");
    return {sub, [&g, args] { return run_hdee(g, *args); }};
}

}  // namespace tw::cli
