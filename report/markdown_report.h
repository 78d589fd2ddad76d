// `thinwire report`'s document: a Markdown report of stored runs — the settings that differ, a
// summary table (final validation loss, bytes, simulated time, utilisation, wall time),
// validation loss against bytes and against simulated time as PNGs drawn by the workbench's plot
// widget off screen (ui/plot/offscreen.h; without ImGui the report says why there are none), and
// every run's resolved config. Reads the run store only; writes only inside `out`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "storage/run_store.h"

namespace tw {

struct ReportOptions {
    std::vector<int64_t> ids;         // runs, in this order
    std::vector<std::string> groups;  // then every run of each group, oldest first (each run once)
    std::string db_label;             // how messages and the report name the store (its path)
    std::string out;                  // folder to write; "" = report-<first id>
    bool force = false;               // overwrite report.md and the PNGs when they exist
    int width = 960, height = 540;    // pixels of each plot
};

struct ReportFiles {
    std::string report;               // report.md
    std::vector<std::string> plots;   // the PNGs written (none in a build without ImGui)
};

// Writes the report. Errors (an unknown run or group, files that exist without `force`, a folder
// that cannot be written, a folder or file that is the run store) name what is wrong; nothing is
// overwritten without `force`, and the run store's files never are.
Result<ReportFiles> write_report(RunStore& store, const ReportOptions& options);

}  // namespace tw
