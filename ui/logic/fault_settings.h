// The layout editor's [faults] section as plain logic (docs/faults.md "Fault schedules"): the
// schedule's entries as rows (add, remove, each row's own problems in the words `thinwire run`
// uses) and the schedule a layout expands to, churn included, so the editor can show what a seed
// draws before the run.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/status.h"

namespace tw::ui {

// A new entry for faults.events that this layout accepts as far as it can: the last replica
// killed after the first round and rejoining one round later ("kill 3 at 15 rejoin 30" for four
// replicas, H = 15); in a run shorter than a round, at its last step but one.
std::string new_fault_event(const RunConfig& c);

// Removes entry `i` of faults.events (nothing when there is none).
void remove_fault_event(RunConfig& c, size_t i);

// Entry `i`'s problems as FaultSchedule::problems (what validate_config and so `thinwire run`
// report) words them, without the "faults.events \"...\": " that names the entry: the editor
// shows them under the row. Empty when the entry is fine or there is none.
std::vector<std::string> fault_event_problems(const RunConfig& c, size_t i);

// The schedule the layout expands to (FaultSchedule::create): one line per event in step order,
// "kill 1 at 37 rejoin 57 (churn)" for the churn's draws, at most `max_lines` (then a last line
// saying how many more). The error names what keeps the schedule from being built.
Result<std::vector<std::string>> schedule_lines(const RunConfig& c, size_t max_lines);

}  // namespace tw::ui
