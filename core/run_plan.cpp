// A layout file as the runs it asks for (config_io.h load_run_plan): [variants] and [sweep]
// expanded, each run's config parsed and checked, --variant selections kept.
#include "core/config_io.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "core/config_toml.h"

namespace tw {

using namespace config_toml;

namespace {

// Keeps the [variants] entries `wanted` names, in the file's order; a name the file does not have
// (or a file without variants) is an error that lists what the file offers.
Status keep_selected(const std::string& path, const std::vector<std::string>& wanted,
                     std::vector<std::pair<std::string, std::vector<std::string>>>& variants) {
    std::vector<std::string> unknown;
    for (const std::string& w : wanted)
        if (std::none_of(variants.begin(), variants.end(), [&](auto& v) { return v.first == w; })) unknown.push_back(w);
    if (!unknown.empty()) {
        std::string names, offered;
        for (auto& u : unknown) names += (names.empty() ? "" : ", ") + u;
        for (auto& [name, sets] : variants) offered += (offered.empty() ? "" : ", ") + name;
        const std::string file = path.empty() ? "<default>" : path;
        return Status::error("--variant " + names + ": " + file +
                             (variants.empty() ? " has no [variants] table" : " has the variants " + offered));
    }
    std::vector<std::pair<std::string, std::vector<std::string>>> kept;
    for (auto& v : variants)
        if (std::find(wanted.begin(), wanted.end(), v.first) != wanted.end()) kept.push_back(std::move(v));
    variants = std::move(kept);
    return Status::ok();
}

}  // namespace

Result<RunPlan> load_run_plan(const std::string& path, const std::vector<std::string>& overrides,
                              const PlanSelection& select) {
    using R = Result<RunPlan>;
    std::stringstream ss;
    if (!path.empty()) {
        std::ifstream in(path);
        if (!in) return R::error("cannot read layout file " + path);
        ss << in.rdbuf();
    }
    toml::table t;
    std::string error;
    if (!parse_toml(ss.str(), path, t, error)) return R::error(error);
    RunPlan plan;
    std::vector<std::pair<std::string, std::vector<std::string>>> variants;
    std::vector<std::string> problems;
    if (auto* v = t.get("variants")) {
        if (!v->is_table()) problems.push_back(path + ": variants: expected a table of NAME = [\"key=value\", ...]");
        else
            for (auto& [name, sets] : *v->as_table()) {
                std::vector<std::string> list;
                auto* arr = sets.as_array();
                if (arr)
                    for (auto& el : *arr)
                        if (auto str = el.value_exact<std::string>()) list.push_back(*str);
                if (!arr || list.size() != arr->size())
                    problems.push_back(path + ": variants." + std::string(name.str()) + ": expected an array of \"key=value\" strings");
                variants.emplace_back(std::string(name.str()), list);
            }
        t.erase("variants");
    }
    // [sweep]: key → values; the grid's points become "key=value" override lists.
    std::vector<std::pair<std::string, std::vector<std::string>>> axes;
    if (auto* sw = t.get("sweep")) {
        std::vector<std::pair<std::string, const toml::node*>> flat;
        if (!sw->is_table()) problems.push_back(path + ": sweep: expected a table of \"key\" = [values]");
        else flatten(*sw->as_table(), "", flat);
        for (auto& [key, node] : flat) {
            auto* arr = node->as_array();
            std::vector<std::string> values;
            if (arr)
                for (auto& el : *arr) {
                    std::ostringstream os;
                    if (el.is_string()) os << '"' << *el.value<std::string>() << '"';
                    else if (el.is_integer()) os << *el.value<int64_t>();
                    else if (el.is_floating_point()) os << *el.value<double>();
                    else if (el.is_boolean()) os << (*el.value<bool>() ? "true" : "false");
                    else break;
                    values.push_back(os.str());
                }
            if (!arr || arr->empty() || values.size() != arr->size())
                problems.push_back(path + ": sweep." + key + ": expected a non-empty array of numbers, strings or booleans");
            else
                axes.emplace_back(key, values);
        }
        t.erase("sweep");
    }
    if (auto* r = t.get("report")) {
        auto* nets = r->is_table() ? r->as_table()->get("networks") : nullptr;
        if (nets && nets->is_array())
            for (auto& el : *nets->as_array())
                if (auto str = el.value_exact<std::string>()) plan.report_networks.push_back(*str);
        if (!r->is_table() || r->as_table()->size() != (nets ? 1u : 0u) || (nets && !nets->is_array()))
            problems.push_back(path + ": report: expected only networks = [\"profile\", ...]");
        t.erase("report");
    }
    if (!problems.empty()) {
        std::string msg = problems[0];
        for (size_t i = 1; i < problems.size(); ++i) msg += "\n  " + problems[i];
        return R::error(msg);
    }
    std::ostringstream rest;
    rest << t << "\n";
    for (auto& [name, sets] : variants) plan.variants.push_back(name);
    if (!select.variants.empty()) {
        if (Status s = keep_selected(path, select.variants, variants); !s) return s;
    }
    if (variants.empty()) variants.emplace_back("", std::vector<std::string>{});
    if (!axes.empty()) {
        // The grid, last axis fastest; each point's name lists its values by the keys' last part.
        std::vector<std::pair<std::string, std::vector<std::string>>> points{{"", {}}};
        for (auto& [key, values] : axes) {
            std::vector<std::pair<std::string, std::vector<std::string>>> next;
            const std::string shortk = key.substr(key.rfind('.') + 1);
            for (auto& [name, sets] : points)
                for (auto& v : values) {
                    std::string label = v;
                    label.erase(std::remove(label.begin(), label.end(), '"'), label.end());
                    auto s2 = sets;
                    s2.push_back(key + "=" + v);
                    next.emplace_back(name + (name.empty() ? "" : ",") + shortk + "=" + label, s2);
                }
            points = std::move(next);
        }
        plan.sweep_points = points.size();
        std::vector<std::pair<std::string, std::vector<std::string>>> grid;
        for (auto& [vname, vsets] : variants)
            for (auto& [pname, psets] : points) {
                auto all = vsets;
                all.insert(all.end(), psets.begin(), psets.end());
                grid.emplace_back(vname.empty() ? pname : vname + "-" + pname, all);
            }
        variants = std::move(grid);
    }
    for (auto& [name, sets] : variants) {
        std::vector<std::string> all = sets;
        all.insert(all.end(), overrides.begin(), overrides.end());
        const std::string source = path.empty() ? "<default>" : path;
        const std::string where = plan.sweep_points > 0 ? " [sweep point " + name + "]" : " [variants." + name + "]";
        auto cfg = parse_config(rest.str(), name.empty() ? source : source + where, all);
        if (!cfg && select.keep_going) {
            plan.failed.emplace_back(name, cfg.message());
            continue;
        }
        if (!cfg) return cfg.status();
        if (!name.empty()) cfg->run.name += "-" + name;
        if (cfg->run.seeds.empty()) {
            plan.runs.emplace_back(name, std::move(*cfg));
            continue;
        }
        // run.seeds: the variant once per seed, each run with its own run.seed (and the same name,
        // so runs group by name across seeds) and no list, so a stored run resolves to one run.
        const std::vector<int64_t> seeds = cfg->run.seeds;
        for (size_t i = 0; i < seeds.size(); ++i)
            for (size_t j = 0; j < i; ++j)
                if (seeds[i] == seeds[j])
                    return R::error(source + where.substr(name.empty() ? where.size() : 0) + ": run.seeds lists " +
                                    std::to_string(seeds[i]) + " twice");
        for (int64_t seed : seeds) {
            RunConfig one = *cfg;
            one.run.seeds.clear();
            one.run.seed = seed;
            plan.runs.emplace_back(name + (name.empty() ? "" : " ") + "seed=" + std::to_string(seed), std::move(one));
        }
    }
    if (plan.runs.empty() && plan.failed.size() == 1) return R::error(plan.failed.front().second);
    if (plan.runs.empty() && !plan.failed.empty()) {
        std::string msg = "every run of " + (path.empty() ? std::string("<default>") : path) + " was refused:";
        for (auto& [name, why] : plan.failed) msg += "\n" + why;
        return R::error(msg);
    }
    return plan;
}

}  // namespace tw
