// `thinwire runs list`: the run history from the SQLite store.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "app/commands.h"
#include "core/status.h"
#include "storage/run_store.h"

namespace tw::cli {
namespace {

std::string fmt_opt(const std::optional<double>& v) {
    if (!v) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", *v);
    return buf;
}

int run_list(const Globals& g) {
    RunStore store = unwrap(RunStore::open(g.db_path));
    auto runs = unwrap(store.list_runs());
    if (runs.empty()) {
        std::printf("no runs in %s\n", g.db_path.c_str());
        return 0;
    }
    std::printf("%5s  %-20s  %-11s  %-20s  %7s  %10s  %10s\n", "id", "name", "status", "created (UTC)", "steps",
                "train loss", "val loss");
    for (auto& r : runs)
        std::printf("%5lld  %-20s  %-11s  %-20s  %7lld  %10s  %10s\n", (long long)r.id, r.name.substr(0, 20).c_str(),
                    to_string(r.status), r.created_at.substr(0, 19).c_str(), (long long)r.last_step.value_or(0),
                    fmt_opt(r.last_train_loss).c_str(), fmt_opt(r.last_val_loss).c_str());
    return 0;
}

}  // namespace

Command add_runs(CLI::App& app, const Globals& g) {
    auto* sub = app.add_subcommand("runs", "Run history");
    sub->require_subcommand(1);
    sub->add_subcommand("list", "List runs with their status and last losses");
    return {sub, [&g] { return run_list(g); }};
}

}  // namespace tw::cli
