// A run's fault events as markers on one of the plots' x-axes (ui/logic/fault_events.h places
// each event among its node's rows; this file turns the row into x with the plots' own x_of).
#pragma once

#include <vector>

#include "ui/data/run_cache.h"
#include "ui/logic/fault_events.h"

namespace tw::ui {

// The markers of `d`'s fault events on `axis`, merged per place, sorted by x. An event is placed
// among the train.loss rows (place_event) of its own node when that node has any, else of the
// first node with rows (by the step its text names only); on the step axis x is the event's step,
// on the others the x of its row. `retimed` is the run
// re-timed for a what-if (the sim-time axis then uses the replay's clocks, as the curves do), or
// null. Each hover line reads "run ID node: kind: text"; events that cannot be placed are left out.
std::vector<FaultMark> fault_marks(const RunData& d, int64_t run_id, XAxis axis, const RetimedRun* retimed);

}  // namespace tw::ui
