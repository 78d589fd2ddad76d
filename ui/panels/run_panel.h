// Run control: start the layout, pause, resume, stop; the session's phase and its events.
#pragma once

#include <vector>

#include "ui/logic/layout_model.h"
#include "ui/run_driver.h"
#include "ui/view_state.h"

namespace tw::ui {

struct RunPanel {
    size_t shown_log = 0;  // log lines seen, to scroll to new ones
    std::vector<RunConfig> queue;  // "Run all": the file's runs not started yet, in order

    void draw(ViewState& v, RunDriver& driver, LayoutModel& layout);
};

}  // namespace tw::ui
