// History: every run in the store with a filter, its tags and notes; tick runs to overlay them in
// the plots; export a run as CSV, JSON or a standalone SQLite file. Writes (notes, tags, exports)
// run on a background task so a frame never waits for the database.
#pragma once

#include <future>
#include <string>
#include <vector>

#include "ui/view_state.h"

namespace tw::ui {

struct HistoryPanel {
    std::string db_path;
    char filter[128] = "";
    int64_t selected = 0;  // run whose details are shown
    char notes[1024] = "";
    char tags[256] = "";
    int64_t edited = 0;    // run the text buffers belong to
    // Background writes and what the status line says when each succeeds.
    std::vector<std::pair<std::future<Status>, std::string>> writes;

    void draw(ViewState& v, RunDriver& driver);

private:
    void draw_details(ViewState& v, RunDriver& driver, const RunSummary& r);
    void background(ViewState& v, std::function<Status(RunStore&)> fn, std::string done_text = "done");
};

}  // namespace tw::ui
