// A line for several curves at once: the workbench plots a run as the mean over its replicas with
// a band across them, and a group of runs (seeds, a sweep's points sharing a setting) as the mean
// over the runs' lines with a band across the runs. Pure; no ImGui; thread-compatible.
#pragma once

#include <cstddef>
#include <vector>

#include "ui/logic/series.h"

namespace tw::ui {

// One member: its points by step (ascending), with the x it is plotted at (step, tokens, bytes,
// simulated or wall time) and its value (a loss; NaN = no value there).
struct MemberCurve {
    std::vector<double> step, x, y;  // same length
};

// The band across the members at each point: their lowest and highest value, or their mean
// plus and minus one (population) standard deviation.
enum class BandKind { kMinMax, kStdDev };

struct MeanBand {
    Series mean;     // x: the members' mean x at the step; y: their mean value
    Series lo, hi;   // the band, on mean's x
    std::vector<double> step;   // the step of each point (to average MeanBands in turn)
    std::vector<size_t> count;  // members with a value at each point
};

// One point per step at which any member has a value: the mean of the members present there
// (a replica that left early, or a shorter run, stops counting from its last point). A point
// whose mean x would go back (members' clocks differ) is left out, so x stays non-decreasing as
// the plot widget needs.
MeanBand mean_band(const std::vector<MemberCurve>& members, BandKind kind);

}  // namespace tw::ui
