// Fault marks (ui/data/run_faults.h) as the plot widget's markers, coloured by kind, for every
// plot that shows a run's faults (Plots, the rounds plot in Bytes and time).
#pragma once

#include <vector>

#include "ui/logic/fault_events.h"
#include "ui/plot/plot_widget.h"

namespace tw::ui {

// The colour of fault kind `kind` (fault_kind_index): the scheduled fault red, losses orange,
// rejoins and recoveries green and teal, stragglers olive, membership grey.
ImU32 fault_color(int kind);

// Appends `marks` to `out` as markers.
void append_markers(const std::vector<FaultMark>& marks, std::vector<PlotMarker>& out);

}  // namespace tw::ui
