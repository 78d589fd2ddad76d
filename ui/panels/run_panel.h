// Run control: start the layout (or every run of its file), pause, resume, stop; the session's
// phase, the last message, and its events.
#pragma once

#include <vector>

#include "ui/logic/layout_model.h"
#include "ui/run_driver.h"
#include "ui/view_state.h"

namespace tw::ui {

struct RunPanel {
    size_t shown_log = 0;  // log lines seen, to scroll to new ones
    bool end_said = true;  // whether the status line has said how the run started here ended
    std::vector<RunConfig> queue;  // "Run all": the file's runs not started yet, in order

    // Start (or Run all), pause, resume, stop, the session's phase and the last message: drawn at
    // the top of the left column, outside its scrolling part, so they are always in reach.
    void draw_controls(ViewState& v, RunDriver& driver, LayoutModel& layout);
    // The coordinator's and nodes' events, newest at the bottom.
    void draw_log(ViewState& v);
};

}  // namespace tw::ui
