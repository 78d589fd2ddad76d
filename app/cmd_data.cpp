// `thinwire data prepare [FILE] [--variant NAME]... [--data-root DIR]`: builds (or loads) the tokenizer and shards under the
// data root and prints what it has, with the passes over the training tokens the run's budget implies.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>
#include <set>

#include "app/commands.h"
#include "coordinator/run_session.h"
#include "core/config_io.h"
#include "core/data_root.h"
#include "core/hdee_plan.h"
#include "core/token_budget.h"
#include "engine/data/data_warnings.h"
#include "engine/data/dataset.h"
#include "core/run_kind.h"

namespace tw::cli {
namespace {

struct DataArgs : LayoutArgs {
    std::string data_root;
};

// HDEE experts train on their domain's genres only: each expert's planned tokens (core/hdee_plan.h)
// as passes over its domain's training tokens, the figure that must stay small (docs/budgets.md).
void print_expert_passes(const RunConfig& run, const PreparedData& d,
                         const std::map<char, std::pair<int, int64_t>>& per_genre) {
    RunConfig planned = run;
    planned.model.vocab_size = d.vocab_size;  // the planner counts the head: the run's vocabulary
    auto ensembles = plan_hdee(planned);
    if (!ensembles) {
        std::printf("  hdee: %s\n", ensembles.message().c_str());
        return;
    }
    const double per_step = static_cast<double>(run.train.batch_size * run.model.seq_len);
    for (const HdeeEnsemble& e : *ensembles)
        for (size_t i = 0; i < run.hdee.domains.size(); ++i) {
            int64_t domain_tokens = 0;
            for (char g : run.hdee.domain_genres[i]) {
                auto it = per_genre.find(g);
                if (it != per_genre.end()) domain_tokens += it->second.second;
            }
            const double tokens = static_cast<double>(e.steps[i]) * per_step;
            std::printf("  expert %s.%s: %lld steps, %.3gM tokens, %.2f passes over its %lld training tokens\n",
                        e.name.c_str(), run.hdee.domains[i].c_str(), (long long)e.steps[i], tokens / 1e6,
                        domain_tokens > 0 ? tokens / static_cast<double>(domain_tokens) : 0.0, (long long)domain_tokens);
        }
}

int run_prepare(const DataArgs& a) {
    // A layout with variants, a sweep or seeds: the data of its first run (they share [data]), the
    // budget of each distinct run below (of the --variant ones only, when given).
    const RunPlan plan = unwrap(load_run_plan(a.file, a.sets, PlanSelection{a.variants, false}));
    RunConfig cfg = plan.runs.front().second;
    // The paths as a run reads them: relative to the data root, resolved (and confined) under it.
    const std::string root = unwrap(coordinator_data_root(a.data_root));
    check(relative_to_root(cfg, root));
    RunConfig here = cfg;
    check(confine_paths(here, root));
    cfg.data = here.data;
    PreparedData d = unwrap(prepare_data(cfg.data, [](const std::string& s) { std::printf("%s\n", s.c_str()); }));
    std::printf("data ready in %s\n", d.dir.empty() ? "(user shards)" : d.dir.c_str());
    std::printf("  vocabulary %lld, train %zu tokens, val %zu tokens\n", (long long)d.vocab_size, d.train->size(),
                d.val->size());
    if (!d.tokenizer_kind.empty()) {
        std::printf("  tokenizer %s:", d.tokenizer_kind.c_str());
        for (const auto& f : d.tokenizer_files) std::printf(" %s", f.c_str());
        std::printf("\n");
    }
    std::map<char, std::pair<int, int64_t>> per_genre;  // genre → (documents, train tokens)
    for (auto& s : d.docs) {
        if (s.is_val) continue;
        per_genre[s.genre].first++;
        per_genre[s.genre].second += s.length;
    }
    for (auto& [g, v] : per_genre) std::printf("  genre %c: %3d train documents, %8lld tokens\n", g, v.first, (long long)v.second);
    if (d.vocab_size > 0)
        std::printf("  unigram baseline: %.4f nats/token on val\n", unigram_loss(*d.train, *d.val, d.vocab_size));
    // Each run's budget against this data: passes over the training tokens (docs/budgets.md); the
    // seeds of a variant share theirs.
    std::set<std::string> shown;
    for (const auto& [name, run] : plan.runs) {
        const double tokens = static_cast<double>(run.train.steps) * static_cast<double>(tokens_per_step(run));
        const int64_t params = budget_parameters(run);
        char line[256];
        std::snprintf(line, sizeof line,
                      "  budget: %lld steps x %lld tokens = %.3gM tokens, %.1f per parameter (N = %lld), %.2f epochs",
                      (long long)run.train.steps, (long long)tokens_per_step(run), tokens / 1e6,
                      tokens / static_cast<double>(params), (long long)params,
                      d.train->size() > 0 ? tokens / static_cast<double>(d.train->size()) : 0.0);
        if (!shown.insert(run.run.name + line).second) continue;
        std::printf("%s%s\n", line, plan.runs.size() > 1 ? ("  [" + run.run.name + "]").c_str() : "");
        if (is_run_kind(run, RunKind::kHdee)) print_expert_passes(run, d, per_genre);
    }
    std::set<std::string> warned;
    for (const auto& [name, run] : plan.runs)
        for (const std::string& w : data_warnings(run, d))
            if (warned.insert(w).second)
                std::printf("%s%s\n", w.c_str(), plan.runs.size() > 1 && w.find("epochs") != std::string::npos
                                                      ? ("  [" + run.run.name + "]").c_str()
                                                      : "");
    return 0;
}

}  // namespace

Command add_data(CLI::App& app, const Globals&) {
    auto* sub = app.add_subcommand("data", "Corpus and tokenizer tools");
    sub->require_subcommand(1);
    auto* prep = sub->add_subcommand("prepare", "Fetch-free preparation: detag Brown (or read text), train the "
                                                "tokenizer, write train/val shards into the cache");
    auto args = std::make_shared<DataArgs>();
    prep->add_option("file", args->file, "TOML run file whose [data] section to use (default: built-in)");
    prep->add_option("--set", args->sets, "Override a key, e.g. --set data.vocab_size=8192");
    prep->add_option("--variant", args->variants, "only this variant of the file's [variants] (repeatable)");
    prep->add_option("--data-root", args->data_root,
                     "the folder the data paths are relative to (default $XDG_CACHE_HOME/thinwire or ~/.cache/thinwire)");
    return {sub, [args] { return run_prepare(*args); }};
}

}  // namespace tw::cli
