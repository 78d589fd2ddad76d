// TOML parsing for RunConfig through one table of field descriptors (core/config_fields.def), so
// parsing, overrides, range checks and serialisation cannot drift apart.
#include "core/config_io.h"
#include "core/config_toml.h"

#include "core/algorithm.h"
#include "core/assert.h"
#include "core/compute_model.h"
#include "core/number_text.h"
#include "core/time_budget.h"
#include "core/token_budget.h"
#include "core/hub_endpoint.h"
#include "core/hash.h"
#include "core/skippipe.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <variant>

#include <toml++/toml.h>

#include "core/fault_schedule.h"

namespace tw {

using namespace config_toml;

namespace {

std::vector<std::string> algorithm_choices() {
    std::vector<std::string> v;
    for (auto& t : algorithm_table()) v.push_back(t.name);
    return v;
}

std::vector<std::string> hardware_choices() {
    std::vector<std::string> v;
    for (auto& p : hardware_profiles()) v.push_back(p.name);
    return v;
}

using Ptr = FieldPtr;

struct Field {
    std::string key;  // dotted, e.g. "model.d_model"
    Ptr ptr;
    double min = -INFINITY;  // inclusive numeric range
    double max = INFINITY;
    std::vector<std::string> choices;  // allowed strings (empty = any)
    std::string label;                 // the layout editor's short label ("" = drawn by name only)
};

std::vector<Field> fields_of(RunConfig& c) {
    const double inf = INFINITY;
    return {
#define TW_FIELD(path, ...) Field{#path, &c.path, __VA_ARGS__},
#define TW_FIELD_AT(key, path, ...) Field{key, &c.path, __VA_ARGS__},
#include "core/config_fields.def"
#undef TW_FIELD_AT
#undef TW_FIELD
    };
}

FieldType type_of(const Ptr& p) { return static_cast<FieldType>(p.index()); }

const char* type_name(const Ptr& p) {
    switch (p.index()) {
        case 0: return "an integer";
        case 1: return "a number";
        case 2: return "a boolean";
        case 3: return "a string";
        case 4: return "an array of strings";
        case 5: return "an array of integers";
        case 6: return "an array of numbers";
        default: return "an array of integer arrays, e.g. [[0, 2], [0, 1]]";
    }
}

// The readers below return "" or the reason the node was refused, and write `out` only when they
// accept it (a refused array leaves the field as it was).
std::string expected(const Field& f) { return std::string("expected ") + type_name(f.ptr); }

// An integer within the field's range.
std::string read_int(const Field& f, const toml::node& n, int64_t& out) {
    auto v = n.value_exact<int64_t>();
    if (!v) return expected(f);
    if (*v < f.min || *v > f.max)
        return "value " + std::to_string(*v) + " is out of range [" + number_text(f.min) + ", " + number_text(f.max) + "]";
    out = *v;
    return "";
}

// A finite number within the field's range; integers are accepted for floats.
std::string read_number(const Field& f, const toml::node& n, double& out) {
    auto v = n.value<double>();
    if (!v || n.is_boolean()) return expected(f);
    if (!std::isfinite(*v) || *v < f.min || *v > f.max)
        return "value " + number_text(*v) + " is out of range [" + number_text(f.min) + ", " + number_text(f.max) + "]";
    out = *v;
    return "";
}

// A string among the field's choices (any string when it has none); `list_choices` names them in
// the refusal (a scalar's; an array's elements are refused by value alone).
std::string read_string(const Field& f, const toml::node& n, std::string& out, bool list_choices) {
    auto v = n.value_exact<std::string>();
    if (!v) return expected(f);
    if (!f.choices.empty() && std::find(f.choices.begin(), f.choices.end(), *v) == f.choices.end()) {
        if (!list_choices) return "unknown value \"" + *v + "\"";
        std::string list;
        for (auto& c : f.choices) list += (list.empty() ? "" : ", ") + c;
        return "unknown value \"" + *v + "\" (expected one of: " + list + ")";
    }
    out = *v;
    return "";
}

// An array whose every element `read_one` accepts.
template <class T, class ReadOne>
std::string read_array(const Field& f, const toml::node& n, std::vector<T>& out, ReadOne read_one) {
    auto* arr = n.as_array();
    if (!arr) return expected(f);
    std::vector<T> got;
    for (auto& el : *arr) {
        T v{};
        if (std::string why = read_one(el, v); !why.empty()) return why;
        got.push_back(std::move(v));
    }
    out = std::move(got);
    return "";
}

// Assigns a TOML node to a field; returns "" or the reason it was refused.
std::string assign(const Field& f, const toml::node& node) {
    const auto one_int = [&f](const toml::node& n, int64_t& v) { return read_int(f, n, v); };
    return std::visit(
        [&](auto* p) -> std::string {
            using T = std::remove_pointer_t<decltype(p)>;
            if constexpr (std::is_same_v<T, int64_t>) {
                return read_int(f, node, *p);
            } else if constexpr (std::is_same_v<T, double>) {
                return read_number(f, node, *p);
            } else if constexpr (std::is_same_v<T, bool>) {
                auto v = node.value_exact<bool>();
                if (!v) return expected(f);
                *p = *v;
                return "";
            } else if constexpr (std::is_same_v<T, std::string>) {
                return read_string(f, node, *p, true);
            } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
                return read_array(f, node, *p, one_int);
            } else if constexpr (std::is_same_v<T, std::vector<double>>) {
                return read_array(f, node, *p, [&f](const toml::node& n, double& v) { return read_number(f, n, v); });
            } else if constexpr (std::is_same_v<T, std::vector<std::vector<int64_t>>>) {
                return read_array(f, node, *p, [&](const toml::node& n, std::vector<int64_t>& row) {
                    return read_array(f, n, row, one_int);
                });
            } else {
                return read_array(f, node, *p,
                                  [&f](const toml::node& n, std::string& v) { return read_string(f, n, v, false); });
            }
        },
        f.ptr);
}

}  // namespace


