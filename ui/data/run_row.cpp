// ui/data/run_row.h.
#include "ui/data/run_row.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

namespace tw::ui {
namespace {

double number(const std::map<std::string, std::string>& c, const std::string& key) {
    auto it = c.find(key);
    return it == c.end() ? 0.0 : std::atof(it->second.c_str());
}

std::string text(const std::map<std::string, std::string>& c, const std::string& key) {
    auto it = c.find(key);
    return it == c.end() ? "" : it->second;
}

std::string percent(double f) {
    char buf[32];
    std::snprintf(buf, sizeof buf, f >= 0.1 ? "%.0f%%" : "%.2f%%", 100 * f);
    return buf;
}

}  // namespace

RunRow make_run_row(int64_t id, std::map<std::string, std::string> config, const RunStore::Totals& totals) {
    for (auto& [key, value] : config)
        if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
            value = value.substr(1, value.size() - 2);
    RunRow r;
    r.id = id;
    r.algorithm = text(config, "outer.algorithm");
    r.replicas = static_cast<int64_t>(number(config, "outer.replicas"));
    // What the run compresses by: its sparsity (kept entries per chunk of chunk² values), its
    // pipelines' subspace rank, or its wire codec.
    if (r.algorithm == "sparseloco" && number(config, "outer.topk_chunk") > 0) {
        const double s = number(config, "outer.topk_chunk");
        r.compression = percent(number(config, "outer.topk_k") / (s * s));
    } else if (r.algorithm == "demo" && number(config, "outer.demo_chunk") > 0) {
        const double s = number(config, "outer.demo_chunk");
        r.compression = percent(number(config, "outer.demo_topk") / (s * s));
    } else if (r.algorithm != "ddp" && !text(config, "outer.dtype").empty() && text(config, "outer.dtype") != "fp32") {
        r.compression = text(config, "outer.dtype");  // a dense method's wire codec
    }
    if (number(config, "cluster.stages") > 1 && number(config, "pipeline.rank") > 0)
        r.compression += (r.compression.empty() ? "" : ", ") + std::string("rank ") + text(config, "pipeline.rank");
    r.bytes_per_replica = r.replicas > 0 ? totals.bytes_sent / double(r.replicas) : totals.bytes_sent;
    r.sim_s = totals.sim_s;
    r.config = std::move(config);
    return r;
}

namespace {

// A column's value: a number where it has one (NaN otherwise), else text.
struct Key {
    double num = NAN;
    std::string text;
    bool known = false;
};

Key key_of(const TableRun& t, RunColumn c, const std::string& setting) {
    const RunSummary& s = *t.summary;
    const RunRow* r = t.row;
    Key k;
    auto num = [&](double v) { k.num = v, k.known = std::isfinite(v); };
    auto txt = [&](const std::string& v) { k.text = v, k.known = !v.empty(); };
    switch (c) {
        case RunColumn::kId: num(double(s.id)); break;
        case RunColumn::kName: txt(s.name); break;
        case RunColumn::kAlgorithm: if (r) txt(r->algorithm); break;
        case RunColumn::kReplicas: if (r) num(double(r->replicas)); break;
        case RunColumn::kCompression: if (r) txt(r->compression); break;
        case RunColumn::kBytes: if (r) num(r->bytes_per_replica); break;
        case RunColumn::kSimTime: if (r) num(r->sim_s); break;
        case RunColumn::kValLoss: num(s.last_val_loss ? *s.last_val_loss : NAN); break;
        case RunColumn::kStatus: txt(to_string(s.status)); break;
        case RunColumn::kTags: txt(s.tags); break;
        case RunColumn::kSetting:
            if (r) {
                auto it = r->config.find(setting);
                if (it != r->config.end()) {
                    char* end = nullptr;
                    const double v = std::strtod(it->second.c_str(), &end);
                    if (end && *end == '\0' && !it->second.empty()) num(v);
                    else txt(it->second);
                }
            }
            break;
    }
    return k;
}

}  // namespace

void sort_runs(std::vector<TableRun>& runs, RunColumn column, bool ascending, const std::string& key) {
    std::stable_sort(runs.begin(), runs.end(), [&](const TableRun& a, const TableRun& b) {
        const Key ka = key_of(a, column, key), kb = key_of(b, column, key);
        if (ka.known != kb.known) return ka.known;  // unknown last
        if (!ka.known) return a.summary->id < b.summary->id;
        const bool numeric = std::isfinite(ka.num) && std::isfinite(kb.num);
        if (numeric ? ka.num == kb.num : ka.text == kb.text) return a.summary->id < b.summary->id;
        const bool less = numeric ? ka.num < kb.num : ka.text < kb.text;
        return ascending ? less : !less;
    });
}

SettingsDiff differing_settings(const std::vector<const RunRow*>& rows) {
    std::vector<std::map<std::string, std::string>> configs;
    for (const RunRow* r : rows) configs.push_back(r->config);
    return settings_that_differ(configs);
}

}  // namespace tw::ui
