// What the panels share within one frame and across frames: which runs and nodes are shown, the
// what-if network per run, and requests the frame loop carries out after rendering.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "ui/data/retime_tasks.h"
#include "ui/data/run_cache.h"
#include "ui/run_driver.h"

namespace tw::ui {

struct ViewState {
    std::set<int64_t> runs;                      // runs overlaid in the plots (History checkboxes)
    std::map<std::string, bool> hidden_nodes;    // "RUN/node/train|val" → hidden (legend click)
    std::map<int64_t, WhatIf> what_if;           // run → network and hardware its sim-time axis is re-timed for
    RetimeTasks retimes;                         // the what-ifs' replays, on background tasks
    std::shared_ptr<const CacheState> cache;     // this frame's snapshot of the store
    DriverSnapshot driver;                       // this frame's snapshot of the running session
    std::string status_line;                     // last action's result, shown at the bottom
};

}  // namespace tw::ui