Result<RunConfig> parse_config(const std::string& text, const std::string& source,
                               const std::vector<std::string>& overrides) {
    std::vector<std::string> problems;
    std::vector<std::pair<std::string, const toml::node*>> items;  // (key, node) in application order
    std::vector<std::string> origins;                              // where each item came from

    toml::table file_table;
    if (!text.empty()) {
        std::string error;
        if (!parse_toml(text, source, file_table, error)) return Result<RunConfig>::error(error);
        size_t before = items.size();
        flatten(file_table, "", items);
        origins.insert(origins.end(), items.size() - before, source);
    }
    std::vector<toml::table> override_tables;
    override_tables.reserve(overrides.size());
    for (auto& o : overrides) {
        auto eq = o.find('=');
        if (eq == std::string::npos || eq == 0) {
            problems.push_back("--set " + o + ": expected key=value");
            continue;
        }
        std::string key = o.substr(0, eq), val = o.substr(eq + 1);
        toml::table t;
        std::string ignored;
        if (!parse_toml("x = " + val, "--set", t, ignored) &&
            !parse_toml("x = \"" + val + "\"", "--set", t, ignored)) {  // bare words are strings
            problems.push_back("--set " + key + ": cannot parse value \"" + val + "\"");
            continue;
        }
        override_tables.push_back(std::move(t));
        items.emplace_back(key, override_tables.back().get("x"));
        origins.push_back("--set");
    }

    RunConfig cfg;
    auto fields = fields_of(cfg);
    auto find = [&](const std::string& k) -> const Field* {
        for (auto& f : fields)
            if (f.key == k) return &f;
        return nullptr;
    };
    // The preset goes first (the last one given wins) so explicit shape keys override it.
    for (size_t i = 0; i < items.size(); ++i) {
        if (items[i].first != "model.preset") continue;
        std::string why = assign(*find("model.preset"), *items[i].second);
        if (!why.empty()) problems.push_back(origins[i] + ": model.preset: " + why);
    }
    if (Status s = apply_model_preset(cfg.model.preset, cfg.model); !s) problems.push_back(s.message());
    // The paper presets are GPT-2-sized models: GPT-2's tokenizer unless data.tokenizer says otherwise.
    if (cfg.model.preset == "paper178m" || cfg.model.preset == "paper1b") cfg.data.tokenizer = "gpt2";

    for (size_t i = 0; i < items.size(); ++i) {
        auto& [key, node] = items[i];
        if (key == "model.preset") continue;
        const Field* f = find(key);
        if (!f) {
            problems.push_back(origins[i] + ": " + key + ": unknown key");
            continue;
        }
        std::string why = assign(*f, *node);
        if (!why.empty()) problems.push_back(origins[i] + ": " + key + ": " + why);
    }
    if (problems.empty()) {
        resolve_skippipe_defaults(cfg.skippipe);
        resolve_algorithm(cfg);  // after the overrides: the id, and the topology's default for it
        // A fixed tokenizer fixes the vocabulary (before the token budget, which counts the embedding).
        if (cfg.data.tokenizer == "gpt2" && cfg.model.vocab_size == 0) cfg.model.vocab_size = kGpt2VocabSize;
        if (Status s = apply_token_budget(cfg); !s) return Result<RunConfig>::error(source + ": " + s.message());
        if (Status s = validate_config(cfg); !s) return Result<RunConfig>::error(source + ": " + s.message());
        return cfg;
    }
    std::string msg = std::to_string(problems.size()) + (problems.size() == 1 ? " problem" : " problems") +
                      " in the configuration:";
    for (auto& p : problems) msg += "\n  " + p;
    return Result<RunConfig>::error(msg);
}

