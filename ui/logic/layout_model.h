// The layout editor's model: a run layout (the same TOML `thinwire run` reads) as a RunConfig,
// with validation messages attached to the field they concern, and load/save as TOML. Pure logic,
// no ImGui: the editor panel draws widgets for the fields and shows `error(key)` next to each.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/config_io.h"
#include "core/status.h"

namespace tw::ui {

class LayoutModel {
public:
    LayoutModel();  // the built-in defaults

    RunConfig& config() { return cfg_; }
    const RunConfig& config() const { return cfg_; }

    // Re-checks everything exactly as `thinwire run` would: per-key range/choice checks (through the
    // TOML round trip), cross-field checks, and the cluster: nodes needed against `nodes_available`
    // (−1 = unknown, skip that check). Returns true when the layout is valid.
    bool validate(int nodes_available = -1);
    // The message for dotted key `key` ("outer.inner_steps"), or "" if that field is fine.
    const std::string& error(const std::string& key) const;
    // Messages that name no single key (e.g. a TOML syntax error in a loaded file).
    const std::vector<std::string>& general_errors() const { return general_; }
    const std::map<std::string, std::string>& errors() const { return by_key_; }

    // The layout as TOML (resolved: every key), as `thinwire run` reads it.
    std::string to_toml() const;
    // Replaces the model with a file's layout; on failure the model is unchanged and the error
    // names the file and key. `load_toml_text` does the same for text (source names it).
    Status load_file(const std::string& path);
    Status load_toml_text(const std::string& text, const std::string& source);
    Status save_file(const std::string& path) const;  // writes atomically (temp file + rename)

private:
    RunConfig cfg_;
    std::map<std::string, std::string> by_key_;
    std::vector<std::string> general_;
};

// The knobs of the algorithm `cfg` names, as the field table lists them (core/config_io.h
// FieldInfo::algorithms, which comes from core/algorithm.h's rows), in the table's order: what the
// editor draws under "algorithm". Empty for an unknown name or an algorithm without knobs (none, ddp).
std::vector<const FieldInfo*> algorithm_fields(const RunConfig& cfg);

// Splits a config error message ("N problems in the configuration:\n  file: key: reason...") into
// key → reason; lines that name no known key go to `general`. Keys are recognised as the first
// "section.name" token that is a config key.
void attach_errors(const std::string& message, std::map<std::string, std::string>& by_key,
                   std::vector<std::string>& general);

}  // namespace tw::ui
