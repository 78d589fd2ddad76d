// One row of the History table ("a run table"): what a researcher compares runs by —
// algorithm, replicas, density or rank, bytes per replica, simulated time, final validation loss —
// plus every setting of the run's config for extra columns, the differing-settings panel and the
// parallel-coordinates view. Torch-free, no ImGui.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/settings_diff.h"

#include "storage/run_store.h"

namespace tw::ui {

struct RunRow {
    int64_t id = 0;
    std::string algorithm;           // outer.algorithm ("none" for one node)
    int64_t replicas = 0;            // outer.replicas
    std::string compression;         // "1.56%" (SparseLoCo/DeMo density), "rank 16" (pipelines), "fp4", or ""
    double bytes_per_replica = 0;    // Σ nodes' last bytes sent / replicas
    double sim_s = 0;                // largest simulated clock (NaN: none)
    std::map<std::string, std::string> config;  // dotted key → value as stored (quotes stripped)
};

// Builds the row from the run's resolved config (config_key_values of its stored TOML) and its
// totals (RunStore::totals).
RunRow make_run_row(int64_t id, std::map<std::string, std::string> config, const RunStore::Totals& totals);

// The table's columns, in display order after the plot checkbox; kSetting is an extra column
// showing one config key.
enum class RunColumn { kId, kName, kAlgorithm, kReplicas, kCompression, kBytes, kSimTime, kValLoss, kStatus, kTags, kSetting };

// One displayed row: the run's summary and its table row (null while not yet loaded).
struct TableRun {
    const RunSummary* summary = nullptr;
    const RunRow* row = nullptr;
};

// Sorts by `column` (for kSetting: config key `key`, numerically when both values are numbers),
// ascending or not. Unknown values (no row, no final loss, NaN) sort last either way; ties keep
// id order. Stable.
void sort_runs(std::vector<TableRun>& runs, RunColumn column, bool ascending, const std::string& key = "");

// The settings History shows for the ticked `rows`: core/settings_diff.h's rule, the one `runs
// compare` and `thinwire report` follow (each method's defining knobs always, then what differs).
SettingsDiff differing_settings(const std::vector<const RunRow*>& rows);

}  // namespace tw::ui
