// TOML ⇄ RunConfig. Every problem in a file is reported at once, each naming file, key and reason.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/algorithm.h"
#include "core/config.h"
#include "core/status.h"

namespace tw {

// Fills `model` with a named preset's shape (tiny, small, base, paper178m). Error names the preset.
Status apply_model_preset(const std::string& preset, ModelConfig& model);

// Parses TOML text. `source` names the file in messages. `overrides` are "dotted.key=value" strings
// (from --set) applied after the file. An empty text is the built-in default.
Result<RunConfig> parse_config(const std::string& toml_text, const std::string& source,
                               const std::vector<std::string>& overrides = {});

// Reads and parses a file; an empty path means the built-in default.
Result<RunConfig> load_config(const std::string& path, const std::vector<std::string>& overrides = {});

// A layout file for `thinwire run`: the file's settings, optionally split into variants. A
// [variants] table maps a name to a list of "key=value" overrides; each variant becomes a run of
// its own (run.name gets "-NAME"), in name order. [report] networks = [...] names the network
// profiles the final table re-times every run for. A [sweep] table maps dotted keys to arrays of
// values, e.g. `"pipeline.rank" = [32, 16, 8]`; every point of their grid (keys in dotted-name order, the
// last varying fastest) becomes a run named after its values ("topk_k=64,rank=32"), and with
// [variants] the grid runs once per variant.
struct RunPlan {
    std::vector<std::pair<std::string, RunConfig>> runs;  // (variant / point name or "", config)
    std::vector<std::string> report_networks;
    size_t sweep_points = 0;  // points of the [sweep] grid (0 = no [sweep] table)
    std::vector<std::string> variants;  // the file's [variants] names, in name order (empty: none)
    // With PlanSelection::keep_going: the runs whose config was refused, (variant / point name or ""
    // for a file without variants, reason), in the order they would have run. Always empty otherwise (a refused run fails the whole plan).
    std::vector<std::pair<std::string, std::string>> failed;
};

// Which of a layout's runs to load and what a refused one does.
struct PlanSelection {
    // [variants] names to keep (each with its sweep points and seeds), in the file's order; empty =
    // every variant. A name the file does not have is an error that lists the file's variants.
    std::vector<std::string> variants;
    // false: the first refused run's config fails the plan. true: it goes to RunPlan::failed and the
    // others are still loaded (the plan fails only when every run is refused).
    bool keep_going = false;
};

Result<RunPlan> load_run_plan(const std::string& path, const std::vector<std::string>& overrides = {},
                              const PlanSelection& select = {});

// Checks cross-field constraints (d_model % n_head, ranges already checked per key). All problems at once.
Status validate_config(const RunConfig& cfg);

// The resolved config as TOML: every key, defaults filled in. parse_config(to_toml(c)) == c.
std::string to_toml(const RunConfig& cfg);

// The resolved TOML as dotted key → value text, one per `key = value` line of to_toml's output
// ("[section]" headers folded into the key; comment lines skipped): what `runs compare` and
// `report` put side by side.
std::map<std::string, std::string> config_key_values(const std::string& resolved_toml);

// ---- The field table's metadata (what the layout editor draws its fields from) ----

// A key's value type, in the order of FieldPtr's alternatives.
enum class FieldType : uint8_t {
    kInt = 0, kFloat = 1, kBool = 2, kString = 3, kStrings = 4, kInts = 5, kFloats = 6, kIntArrays = 7,
};

struct FieldInfo {
    std::string key;                  // dotted, e.g. "outer.topk_k"
    FieldType type;
    double min, max;                  // inclusive numeric range (±inf = unbounded)
    std::vector<std::string> choices; // allowed strings (empty = any)
    std::string label;                // a short label for editors (the key when the table gives none)
    // The algorithms whose settings include this key (core/algorithm.h's rows); empty = a general
    // key that applies whatever the algorithm.
    std::vector<Algorithm> algorithms;
};

// Every key of the field table, in its order (sections run, model, data, train, outer, network, compute,
// cluster, pipeline). Built once; thread-safe.
const std::vector<FieldInfo>& config_fields();
// One key's metadata; nullptr for a key the table does not have.
const FieldInfo* config_field(std::string_view key);

// Where key `key`'s value lives in `cfg` (the alternative matches FieldInfo::type). Asserts on a key
// the table does not have; the pointer is valid as long as `cfg` is.
using FieldPtr = std::variant<int64_t*, double*, bool*, std::string*, std::vector<std::string>*, std::vector<int64_t>*,
                              std::vector<double>*, std::vector<std::vector<int64_t>>*>;
FieldPtr config_field_ptr(RunConfig& cfg, std::string_view key);

// seeded_hash64 (core/hash.h) of the resolved TOML, as 16 hex digits.
std::string config_hash(const RunConfig& cfg);

}  // namespace tw
