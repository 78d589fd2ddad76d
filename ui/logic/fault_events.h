// Fault events on the plots (docs/faults.md): which stored events are about faults, where each one
// falls among a node's metric rows, and the markers a plot draws from them. Pure logic: the
// run's rows come in as plain columns, the x axis is the caller's (ui/data/run_faults.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/metrics.h"

namespace tw::ui {

// The kinds of event the plots mark, in this order (the index picks the marker's colour): a
// scheduled fault, a node the coordinator stopped hearing from, a round redone among survivors,
// a replica that took a live peer's state, a donor that sent it, a straggler left out, a change
// of the round's members. Every other event (start, checkpoint, finish, ...) is not marked.
const std::vector<std::string>& fault_kinds();
// The index of `kind` in fault_kinds(), or -1 when it is not a fault kind.
int fault_kind_index(const std::string& kind);
inline bool is_fault_kind(const std::string& kind) { return fault_kind_index(kind) >= 0; }

// The step an event's text names, or -1: "at step N" (members, late, member-lost, the
// coordinator's node-lost: "last at step N"; rejoin and recovery: "after the round at step N"),
// or for a scheduled fault the step of its own schedule text ("kill 2 at 40 rejoin 80": 40).
int64_t step_named(const EventRecord& e);

// Where `e` falls among one node's rows (`step` and `wall_s` of one metric, in row order; a node's
// wall_s runs on one clock, so it does not decrease): the index of the row nearest in wall time
// (the earlier on a tie) when the event carries a wall time and `same_clock` says the rows share
// its clock (they are the event's own node's: a worker stamps its events and rows alike). The
// coordinator and the transport store their events with wall_s 0 (an unknown time on another
// clock), so those, and rows of another node, are placed by the step the text names: the last row
// at or before it (the first row if the step comes before every row). nullopt when there are no
// rows, or neither a usable wall time nor a named step.
std::optional<size_t> event_row(const EventRecord& e, const std::vector<double>& step,
                                 const std::vector<double>& wall_s, bool same_clock);

// A few words for the marker itself: "kill 2", "slow 1", "lost node-2", "lost", "rejoin",
// "state sent", "late", "members".
std::string short_label(const EventRecord& e);

// One marker: an event (or several) at one place on the x axis.
struct FaultMark {
    double x = 0;      // on the plot's x axis, data units
    int kind = 0;      // fault_kind_index of its (first) event
    std::string label; // short_label; distinct labels of merged events joined by ", "
    std::string text;  // hover text: one line per event
};

// Sorted by x, events of one kind at the same x merged into one marker (every survivor stores its
// member-lost, so one loss would otherwise draw as many lines on top of each other).
std::vector<FaultMark> merge_marks(std::vector<FaultMark> marks);

}  // namespace tw::ui
