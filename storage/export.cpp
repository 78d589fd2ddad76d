// CSV and JSON export of one run.
#include "storage/export.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace tw {
namespace {

std::string exact(double v) {
    if (std::isnan(v)) return "nan";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

// CSV quoting for the one free-text column (node names).
std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace

Status write_run_csv(RunStore& store, int64_t run_id, std::ostream& out) {
    auto names = store.metric_names(run_id);
    if (!names) return names.status();
    out << "run_id,node,step,outer_step,wall_s,sim_s,name,value\n";
    for (auto& name : *names) {
        auto rows = store.metrics(run_id, name);
        if (!rows) return rows.status();
        for (auto& r : *rows)
            out << run_id << ',' << csv_field(r.node) << ',' << r.step << ',' << r.outer_step << ',' << exact(r.wall_s)
                << ',' << exact(r.sim_s) << ',' << csv_field(r.name) << ',' << exact(r.value) << '\n';
    }
    return out ? Status::ok() : Status::error("write failed while exporting run " + std::to_string(run_id));
}

Status write_run_json(RunStore& store, int64_t run_id, std::ostream& out) {
    auto run = store.get_run(run_id);
    if (!run) return run.status();
    auto config = store.config_toml(run_id);
    if (!config) return config.status();
    auto names = store.metric_names(run_id);
    if (!names) return names.status();
    auto events = store.events(run_id);
    if (!events) return events.status();

    nlohmann::json j;
    j["run"] = {{"id", run->id},           {"name", run->name},
                {"status", to_string(run->status)}, {"created_at", run->created_at},
                {"finished_at", run->finished_at ? nlohmann::json(*run->finished_at) : nlohmann::json(nullptr)},
                {"reason", run->reason},   {"kind", run->kind},
                {"seed", run->seed},       {"config_hash", run->config_hash},
                {"notes", run->notes},     {"tags", run->tags},
                {"group", run->group},     {"cluster", run->cluster},
                {"config_toml", *config}};
    j["metrics"] = nlohmann::json::object();
    for (auto& name : *names) {
        auto rows = store.metrics(run_id, name);
        if (!rows) return rows.status();
        auto& arr = j["metrics"][name] = nlohmann::json::array();
        for (auto& r : *rows)
            arr.push_back({{"node", r.node}, {"step", r.step}, {"outer_step", r.outer_step},
                           {"wall_s", number_or_null(r.wall_s)}, {"sim_s", number_or_null(r.sim_s)},
                           {"value", number_or_null(r.value)}});
    }
    j["events"] = nlohmann::json::array();
    for (auto& e : *events)
        j["events"].push_back({{"wall_s", e.wall_s}, {"node", e.node}, {"level", static_cast<int>(e.level)},
                               {"kind", e.kind}, {"text", e.text}});
    out << j.dump(1) << '\n';
    return out ? Status::ok() : Status::error("write failed while exporting run " + std::to_string(run_id));
}

}  // namespace tw
