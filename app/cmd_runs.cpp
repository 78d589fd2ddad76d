// `thinwire runs list | show | compare | export | retime | delete`: the run history from the SQLite
// store. Every subcommand needs an existing store (a mistyped --db is an error, never a new file).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <unistd.h>

#include "app/commands.h"
#include "app/cmd_runs_compare.h"
#include "storage/run_groups.h"
#include "app/cmd_runs_retime.h"
#include "core/algorithm.h"
#include "core/config_io.h"
#include "core/metric_names.h"
#include "core/network.h"
#include "core/output_file.h"
#include "core/skippipe.h"
#include "core/status.h"
#include "core/timeline.h"
#include "storage/export.h"
#include "storage/run_folder.h"
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
    bool force = false;  // export: replace an existing --out file
    bool yes = false;    // delete: no question asked
    // list filters ("" = any): status, group (exact), algorithm (exact), name (substring).
    std::string status, group, algorithm, name;
    std::vector<std::string> compare_groups;  // runs compare --group
    RetimeArgs retime;
};

// The run's outer algorithm from its stored config ("-" when the config does not name one).
std::string algorithm_of_run(RunStore& store, int64_t id) {
    auto toml = store.config_toml(id);
    if (!toml) return "-";
    const auto kv = config_key_values(*toml);
    auto it = kv.find("outer.algorithm");
    if (it == kv.end()) return "-";
    std::string a = it->second;
    if (a.size() >= 2 && (a.front() == '"' || a.front() == '\'') && a.back() == a.front()) a = a.substr(1, a.size() - 2);
    return a;
}

int run_list(RunStore& store, const Globals& g, const RunsArgs& a) {
    if (!a.status.empty() && !parse_run_status(a.status))
        throw Error("runs list --status " + a.status + ": not a status (running, finished, failed, interrupted)");
    auto all = unwrap(store.list_runs());
    struct Row {
        RunSummary r;
        std::string algorithm;
    };
    std::vector<Row> rows;
    for (auto& r : all) {
        std::string algo = algorithm_of_run(store, r.id);
        if (!a.status.empty() && to_string(r.status) != a.status) continue;
        if (!a.group.empty() && r.group != a.group && r.group.rfind(a.group + "@", 0) != 0) continue;
        if (!a.algorithm.empty() && algo != a.algorithm) continue;
        if (!a.name.empty() && r.name.find(a.name) == std::string::npos) continue;
        rows.push_back({r, std::move(algo)});
    }
    if (rows.empty()) {
        std::printf(all.empty() ? "no runs in %s\n" : "no runs in %s match\n", g.db_path.c_str());
        return 0;
    }
    // Names in full: the column is as wide as the longest.
    int wn = 4, wg = 5;
    for (auto& row : rows) {
        wn = std::max(wn, static_cast<int>(row.r.name.size()));
        wg = std::max(wg, static_cast<int>(row.r.group.size()));
    }
    // The algorithm goes last: scripts that read the columns before it keep working.
    std::printf("%5s  %-*s  %-11s  %-20s  %7s  %10s  %10s  %-*s  %s\n", "id", wn, "name", "status", "created (UTC)",
                "steps", "train loss", "val loss", wg, "group", "algorithm");
    for (auto& row : rows) {
        const RunSummary& r = row.r;
        std::printf("%5lld  %-*s  %-11s  %-20s  %7lld  %10s  %10s  %-*s  %s\n", (long long)r.id, wn, r.name.c_str(),
                    to_string(r.status), r.created_at.substr(0, 19).c_str(), (long long)r.last_step.value_or(0),
                    fmt_opt(r.last_train_loss).c_str(), fmt_opt(r.last_val_loss).c_str(), wg,
                    r.group.empty() ? "-" : r.group.c_str(), row.algorithm.c_str());
    }
    return 0;
}

