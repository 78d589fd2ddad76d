// `thinwire hdee FILE [--set k=v]... [--data-root DIR]`: HDEE (docs/methods.md §9, docs/hdee.md) as a
// short alias of `thinwire run FILE`. The file's [hdee] section makes the run's nodes experts (one
// per ensemble and domain, core/hdee_plan.h); they train alone, score the shared evaluation
// documents and send their log-probabilities up, and the coordinator combines them
// (core/hdee_results.h). The alias only insists that the file has an [hdee] section.
#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "core/config_io.h"
#include "core/run_kind.h"

namespace tw::cli {
namespace {

struct HdeeArgs {
    std::string file;
    std::vector<std::string> sets;
    std::string data_root;
};

int run_hdee(const Globals& g, const HdeeArgs& a) {
    const RunPlan plan = unwrap(load_run_plan(a.file, a.sets));
    for (auto& [variant, cfg] : plan.runs)
        if (!is_run_kind(cfg, RunKind::kHdee))
            throw Error(a.file + (variant.empty() ? "" : " (" + variant + ")") +
                        ": hdee.domains: `thinwire hdee` needs an [hdee] section with its domains "
                        "(`thinwire run` runs other layouts)");
    return run_layout(g, a.file, a.sets, false, a.data_root);
}

}  // namespace

Command add_hdee(CLI::App& app, const Globals& g) {
    auto* sub = app.add_subcommand("hdee", "HDEE domain-expert ensembles at equal compute (docs/methods.md §9): "
                                           "`thinwire run` for a layout with an [hdee] section");
    auto args = std::make_shared<HdeeArgs>();
    sub->add_option("file", args->file, "TOML run layout with an [hdee] section, e.g. experiments/hdee.toml")
        ->required();
    sub->add_option("--set", args->sets, "Override a key, e.g. --set train.steps=60 or --set cluster.mode=local");
    sub->add_option("--data-root", args->data_root, "as for `thinwire run`");
    return {sub, [&g, args] { return run_hdee(g, *args); }};
}

}  // namespace tw::cli
