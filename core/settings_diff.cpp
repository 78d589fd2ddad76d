// The settings put side by side for several runs; see settings_diff.h.
#include "core/settings_diff.h"

#include <algorithm>
#include <set>

#include "core/config_io.h"

namespace tw {
namespace {

std::string unquoted(const std::string& v) {
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) return v.substr(1, v.size() - 2);
    return v;
}

std::optional<Algorithm> algorithm_in(const std::map<std::string, std::string>& config) {
    auto it = config.find("outer.algorithm");
    return it == config.end() ? std::nullopt : parse_algorithm(unquoted(it->second));
}

// Whether the run's algorithm reads `key`: general keys always; an algorithm's own knobs only for it.
bool applies(const std::optional<Algorithm>& algo, const std::string& key) {
    const FieldInfo* f = config_field(key);
    if (!f || f->algorithms.empty() || !algo) return true;  // a general key, or an algorithm this build does not know
    return std::find(f->algorithms.begin(), f->algorithms.end(), *algo) != f->algorithms.end();
}

}  // namespace

const std::vector<std::string>& defining_keys(Algorithm a) { return traits_of(a).defining_keys; }

std::map<std::string, std::string> stored_key_values(const std::string& resolved_toml) {
    auto cfg = parse_config(resolved_toml, "stored config");
    return config_key_values(cfg ? to_toml(*cfg) : resolved_toml);
}

SettingsDiff settings_that_differ(const std::vector<std::map<std::string, std::string>>& configs) {
    std::vector<std::optional<Algorithm>> algos;
    for (auto& c : configs) algos.push_back(algorithm_in(c));
    std::vector<std::string> rows{"outer.algorithm"};
    for (auto& a : algos)
        if (a)
            for (const std::string& k : defining_keys(*a))
                if (std::find(rows.begin(), rows.end(), k) == rows.end()) rows.push_back(k);
    const size_t defining = rows.size();
    std::set<std::string> keys;
    for (auto& c : configs)
        for (auto& [k, v] : c) keys.insert(k);
    for (const std::string& k : keys) {
        if (k == "run.name" || std::find(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(defining), k) !=
                                   rows.begin() + static_cast<std::ptrdiff_t>(defining))
            continue;
        std::set<std::string> distinct;
        bool missing = false, read = false;
        for (size_t i = 0; i < configs.size(); ++i) {
            if (!applies(algos[i], k)) continue;
            read = true;
            auto it = configs[i].find(k);
            if (it == configs[i].end()) missing = true;
            else distinct.insert(it->second);
        }
        if (read && (distinct.size() > 1 || (missing && !distinct.empty()))) rows.push_back(k);
    }
    SettingsDiff out;
    for (const std::string& k : rows) {
        std::vector<std::string> cells;
        bool any = false;
        for (size_t i = 0; i < configs.size(); ++i) {
            if (!applies(algos[i], k)) {
                cells.push_back("n/a");
                continue;
            }
            auto it = configs[i].find(k);
            cells.push_back(it == configs[i].end() ? "-" : unquoted(it->second));
            any = any || it != configs[i].end();
        }
        if (!any) continue;  // e.g. outer.algorithm of configs without it
        out.keys.push_back(k);
        out.cells.push_back(std::move(cells));
    }
    return out;
}

}  // namespace tw
