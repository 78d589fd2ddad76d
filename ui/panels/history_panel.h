// History: every run in the store as a sortable, filterable table (name, algorithm, replicas,
// density or rank, bytes per replica, simulated time, final validation loss, status, tags, and any
// config keys as extra columns); tick runs to overlay them in the plots; the settings that differ
// between the ticked runs, and a parallel-coordinates view of those settings against final loss
// (sweeps); a run's tags and notes; export a run as CSV, JSON or a standalone SQLite file. Writes
// (notes, tags, exports) run on a background task so a frame never waits for the database.
#pragma once

#include <future>
#include <string>
#include <vector>

#include "ui/view_state.h"

namespace tw::ui {

struct HistoryPanel {
    std::string db_path;
    char filter[128] = "";
    char extra_keys[256] = "";  // extra columns: comma-separated dotted config keys
    int64_t selected = 0;  // run whose details are shown
    char notes[1024] = "";
    char tags[256] = "";
    int64_t edited = 0;    // run the text buffers belong to
    char export_to[512] = "";  // the selected run's export path without extension ("" = run-ID)
    std::string first_sort;       // the column sorted by at first ("" = id, newest first)
    bool first_ascending = true;
    std::vector<int64_t> shown_order;  // run ids as the table showed them last frame
    // Background writes and what the status line says when each succeeds.
    std::vector<std::pair<std::future<Status>, std::string>> writes;

    void draw(ViewState& v, RunDriver& driver);

private:
    void draw_table(ViewState& v);
    void draw_compare(ViewState& v);
    void draw_details(ViewState& v, RunDriver& driver, const RunSummary& r);
    std::string export_stem(int64_t id) const;
    void background(ViewState& v, std::function<Status(RunStore&)> fn, std::string done_text = "done");
};

}  // namespace tw::ui
