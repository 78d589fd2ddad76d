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
#include "core/algorithm.h"
#include "core/config_io.h"
#include "core/metric_names.h"
#include "core/network.h"
#include "core/skippipe.h"
#include "core/status.h"
#include "core/algorithm.h"
#include "core/timeline.h"
#include "storage/export.h"
#include "storage/run_store.h"
#include "storage/run_traces.h"

namespace tw::cli {
namespace {

std::string fmt_opt(const std::optional<double>& v) {
    if (!v) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", *v);
    return buf;
}

struct RunsArgs {
    std::string sub;
    std::vector<int64_t> ids;
    std::string format = "csv";
    std::string out;
    std::string sqlite;
    std::string network;
    double outer_bandwidth_bps = 0, outer_latency_s = 0;
    bool rounds = false;  // retime: also every round's clock
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


// A config key's value, or "-" where the run does not have the key.
std::string value_of(const std::map<std::string, std::string>& config, const std::string& key) {
    auto it = config.find(key);
    return it == config.end() ? "-" : it->second;
}

int run_compare(RunStore& store, const std::vector<int64_t>& ids) {
    if (ids.size() < 2) throw Error("runs compare needs at least two run ids");
    std::vector<RunSummary> runs;
    std::vector<std::map<std::string, std::string>> configs;
    for (auto id : ids) {
        runs.push_back(unwrap(store.get_run(id)));
        configs.push_back(config_key_values(unwrap(store.config_toml(id))));
    }
    auto row = [&](const char* label, auto cell) {
        std::printf("%-24s", label);
        for (size_t i = 0; i < runs.size(); ++i) std::printf(" %16s", cell(i).c_str());
        std::printf("\n");
    };
    row("run", [&](size_t i) { return std::to_string(runs[i].id) + " " + runs[i].name.substr(0, 12); });
    row("status", [&](size_t i) { return std::string(to_string(runs[i].status)); });
    row("steps", [&](size_t i) { return std::to_string(runs[i].last_step.value_or(0)); });
    row("last train loss", [&](size_t i) { return fmt_opt(runs[i].last_train_loss); });
    row("last val loss", [&](size_t i) { return fmt_opt(runs[i].last_val_loss); });
    row("best val loss", [&](size_t i) {
        auto v = unwrap(store.metrics(runs[i].id, metric::kValLoss));
        std::optional<double> best;
        for (auto& m : v) best = best ? std::min(*best, m.value) : m.value;
        return fmt_opt(best);
    });
    std::set<std::string> keys;
    for (auto& c : configs)
        for (auto& [k, v] : c) keys.insert(k);
    bool header = false;
    for (auto& k : keys) {
        bool differs = false;
        for (auto& c : configs) differs = differs || value_of(c, k) != value_of(configs[0], k);
        if (!differs || k == "run.name") continue;
        if (!header) std::printf("\nsettings that differ:\n");
        header = true;
        row(k.c_str(), [&](size_t i) { return value_of(configs[i], k); });
    }
    if (!header) std::printf("\nsettings: identical apart from the name\n");
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

// "sparseloco, 4 replicas" or "pipelines: 2 of 4 replicas × 2 stages, sparseloco".
std::string run_kind(const RunConfig& c) {
    if (c.skippipe.enabled())
        return "SkipPipe, " + std::to_string(c.skippipe.stages) + " stages × " + std::to_string(c.skippipe.replicas) +
               " replicas";
    const std::string algo = to_string(algorithm_of(c));
    const std::string replicas = std::to_string(c.outer.replicas) + " replica" + (c.outer.replicas == 1 ? "" : "s");
    if (c.cluster.stages <= 1)
        return algo + ", " + replicas +
               (c.cluster.nodes_per_replica > 1 ? " × " + std::to_string(c.cluster.nodes_per_replica) + " nodes" : "");
    return "pipelines: " + std::to_string(c.pipeline_replicas()) + " of " + replicas + " × " +
           std::to_string(c.cluster.stages) + " stages, " + algo;
}

std::string link_text(const LinkSpec& l) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.4g Mb/s, %.4g ms", l.bandwidth_bps / 1e6, 1e3 * l.latency_s);
    return buf;
}

int run_retime(RunStore& store, const RunsArgs& a) {
    const int64_t id = a.ids.at(0);
    const StoredRunTraces run = unwrap(load_run_traces(store, id));
    const NetworkProfile net = unwrap(retime_network(run, a.network, a.outer_bandwidth_bps, a.outer_latency_s));
    auto timeline = retime_loaded(run, net);
    if (!timeline) throw Error("run " + std::to_string(id) + " (" + run_kind(run.cfg) + "): " + timeline.message());
    const Timeline& t = *timeline;
    std::printf("run %lld (%s) re-timed for %s: outer link %s, stage link %s, intra-replica link %s; recorded with %s\n",
                (long long)id, run_kind(run.cfg).c_str(), a.network.c_str(), link_text(net.outer).c_str(),
                link_text(net.stage).c_str(), link_text(net.intra).c_str(), run.cfg.network.profile.c_str());
    std::printf("  %-12s %16s %16s %12s\n", "node", "recorded sim (s)", "retimed sim (s)", "utilisation");
    for (size_t i = 0; i < run.nodes.size(); ++i)
        std::printf("  %-12s %16.6f %16.6f %11.1f%%\n", run.nodes[i].name.c_str(), run.nodes[i].trace.recorded_final_s,
                    t.sim_s[i], 100 * t.compute_s[i] / (t.compute_s[i] + t.exposed_s[i]));
    if (!a.rounds) return 0;
    // Every round's clock at full precision (%.17g round-trips a double), to compare bit for bit.
    std::printf("\n  %-12s %7s %24s %24s\n", "node", "step", "recorded clock (s)", "retimed clock (s)");
    for (size_t i = 0; i < run.nodes.size(); ++i) {
        const char* node = run.nodes[i].name.c_str();
        for (auto& [step, recorded] : run.nodes[i].trace.recorded_round_s) {
            auto it = t.clock_at[i].find(step);
            std::printf("  %-12s %7lld %24.17g %24.17g\n", node, (long long)step, recorded,
                        it == t.clock_at[i].end() ? NAN : it->second);
        }
        std::printf("  %-12s %7s %24.17g %24.17g\n", node, "final", run.nodes[i].trace.recorded_final_s, t.sim_s[i]);
    }
    return 0;
}

int dispatch(const Globals& g, const RunsArgs& a) {
    RunStore store = unwrap(RunStore::open(g.db_path));
    if (a.sub == "list") return run_list(store, g);
    if (a.sub == "show") return run_show(store, a.ids.at(0));
    if (a.sub == "compare") return run_compare(store, a.ids);
    if (a.sub == "retime") return run_retime(store, a);
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
    rt->add_option("run", args->ids, "run id")->required()->expected(1);
    rt->add_option("--network", args->network, "datacenter | wan-1g | wan-100m | home-20m")->required();
    rt->add_option("--outer-bandwidth-bps", args->outer_bandwidth_bps, "override the outer link's bandwidth");
    rt->add_option("--outer-latency-s", args->outer_latency_s, "override the outer link's latency");
    rt->add_flag("--rounds", args->rounds, "also print every round's recorded and re-timed clock at full precision");
    rt->callback(pick("retime"));
    return {sub, [&g, args] { return dispatch(g, *args); }};
}

}  // namespace tw::cli
