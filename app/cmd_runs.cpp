// `thinwire runs list | show | compare | export`: the run history from the SQLite store.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "app/commands.h"
#include "core/algorithm.h"
#include "core/config_io.h"
#include "core/network.h"
#include "core/skippipe.h"
#include "core/status.h"
#include "core/timeline.h"
#include "storage/export.h"
#include "storage/run_store.h"

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
        auto v = unwrap(store.metrics(runs[i].id, "val.loss"));
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

// A SkipPipe run's clock is its schedules' (core/skippipe.h): replayed from the stored config and
// the stage times its node (0, 0) recorded, on `network` with the run's own link overrides.
int retime_skippipe(RunStore& store, int64_t id, const RunConfig& cfg, const std::string& network) {
    NetworkConfig n = cfg.network;
    n.profile = network;
    const NetworkProfile net = unwrap(network_profile(n));
    auto first = [&](const char* name) {
        auto rows = unwrap(store.metrics(id, name));
        if (rows.empty()) throw Error("run " + std::to_string(id) + " has no " + name + " metric to re-time with");
        return rows.front().value;
    };
    const FwdBwd block{first("skippipe.block_fwd_s"), first("skippipe.block_bwd_s")};
    const FwdBwd head{first("skippipe.head_fwd_s"), first("skippipe.head_bwd_s")};
    std::map<std::string, MetricRecord> last;  // node → its last step's record (the clock after it)
    for (auto& m : unwrap(store.metrics(id, "train.compute_s")))
        if (!last.count(m.node) || m.step > last[m.node].step) last[m.node] = m;
    int64_t steps = 0;
    for (auto& [node, m] : last) steps = std::max(steps, m.step);
    const auto clocks = unwrap(skippipe_clocks(cfg, net, block, head, steps));
    std::printf("run %lld (SkipPipe) re-timed for %s: stage link %.4g Mb/s, %.4g ms; intra link %.4g Mb/s, %.4g ms; "
                "recorded with %s\n", (long long)id, network.c_str(), net.stage.bandwidth_bps / 1e6,
                1e3 * net.stage.latency_s, net.intra.bandwidth_bps / 1e6, 1e3 * net.intra.latency_s,
                cfg.network.profile.c_str());
    std::printf("  %-12s %6s %18s %18s\n", "node", "steps", "recorded sim (s)", "retimed sim (s)");
    for (auto& [node, m] : last)
        std::printf("  %-12s %6lld %18.9f %18.9f\n", node.c_str(), (long long)m.step, m.sim_s,
                    m.step > 0 ? clocks[static_cast<size_t>(m.step - 1)] : 0.0);
    return 0;
}

int run_retime(RunStore& store, const RunsArgs& a) {
    const int64_t id = a.ids.at(0);
    if (auto c = parse_config(unwrap(store.config_toml(id)), "run " + std::to_string(id)); c && c->skippipe.enabled())
        return retime_skippipe(store, id, *c, a.network);
    const NetworkProfile net = unwrap(network_profile(a.network, a.outer_bandwidth_bps, a.outer_latency_s));
    std::map<std::string, ReplicaTrace> traces;
    std::map<std::string, double> recorded;  // node → its last simulated clock
    const auto names = unwrap(store.metric_names(id));
    auto has = [&](const char* n) { return std::find(names.begin(), names.end(), n) != names.end(); };
    if (has("round.comm_s") && !has("round.bytes"))
        throw Error("run " + std::to_string(id) + " was recorded before per-round bytes were stored; it cannot be re-timed");
    // A node's last clock is on its last train.compute_s record or, after a round, on that round's
    // round.bytes record: those two metrics are all the timeline needs.
    for (const std::string& name : trace_metric_names())
        for (auto& m : unwrap(store.metrics(id, name))) {
            add_to_trace(traces[m.node], m);
            if (name == "train.compute_s" || name == "round.bytes") recorded[m.node] = std::max(recorded[m.node], m.sim_s);
        }
    if (traces.empty()) throw Error("run " + std::to_string(id) + " has no train.compute_s metrics to re-time");
    std::vector<std::string> nodes;
    std::vector<ReplicaTrace> list;
    for (auto& [node, t] : traces) nodes.push_back(node);
    nodes = replica_order(nodes);
    for (auto& n : nodes) list.push_back(traces[n]);
    auto cfg = parse_config(unwrap(store.config_toml(id)), "run " + std::to_string(id));
    // The rounds a run records are on one link: DDP inside a single replica syncs on the intra link,
    // everything else on the outer link. DiLoCo with several nodes per replica has both kinds.
    if (cfg && algorithm_of(*cfg) != Algorithm::kDdp && cfg->cluster.nodes_per_replica > 1)
        throw Error("run " + std::to_string(id) + " has replicas of several nodes under " + cfg->outer.algorithm +
                    "; re-timing covers runs whose rounds use one link class");
    const bool intra = cfg && round_link_class(*cfg) == LinkClass::kIntraReplica;
    const LinkSpec& link = intra ? net.intra : net.outer;
    Timeline t = retime(list, link);
    std::printf("run %lld re-timed for %s link %.4g Mb/s, %.4g ms (%s); recorded with %s\n", (long long)id,
                intra ? "intra-replica" : "outer", link.bandwidth_bps / 1e6, 1e3 * link.latency_s, a.network.c_str(),
                cfg ? cfg->network.profile.c_str() : "an unknown profile");
    std::printf("  %-12s %16s %16s %12s\n", "node", "recorded sim (s)", "retimed sim (s)", "utilisation");
    for (size_t i = 0; i < nodes.size(); ++i)
        std::printf("  %-12s %16.6f %16.6f %11.1f%%\n", nodes[i].c_str(), recorded[nodes[i]], t.sim_s[i],
                    100 * t.compute_s[i] / (t.compute_s[i] + t.exposed_s[i]));
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
    rt->callback(pick("retime"));
    return {sub, [&g, args] { return dispatch(g, *args); }};
}

}  // namespace tw::cli