Result<RunConfig> load_config(const std::string& path, const std::vector<std::string>& overrides) {
    if (path.empty()) return parse_config("", "<default>", overrides);
    std::ifstream in(path);
    if (!in) return Result<RunConfig>::error("cannot read config file " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    if (text.empty()) text = "# empty\n";  // an empty file is the defaults, not "no file"
    return parse_config(text, path, overrides);
}



const std::vector<FieldInfo>& config_fields() {
    static const std::vector<FieldInfo> infos = [] {
        RunConfig c;
        std::vector<FieldInfo> out;
        for (auto& f : fields_of(c))
            out.push_back({f.key, type_of(f.ptr), f.min, f.max, f.choices, f.label.empty() ? f.key : f.label,
                           algorithms_using(f.key)});
        return out;
    }();
    return infos;
}

const FieldInfo* config_field(std::string_view key) {
    for (auto& f : config_fields())
        if (f.key == key) return &f;
    return nullptr;
}

FieldPtr config_field_ptr(RunConfig& cfg, std::string_view key) {
    for (auto& f : fields_of(cfg))
        if (f.key == key) return f.ptr;
    TW_ASSERT(false && "config_field_ptr: not a key of the field table");
    return FieldPtr{};
}

namespace {

// A TOML value as text: floats in the shortest form that parses back to the same double
// (std::to_chars without a precision; "0.6", never "0.59999999999999998"), with ".0" added to an
// integral one so it stays a float; arrays as "[ a, b ]"; everything else as toml++ writes it.
void write_value(std::ostream& os, const toml::node& node) {
    if (auto* d = node.as_floating_point()) {
        const double v = d->get();
        if (!std::isfinite(v)) {
            os << *d;
            return;
        }
        char buf[64];
        const auto res = std::to_chars(buf, buf + sizeof buf, v);
        const std::string_view text(buf, static_cast<size_t>(res.ptr - buf));
        os << text;
        if (text.find_first_of(".eE") == std::string_view::npos) os << ".0";
    } else if (auto* a = node.as_array()) {
        if (a->empty()) {
            os << "[]";
            return;
        }
        os << "[ ";
        for (size_t i = 0; i < a->size(); ++i) {
            if (i) os << ", ";
            write_value(os, *a->get(i));
        }
        os << " ]";
    } else {
        node.visit([&](auto& v) { os << v; });
    }
}

// One section's `key = value` lines, keys in toml++'s order (sorted), as toml++ lays them out.
void write_section(std::ostream& os, const toml::table& t) {
    bool first = true;
    for (auto& [key, node] : t) {
        if (!first) os << "\n";
        first = false;
        os << key.str() << " = ";
        write_value(os, node);
    }
}

}  // namespace

namespace {
template <class T>
bool is_empty_text(T* p) {
    if constexpr (std::is_same_v<T, std::string>) return p->empty();
    else return false;
}
}  // namespace

std::string to_toml(const RunConfig& cfg_in) {
    RunConfig cfg = cfg_in;
    // A config built in code may leave outer.topology empty: written as the value it resolves to, so
    // the text parses back to the same run (and hashes like the parsed config).
    resolve_topology(cfg);
    std::map<std::string, toml::table> sections;
    for (auto& f : fields_of(cfg)) {
        // Written (and so hashed) only when set, like [faults] below.
        if (f.key == "cluster.spares" && cfg.cluster.spares == 0) continue;
        if (f.key == "cluster.restart_lost" && cfg.cluster.restart_lost == 0) continue;
        // Launch limits decide whether a run starts, not what it computes: written only when set.
        if (f.key == "cluster.max_local_processes" && cfg.cluster.max_local_processes == ClusterConfig{}.max_local_processes)
            continue;
        if (f.key == "cluster.memory_check" && cfg.cluster.memory_check == ClusterConfig{}.memory_check) continue;
        // Where joined nodes are found decides who takes part, not what is computed: written only when set.
        if (f.key.rfind("cluster.relay", 0) == 0 && std::visit([](auto* p) { return is_empty_text(p); }, f.ptr)) continue;
        if (f.key == "cluster.join_timeout_s" && cfg.cluster.join_timeout_s == ClusterConfig{}.join_timeout_s) continue;
        if (f.key == "train.tokens_per_param" && cfg.train.tokens_per_param <= 0) continue;
        if (f.key == "run.seeds" && cfg.run.seeds.empty()) continue;
        auto dot = f.key.find('.');
        std::string sec = f.key.substr(0, dot), name = f.key.substr(dot + 1);
        std::visit(
            [&](auto* p) {
                using T = std::remove_pointer_t<decltype(p)>;
                if constexpr (std::is_same_v<T, std::vector<std::string>> || std::is_same_v<T, std::vector<int64_t>> ||
                              std::is_same_v<T, std::vector<double>>) {
                    toml::array a;
                    for (auto& s : *p) a.push_back(s);
                    sections[sec].insert_or_assign(name, a);
                } else if constexpr (std::is_same_v<T, std::vector<std::vector<int64_t>>>) {
                    toml::array a;
                    for (auto& row : *p) {
                        toml::array r;
                        for (auto v : row) r.push_back(v);
                        a.push_back(r);
                    }
                    sections[sec].insert_or_assign(name, a);
                } else {
                    sections[sec].insert_or_assign(name, *p);
                }
            },
            f.ptr);
    }
    std::ostringstream os;
    for (const char* sec : {"run", "model", "data", "train", "outer", "network", "compute", "cluster", "pipeline",
                            "skippipe"}) {
        os << "[" << sec << "]\n";
        write_section(os, sections[sec]);
        os << "\n\n";
    }
    // Written (and so hashed) only when set: every run without it keeps its resolved text and hash.
    for (const char* sec : {"hdee", "faults"}) {
        if (std::string_view(sec) == "hdee" ? !cfg.hdee.enabled() : !cfg.faults.enabled()) continue;
        os << "[" << sec << "]\n";
        write_section(os, sections[sec]);
        os << "\n\n";
    }
    return os.str();
}

std::map<std::string, std::string> config_key_values(const std::string& resolved_toml) {
    std::map<std::string, std::string> out;
    std::istringstream in(resolved_toml);
    std::string line, section;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        if (line[0] == '[') {
            section = line.substr(1, line.find(']') - 1);
            continue;
        }
        auto eq = line.find(" = ");
        if (eq != std::string::npos) out[section + "." + line.substr(0, eq)] = line.substr(eq + 3);
    }
    return out;
}

std::string config_hash(const RunConfig& cfg) {
    const uint64_t h = seeded_hash64(to_toml(cfg));
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

}  // namespace tw
