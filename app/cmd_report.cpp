// `thinwire report RUN... [--group NAME] [--out DIR] [--force]`: a Markdown report of stored runs
// (report/markdown_report.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "app/commands.h"
#include "report/markdown_report.h"
#include "storage/run_store.h"

namespace tw::cli {
namespace {

int run_report(const Globals& g, ReportOptions a) {
    RunStore store = unwrap(RunStore::open(g.db_path, StoreAccess::kExisting));
    a.db_label = g.db_path;
    const ReportFiles files = unwrap(write_report(store, a));
    std::printf("wrote %s", files.report.c_str());
    for (const std::string& p : files.plots) std::printf(", %s", p.c_str());
    if (files.plots.empty()) std::printf(" (no plots: this build has no ImGui)");
    std::printf("\n");
    return 0;
}

}  // namespace

Command add_report(CLI::App& app, const Globals& g) {
    auto args = std::make_shared<ReportOptions>();
    auto* sub = app.add_subcommand(
        "report", "A Markdown report of runs: settings that differ, summary, loss against bytes and simulated time");
    sub->add_option("runs", args->ids, "run ids");
    sub->add_option("--group", args->groups, "every run of this group (repeat for several); a layout's name alone means its latest launch")
        ->allow_extra_args(false);  // one name per --group, so `--group g 3` still reads 3 as a run id
    sub->add_option("--out", args->out, "directory to write (default: report-<first id>)");
    sub->add_flag("--force", args->force, "overwrite an existing report");
    sub->add_option("--width", args->width, "plot width in pixels")
        ->check(CLI::Range(200, 4000))
        ->capture_default_str();
    sub->add_option("--height", args->height, "plot height in pixels")
        ->check(CLI::Range(150, 4000))
        ->capture_default_str();
    return {sub, [&g, args] { return run_report(g, *args); }};
}

}  // namespace tw::cli
