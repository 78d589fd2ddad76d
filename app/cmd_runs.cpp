// `thinwire runs list | show | compare | export`: the run history from the SQLite store.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "app/commands.h"
#include "app/cmd_runs_compare.h"
#include "app/cmd_runs_retime.h"
#include "core/algorithm.h"
#include "core/config_io.h"
#include "core/metric_names.h"
#include "core/network.h"
#include "core/skippipe.h"
#include "core/status.h"
#include "core/algorithm.h"
#include "core/timeline.h"
#include "storage/export.h"
#include "storage/run_liveness.h"
#include "storage/run_store.h"
#include "storage/run_traces.h"

namespace tw::cli {
namespace {

struct RunsArgs {
    std::string sub;
    std::vector<int64_t> ids;
    std::string format = "csv";
    std::string out;
    std::string sqlite;
    RetimeArgs retime;
};

int run_list(RunStore& store, const Globals& g) {
    auto runs = unwrap(store.list_runs());
    if (runs.empty()) {
        std::printf("no runs in %s\n", g.db_path.c_str());
        return 0;
    }
    std::printf("%5s  %-20s  %-11s  %-20s  %7s  %10s  %10s  %s\n", "id", "name", "status", "created (UTC)", "steps",
                "train loss", "val loss", "group");
    for (auto& r : runs)
        std::printf("%5lld  %-20s  %-11s  %-20s  %7lld  %10s  %10s  %s\n", (long long)r.id,
                    r.name.substr(0, 20).c_str(), to_string(r.status), r.created_at.substr(0, 19).c_str(),
                    (long long)r.last_step.value_or(0), fmt_opt(r.last_train_loss).c_str(),
                    fmt_opt(r.last_val_loss).c_str(), r.group.empty() ? "-" : r.group.c_str());
    return 0;
}

// A value or "-" when it is unknown / not applicable.
std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }
std::string or_dash(int64_t v, int64_t none) { return v == none ? "-" : std::to_string(v); }

void print_nodes(const std::vector<RunNode>& nodes) {
    if (nodes.empty()) return;
    const char* const row = "%-14s %-24s %-12s %-9s %7s %5s %4s %-16s %-10s %7s\n";
    std::printf("\n");
    std::printf(row, "node", "endpoint", "role", "kind", "replica", "stage", "rank", "host", "version", "threads");
    for (auto& n : nodes)
        std::printf(row, n.node.c_str(), or_dash(n.endpoint).c_str(), or_dash(n.role).c_str(), or_dash(n.kind).c_str(),
                    or_dash(n.replica, -1).c_str(), or_dash(n.stage, -1).c_str(), or_dash(n.rank, -1).c_str(),
                    or_dash(n.host).c_str(), or_dash(n.version).c_str(), or_dash(n.threads, 0).c_str());
}

int run_show(RunStore& store, int64_t id) {
    auto r = unwrap(store.get_run(id));
    std::printf("run %lld \"%s\" (%s)\n  status   %s%s%s\n  created  %s\n  finished %s\n  seed     %lld\n  config   %s\n",
                (long long)r.id, r.name.c_str(), r.kind.c_str(), to_string(r.status), r.reason.empty() ? "" : ": ",
                r.reason.c_str(), r.created_at.c_str(), r.finished_at.value_or("-").c_str(), (long long)r.seed,
                r.config_hash.c_str());
    if (!r.notes.empty()) std::printf("  notes    %s\n", r.notes.c_str());
    if (!r.tags.empty()) std::printf("  tags     %s\n", r.tags.c_str());
    if (!r.group.empty() || !r.cluster.empty())
        std::printf("  group    %s\n  cluster  %s\n", r.group.empty() ? "-" : r.group.c_str(),
                    r.cluster.empty() ? "-" : r.cluster.c_str());
    print_nodes(unwrap(store.nodes(id)));
    // Events (faults, lost members, rejoins, checkpoints, ...), oldest first.
    const auto events = unwrap(store.events(id));
    if (!events.empty()) std::printf("\nevents:\n");
    for (auto& e : events)
        std::printf("  %9.2f s  %-14s %-12s %s\n", e.wall_s, e.node.c_str(), e.kind.c_str(), e.text.c_str());
    std::printf("\n%-22s %7s %8s %12s %12s %12s\n", "metric", "points", "last step", "first", "last", "min");
    for (auto& name : unwrap(store.metric_names(id))) {
        auto rows = unwrap(store.metrics(id, name));
        double mn = rows.front().value;
        for (auto& m : rows) mn = std::min(mn, m.value);
        std::printf("%-22s %7zu %8lld %12.5g %12.5g %12.5g\n", name.c_str(), rows.size(), (long long)rows.back().step,
                    rows.front().value, rows.back().value, mn);
    }
    std::printf("\nresolved config:\n%s", unwrap(store.config_toml(id)).c_str());
    return 0;
}


int run_export(RunStore& store, const RunsArgs& a) {
    const int64_t id = a.ids.at(0);
    if (!a.sqlite.empty()) {
        check(store.copy_run_to(id, a.sqlite));
        std::fprintf(stderr, "run %lld written to %s\n", (long long)id, a.sqlite.c_str());
        return 0;
    }
    std::ofstream file;
    if (!a.out.empty()) {
        file.open(a.out);
        if (!file) throw Error("cannot write " + a.out);
    }
    std::ostream& out = a.out.empty() ? std::cout : file;
    check(a.format == "json" ? write_run_json(store, id, out) : write_run_csv(store, id, out));
    return 0;
}

int dispatch(const Globals& g, const RunsArgs& a) {
    RunStore store = unwrap(RunStore::open(g.db_path));
    // A running run whose coordinator is gone is interrupted: recorded before anything is shown.
    unwrap(mark_lost_runs(store));
    if (a.sub == "list") return run_list(store, g);
    if (a.sub == "show") return run_show(store, a.ids.at(0));
    if (a.sub == "compare") return run_compare(store, a.ids);
    if (a.sub == "retime") return run_retime(store, a.retime);
    return run_export(store, a);
}

}  // namespace

Command add_runs(CLI::App& app, const Globals& g) {
    auto* sub = app.add_subcommand("runs", "Run history");
    sub->require_subcommand(1);
    auto args = std::make_shared<RunsArgs>();
    auto pick = [args](const char* name) { return [args, name] { args->sub = name; }; };
    sub->add_subcommand("list", "List runs with their status and last losses")->callback(pick("list"));
    auto* show = sub->add_subcommand("show", "One run: status, metric summary, resolved config");
    show->add_option("run", args->ids, "run id")->required()->expected(1);
    show->callback(pick("show"));
    auto* cmp = sub->add_subcommand("compare", "Runs side by side: losses and the settings that differ");
    cmp->add_option("runs", args->ids, "run ids")->required()->expected(2, 64);
    cmp->callback(pick("compare"));
    auto* exp = sub->add_subcommand("export", "A run's metrics as CSV or JSON, or the whole run as its own SQLite file");
    exp->add_option("run", args->ids, "run id")->required()->expected(1);
    exp->add_option("--format", args->format, "csv | json")->check(CLI::IsMember({"csv", "json"}))->capture_default_str();
    exp->add_option("--out", args->out, "file to write (default: standard output)");
    exp->add_option("--sqlite", args->sqlite, "write a standalone SQLite database with just this run");
    exp->callback(pick("export"));
    auto* rt = sub->add_subcommand("retime", "Recompute a finished run's simulated timeline for another network");
    add_retime_options(rt, args->retime);
    rt->callback(pick("retime"));
    return {sub, [&g, args] { return dispatch(g, *args); }};
}

}  // namespace tw::cli
