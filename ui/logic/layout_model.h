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
    // Replaces the model with a file's layout, read as `thinwire run` reads it: a file with
    // [variants], a [sweep] grid or [report] loads, each of its runs becomes one entry of
    // file_runs() and the editor holds the first. On failure the model is unchanged and the error
    // names the file and key. `load_toml_text` reads one plain config (source names it).
    Status load_file(const std::string& path);
    Status load_toml_text(const std::string& text, const std::string& source);

    // The runs of the file last loaded, (variant or sweep point name, config) in the order
    // `thinwire run` runs them; one entry named "" for a plain file; empty before any load.
    const std::vector<std::pair<std::string, RunConfig>>& file_runs() const { return file_runs_; }
    const std::string& file_path() const { return file_path_; }
    // Puts run `i` of file_runs() in the editor (what it shows and Start starts); edits of the
    // previous one are dropped. Out of range: ignored.
    void choose_run(size_t i);
    size_t chosen_run() const { return chosen_; }

    // What saving to `path` would replace: nothing, a file this editor wrote (its first line is
    // kEditorMark), or any other file (a hand-written layout: its comments, [variants] and
    // [sweep] would be lost), which the editor asks about before writing over.
    enum class SaveTarget { kNew, kEditorFile, kOtherFile };
    static SaveTarget save_target(const std::string& path);
    static constexpr const char* kEditorMark = "# written by the thinwire workbench's layout editor";
    // Writes the editor's config (resolved, every key) after kEditorMark, atomically (temp file +
    // rename). The caller decides about an existing file (save_target).
    Status save_file(const std::string& path) const;

private:
    RunConfig cfg_;
    std::vector<std::pair<std::string, RunConfig>> file_runs_;
    std::string file_path_;
    size_t chosen_ = 0;
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
