// `thinwire runs compare`; see cmd_runs_compare.h.
#include "app/cmd_runs_compare.h"

#include "core/settings_diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/algorithm.h"
#include "core/config_io.h"
#include "core/seed_spread.h"
#include "storage/run_store.h"

namespace tw::cli {

std::string fmt_opt(const std::optional<double>& v) {
    if (!v) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", *v);
    return buf;
}

namespace {

// A config key's value, or "-" where the run does not have the key.
std::string value_of(const std::map<std::string, std::string>& config, const std::string& key) {
    auto it = config.find(key);
    return it == config.end() ? "-" : it->second;
}

std::string with_commas(double v) {
    if (!std::isfinite(v)) return "-";
    std::string d = std::to_string(static_cast<long long>(std::llround(v))), out;
    for (size_t i = 0; i < d.size(); ++i) {
        if (i > 0 && (d.size() - i) % 3 == 0) out += ',';
        out += d[i];
    }
    return out;
}

// Runs that differ only in run.seed as one point each (core/seed_spread.h): the last validation
// loss as mean ± sample standard deviation and range, bytes per replica and simulated time, and
// each point against the first (a difference counts when it exceeds both spreads together).
// Printed only when some point has two or more seeds.
void print_over_seeds(const std::vector<RunSummary>& runs, const std::vector<std::map<std::string, std::string>>& configs,
                      const std::vector<RunStore::Totals>& totals) {
    const auto groups = group_over_seeds(configs);
    if (std::none_of(groups.begin(), groups.end(), [](const std::vector<size_t>& g) { return g.size() >= 2; })) return;
    std::printf("\nover seeds (runs equal apart from run.seed; mean ± sample standard deviation [min, max]):\n");
    Spread first;
    for (size_t g = 0; g < groups.size(); ++g) {
        std::vector<double> val, per_replica, sim;
        std::string ids, seeds;
        for (size_t i : groups[g]) {
            if (runs[i].last_val_loss) val.push_back(*runs[i].last_val_loss);
            const double r = std::atof(value_of(configs[i], "outer.replicas").c_str());
            per_replica.push_back(r > 0 ? totals[i].bytes_sent / r : totals[i].bytes_sent);
            if (std::isfinite(totals[i].sim_s)) sim.push_back(totals[i].sim_s);
            ids += (ids.empty() ? "" : ",") + std::to_string(runs[i].id);
            seeds += (seeds.empty() ? "" : ",") + value_of(configs[i], "run.seed");
        }
        const Spread v = spread_of(val), b = spread_of(per_replica), t = spread_of(sim);
        if (g == 0) first = v;
        std::printf("  %s (runs %s; seeds %s; n = %zu)\n", runs[groups[g].front()].name.c_str(), ids.c_str(),
                    seeds.c_str(), groups[g].size());
        if (v.n > 0)
            std::printf("    last val loss   %s [%.4f, %.4f]\n", format_mean_sd(v).c_str(), v.min, v.max);
        std::printf("    bytes/replica   %s B\n", with_commas(b.mean).c_str());
        if (t.n > 0) std::printf("    simulated time  %s s\n", format_mean_sd(t, 2).c_str());
        if (g > 0 && v.n > 0 && first.n > 0)
            std::printf("    against %s: %s\n", runs[groups[0].front()].name.c_str(), against_text(v, first).c_str());
    }
}

}  // namespace

int run_compare(RunStore& store, const std::vector<int64_t>& ids) {
    if (ids.size() < 2) throw Error("runs compare needs at least two runs (ids, or --group NAME)");
    std::vector<RunSummary> runs;
    std::vector<std::map<std::string, std::string>> configs;
    for (auto id : ids) {
        runs.push_back(unwrap(store.get_run(id)));
        configs.push_back(stored_key_values(unwrap(store.config_toml(id))));
    }
    std::vector<RunStore::Totals> totals;
    for (auto& r : runs) totals.push_back(unwrap(store.totals(r.id)));
    // Columns as wide as the widest cell: names in full.
    int width = 16;
    for (auto& r : runs) width = std::max(width, static_cast<int>(std::to_string(r.id).size() + 1 + r.name.size()));
    auto row = [&](const char* label, auto cell) {
        std::printf("%-24s", label);
        for (size_t i = 0; i < runs.size(); ++i) std::printf(" %*s", width, cell(i).c_str());
        std::printf("\n");
    };
    row("run", [&](size_t i) { return std::to_string(runs[i].id) + " " + runs[i].name; });
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
    // Bytes as the summary table counts them: Σ nodes' last outer + intra + stage sent counters.
    row("bytes sent per replica", [&](size_t i) {
        const double r = std::atof(value_of(configs[i], "outer.replicas").c_str());
        return with_commas(r > 0 ? totals[i].bytes_sent / r : totals[i].bytes_sent) + " B";
    });
    row("simulated time", [&](size_t i) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.2f s", totals[i].sim_s);
        return std::isfinite(totals[i].sim_s) ? std::string(buf) : std::string("-");
    });
    // Each method's defining knobs, then what differs (core/settings_diff.h, as report and History).
    const SettingsDiff diff = settings_that_differ(configs);
    bool header = false;
    for (size_t k = 0; k < diff.keys.size(); ++k) {
        if (!header) std::printf("\nsettings (each method's defining ones, then those that differ; n/a: the run's algorithm does not read it):\n");
        header = true;
        row(diff.keys[k].c_str(), [&](size_t i) { return diff.cells[k][i]; });
    }
    if (!header) std::printf("\nsettings: identical apart from the name\n");
    print_over_seeds(runs, configs, totals);
    return 0;
}

}  // namespace tw::cli
