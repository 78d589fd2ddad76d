// `thinwire runs compare`; see cmd_runs_compare.h.
#include "app/cmd_runs_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/config_io.h"

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

}  // namespace

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

}  // namespace tw::cli
