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
// of the round's members, a spare taking a lost replica's place, a replica of several nodes leaving
// as a whole. Every other event (start, standby, checkpoint, finish, ...) is not marked.
const std::vector<std::string>& fault_kinds();
// The index of `kind` in fault_kinds(), or -1 when it is not a fault kind.
int fault_kind_index(const std::string& kind);
inline bool is_fault_kind(const std::string& kind) { return fault_kind_index(kind) >= 0; }

// The step an event's text names, or -1: "at step N" (members, late, member-lost, the
// coordinator's node-lost: "last at step N"; rejoin and recovery: "after the round at step N"),
// or for a scheduled fault the step of its own schedule text ("kill 2 at 40 rejoin 80": 40).
int64_t step_named(const EventRecord& e);

// Where an event falls among one node's rows (`step` and `wall_s` of one metric, in row order).
struct EventPlace {
    size_t row = 0;   // the row whose other coordinates (simulated time, tokens, bytes) it takes
    double step = 0;  // its step: the one the text names, else the row's
};

// Where `e` falls. An event whose text names a step is placed at that step, exactly: a worker
// stores "the round at step 20 runs among ..." after that round, when its wall time is already
// nearer step 21's row, so wall time would put it one step late. Its row is the one nearest that
// step (the earlier on a tie), so a replica back from a kill takes its first row after the gap, not
// its last before. An event without a named step (the transport's "replica 1 silent for 2.0 s")
// takes the row nearest in wall time (the earlier on a tie) when it carries one (wall_s > 0; the
// coordinator and the transport store 0) and `same_clock` says the rows share its clock (they are
// its own node's: a worker stamps its events and rows alike, and a node's wall_s does not
// decrease). nullopt when there are no rows or nothing to place it by.
std::optional<EventPlace> place_event(const EventRecord& e, const std::vector<double>& step,
                                      const std::vector<double>& wall_s, bool same_clock);

// A few words for the marker itself: "kill 2", "slow 1", "lost node-2", "lost", "rejoin",
// "state sent", "late", "members".
std::string short_label(const EventRecord& e);

// One marker: an event (or several) at one place on the x axis.
struct FaultMark {
    double x = 0;      // on the plot's x axis, data units
    int kind = 0;      // fault_kind_index of its event; of several, the lowest (a fault before its effects)
    std::string label; // short_label; distinct labels of merged events joined by ", "
    std::string text;  // hover text: one line per event
};

// Sorted by x, events at the same x merged into one marker (every survivor stores its member-lost,
// and a donor's "state sent" falls where the joiner's "rejoin" does: lines drawn on top of each
// other would show only one colour and one label anyway). Texts are kept once each, in x and kind
// order; NaN x is dropped.
std::vector<FaultMark> merge_marks(std::vector<FaultMark> marks);

}  // namespace tw::ui
