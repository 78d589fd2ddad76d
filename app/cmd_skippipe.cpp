// `thinwire skippipe FILE [--set k=v]... [--full]`: a short alias of `thinwire run FILE` for SkipPipe
// layouts (docs/methods.md §8, docs/skippipe.md). The run goes the one way every run goes: layout →
// coordinator → S·N SkipPipe nodes (engine/worker/skippipe_worker.h) → metric stream → store.
// `--full` is `--set skippipe.full=true` (the full-pipeline baseline) with "-full" added to the name.
#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "core/config_io.h"
#include "core/status.h"
#include "core/run_kind.h"

namespace tw::cli {
namespace {

struct SkipArgs {
    std::string file, data_root;
    std::vector<std::string> sets;
    bool full = false;
};

int run_skippipe(const Globals& g, const SkipArgs& a) {
    std::vector<std::string> sets = a.sets;
    const RunPlan plan = unwrap(load_run_plan(a.file, sets));
    for (auto& [variant, cfg] : plan.runs)
        if (!is_run_kind(cfg, RunKind::kSkipPipe))
            throw Error(a.file + (variant.empty() ? "" : " (" + variant + ")") +
                        ": not a SkipPipe layout: set skippipe.stages ≥ 2 in its [skippipe] section");
    if (a.full) {
        sets.push_back("skippipe.full=true");
        if (plan.runs.size() == 1) sets.push_back("run.name=" + plan.runs.front().second.run.name + "-full");
    }
    return run_layout(g, a.file, sets, false, a.data_root);
}

}  // namespace

Command add_skippipe(CLI::App& app, const Globals& g) {
    auto* sub = app.add_subcommand("skippipe", "SkipPipe partial pipelines on nodes (docs/methods.md §8): `run` for a "
                                               "[skippipe] layout");
    auto args = std::make_shared<SkipArgs>();
    sub->add_option("file", args->file, "TOML layout with a [skippipe] section")->required();
    sub->add_option("--set", args->sets, "Override a key, e.g. --set skippipe.path_stages=2 (repeatable)");
    sub->add_flag("--full", args->full, "Train the full-pipeline baseline (skippipe.full = true)");
    sub->add_option("--data-root", args->data_root, "as for `thinwire run`");
    return {sub, [&g, args] { return run_skippipe(g, *args); }};
}

}  // namespace tw::cli