// Deletes the runs after one question per command (or --yes). Without a terminal to ask on, --yes
// is required: a script never deletes by accident.
int run_delete(RunStore& store, const RunsArgs& a) {
    std::vector<RunSummary> runs;
    for (int64_t id : a.ids) runs.push_back(unwrap(store.get_run(id)));  // every id exists before any goes
    if (!a.yes) {
        if (!::isatty(STDIN_FILENO))
            throw Error("runs delete: no terminal to confirm on; add --yes to delete without a question");
        for (auto& r : runs)
            std::printf("  %lld \"%s\" %s, %lld steps%s\n", (long long)r.id, r.name.c_str(), to_string(r.status),
                        (long long)r.last_step.value_or(0),
                        run_has_model(store.path(), r.id) ? (", and its model in " + run_folder(store.path(), r.id)).c_str() : "");
        std::printf("delete %zu run(s) from %s? [y/N] ", runs.size(), store.path().c_str());
        std::fflush(stdout);
        std::string answer;
        if (!std::getline(std::cin, answer) || (answer != "y" && answer != "Y" && answer != "yes")) {
            std::printf("nothing deleted\n");
            return 1;
        }
    }
    for (auto& r : runs) {
        check(store.delete_run(r.id));
        // Its folder goes with it: the final model, tokenizer and config (storage/run_folder.h).
        const std::string dir = run_folder(store.path(), r.id);
        std::error_code ec;
        const bool had = !dir.empty() && std::filesystem::exists(dir, ec);
        if (had) std::filesystem::remove_all(dir, ec);
        std::printf("deleted run %lld \"%s\"%s\n", (long long)r.id, r.name.c_str(),
                    !had ? "" : ec ? (" (its folder " + dir + " not removed: " + ec.message() + ")").c_str()
                                   : (" and its folder " + dir).c_str());
    }
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
    // What the numbers were computed on: bit-identical re-runs hold on one machine; another CPU
    // or BLAS gives other last digits. One line per distinct platform.
    std::map<std::string, std::vector<std::string>> platforms;
    for (auto& n : nodes)
        platforms[or_dash(n.cpu) + ", BLAS " + or_dash(n.blas)].push_back(n.node);
    for (auto& [platform, names] : platforms)
        std::printf("computed on %s: %s\n", platform.c_str(),
                    names.size() == nodes.size() ? "every node" : (names.front() + (names.size() > 1 ? " and " +
                                                       std::to_string(names.size() - 1) + " more" : "")).c_str());
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
    std::printf("  model    %s\n", run_has_model(store.path(), id) ? run_folder(store.path(), id).c_str() : "-");
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
    if (!a.sqlite.empty()) {  // copy_run_to refuses the store itself (core/output_file.h)
        check(store.copy_run_to(id, a.sqlite));
        std::fprintf(stderr, "run %lld written to %s\n", (long long)id, a.sqlite.c_str());
        return 0;
    }
    auto write = [&](std::ostream& out) {
        return a.format == "json" ? write_run_json(store, id, out) : write_run_csv(store, id, out);
    };
    if (a.out.empty()) {
        check(write(std::cout));
        return 0;
    }
    // The run is checked first, and the file written beside the target and moved into place only
    // when complete: a failed export leaves an existing file as it was.
    check(store.get_run(id).status());
    check(write_output_file(a.out, a.force ? Overwrite::kReplace : Overwrite::kRefuse, store.path(), write));
    std::fprintf(stderr, "run %lld written to %s\n", (long long)id, a.out.c_str());
    return 0;
}

int dispatch(const Globals& g, const RunsArgs& a) {
    RunStore store = unwrap(RunStore::open(g.db_path, StoreAccess::kExisting));
    // A running run whose coordinator is gone is interrupted: recorded before anything is shown.
    unwrap(mark_lost_runs(store));
    if (a.sub == "list") return run_list(store, g, a);
    if (a.sub == "delete") return run_delete(store, a);
    if (a.sub == "show") return run_show(store, a.ids.at(0));
    if (a.sub == "compare") {
        std::vector<int64_t> ids = a.ids;
        for (const std::string& group : a.compare_groups)
            for (int64_t id : unwrap(runs_in_group(store, group, g.db_path)))
                if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
        return run_compare(store, ids);
    }
    if (a.sub == "retime") return run_retime(store, a.retime);
    return run_export(store, a);
}

}  // namespace

Command add_runs(CLI::App& app, const Globals& g) {
    auto* sub = app.add_subcommand("runs", "Run history");
    sub->require_subcommand(1);
    auto args = std::make_shared<RunsArgs>();
    auto pick = [args](const char* name) { return [args, name] { args->sub = name; }; };
    auto* list = sub->add_subcommand("list", "List runs with their algorithm, status and last losses");
    list->add_option("--status", args->status, "only runs with this status (running, finished, failed, interrupted)");
    list->add_option("--group", args->group, "only runs of this group (the name the layout gave it)");
    list->add_option("--algorithm", args->algorithm, "only runs of this outer algorithm (ddp, diloco, ...)");
    list->add_option("--name", args->name, "only runs whose name contains this text");
    list->callback(pick("list"));
    auto* show = sub->add_subcommand("show", "One run: status, metric summary, resolved config");
    show->add_option("run", args->ids, "run id")->required()->expected(1);
    show->callback(pick("show"));
    auto* cmp = sub->add_subcommand("compare", "Runs side by side: losses and the settings that differ");
    cmp->add_option("runs", args->ids, "run ids")->expected(0, 256);
    cmp->add_option("--group", args->compare_groups,
                    "every run of this group (repeat for several); a layout's name alone means its latest launch")
        ->allow_extra_args(false);
    cmp->callback(pick("compare"));
    auto* exp = sub->add_subcommand("export", "A run's metrics as CSV or JSON, or the whole run as its own SQLite file");
    exp->add_option("run", args->ids, "run id")->required()->expected(1);
    exp->add_option("--format", args->format, "csv | json")->check(CLI::IsMember({"csv", "json"}))->capture_default_str();
    exp->add_option("--out", args->out, "file to write (default: standard output)");
    exp->add_option("--sqlite", args->sqlite, "write a standalone SQLite database with just this run (a new file)");
    exp->add_flag("--force", args->force, "replace an existing --out file");
    exp->callback(pick("export"));
    auto* del = sub->add_subcommand("delete", "Delete runs (metrics, events, nodes) from the store, after a question");
    del->add_option("runs", args->ids, "run ids")->required()->expected(1, 1000);
    del->add_flag("--yes", args->yes, "delete without asking (required without a terminal)");
    del->callback(pick("delete"));
    auto* rt = sub->add_subcommand("retime", "Recompute a finished run's simulated timeline for another network");
    add_retime_options(rt, args->retime);
    rt->callback(pick("retime"));
    return {sub, [&g, args] { return dispatch(g, *args); }};
}

}  // namespace tw::cli
