// How a plot fits its data by default: axes padded so no point sits on an edge, and bands across
// replicas only while few runs share the plot. Pure; no ImGui.
#pragma once

#include <cstddef>

namespace tw::ui {

// [lo, hi] (axis space: log10 of the data on a log axis) widened by `pad` of its length on each
// side; a single value gets ±0.5. False (outputs untouched) when lo > hi or either is not finite.
bool padded_range(double lo, double hi, double pad, double& out_lo, double& out_hi);

// The margin each auto-fitted axis gets on both sides, as a fraction of the data's range: a
// validation point at the last round and a curve's first point stay whole inside the frame.
constexpr double kFitPadX = 0.03;
constexpr double kFitPadY = 0.05;

// Runs above which bands across replicas are off unless asked for: with many runs the bands
// overlap into one shade and hide the lines.
constexpr size_t kBandRunsMax = 4;
// Whether a plot of `runs` runs draws bands: `asked` 1 = always, 0 = never, -1 = by default
// (up to kBandRunsMax runs).
bool bands_shown(size_t runs, int asked);

}  // namespace tw::ui
