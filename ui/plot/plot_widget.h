// The plot widget: line plots of live training metrics drawn with ImDrawList (ImPlot is not
// packaged in Debian). Decimation and smoothing come from ui/logic/series.h, ticks from
// ui/logic/ticks.h; this file only lays out, draws and handles the mouse.
#pragma once

#include <imgui.h>

#include <cstddef>
#include <string>
#include <vector>

#include "ui/logic/series.h"
#include "ui/logic/ticks.h"

namespace tw::ui {

// ---------------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------------

// One curve. The widget does not own `data`; it must stay alive (and at the same address) while it
// is plotted. The widget caches, per Series address and x scale, a smoothed copy and coarser
// levels of detail: points appended since the last frame extend them (O(new points)); any other
// change it notices (size shrank, first point or the old last point differs) rebuilds them
// (~3 ms per 100k points here). A change to points in the middle with the same size and ends
// goes unnoticed: replace the Series object or call plot_cache_clear().
struct PlotSeries {
    std::string label;             // legend text; also the hover tooltip's first column
    const Series* data = nullptr;  // x non-decreasing, NaN y = gap
    ImU32 color = 0xFFFFFFFF;      // IM_COL32; the raw line is drawn with ~25% of its alpha when smoothing
    bool visible = true;           // toggled by a click on the legend entry
    std::string tooltip;           // extra hover text, e.g. the run's key settings ("diloco H=15 lr=0.7")
    bool smooth = true;            // false: drawn as recorded even when the plot smooths (sparse series:
                                   // a validation loss per round must end at its last value)
    bool points = false;           // a dot at every point, ringed in the background colour so it stands
                                   // out on a line of its colour (sparse series; a one-point series shows)
    bool in_legend = true;         // false: no legend row (a run's replicas under its own row)
    // A band drawn under the curve, filled at ~20% of its colour: between band_lo and band_hi,
    // which have the data's x values (e.g. the min and max over a run's replicas). Not owned.
    const Series* band_lo = nullptr;
    const Series* band_hi = nullptr;
};


// A vertical marker at one x, e.g. a fault event of a run (ui/data/run_faults.h): a thin line
// across the plot area, `label` written along it near the top, and `text` (may hold several lines)
// in the hover tooltip while the cursor is within a few pixels of it. Markers do not take part in
// auto-fit; one outside the visible x-range (or at x <= 0 on a log x axis) is not drawn.
struct PlotMarker {
    double x = 0;              // data units
    ImU32 color = 0xFFFFFFFF;  // IM_COL32
    std::string label;         // short; skipped where it would overlap the previous marker's
    std::string text;          // hover text
};

// A legend row that explains a way of drawing instead of naming a series: a line swatch ("train")
// or a dot as PlotSeries::points draws it ("validation").
struct LegendNote {
    std::string label;
    bool dot = false;
};

struct PlotOptions {
    std::string x_label;   // under the x axis, e.g. "step"
    std::string y_label;   // left of the y axis, drawn vertically, e.g. "train.loss"
    AxisUnit x_unit = AxisUnit::kNumber, y_unit = AxisUnit::kNumber;  // tick and tooltip labels
    bool log_x = false;    // log10 axis; points with x <= 0 are skipped (drawn as gaps)
    bool log_y = false;    // log10 axis; points with y <= 0 are skipped (drawn as gaps)
    double smoothing = 0;  // debiased EMA weight on the past in [0, 1); > 0 draws the raw curve faint
    size_t buckets = 0;    // min/max decimation buckets per series; 0 = the plot area's width in pixels
    bool legend = true;    // draw the legend: in the plot area's corner over the fewest drawn points, or
                           // right of the plot area when every corner has some (ui/logic/legend_place.h)
    float line_width = 1;  // pixels; the curve's width without smoothing (the smoothed curve is 2, its raw one 1)
    const std::vector<PlotMarker>* markers = nullptr;  // vertical markers, drawn over the curves; not owned
    // Rows under the series' rows that say how kinds of series are drawn, in the text colour: a
    // row per run cannot tell its training line from its validation dots when both share its colour.
    std::vector<LegendNote> legend_notes;
};

// The visible range, in data units (on a log axis too: x_lo = 10 means 10, not 10^10). Kept by the
// caller, one per plot, so zoom survives between frames and can be shared or reset.
struct PlotView {
    double x_lo = 0, x_hi = 1;
    double y_lo = 0, y_hi = 1;
    bool auto_fit = true;  // fit every frame to the visible series (follows live data);
                           // cleared by zoom or pan, set again by a double click
};

// Screen rectangle in pixels (ImGui screen coordinates).
struct PlotRect {
    ImVec2 min;  // top left
    ImVec2 max;  // bottom right
};

// ---------------------------------------------------------------------------------------------
// The widget
// ---------------------------------------------------------------------------------------------

// Draws one plot into the current ImGui window at the cursor, taking `size` pixels (a component
// <= 0 means "the rest of the window's content region" in that direction, at least 120 × 80):
// frame, grid, nice ticks (log ticks on log axes; nice linear values placed on a log axis when
// less than two decades show), axis labels, legend (a click toggles `series[i].visible`), a hover
// tooltip (a table with, per visible series, the point nearest to the cursor's x: label, x, y —
// smoothed when smoothing — the raw y, and the series' tooltip text), mouse-wheel zoom around the
// cursor (shift: x only, ctrl: y only), drag with the left button to pan, double click to auto-fit.
//
// Every frame each visible series is decimated to the visible x-range (decimate_minmax, with
// `buckets` buckets; binary search for the range's ends). Where the visible range holds many
// points per bucket the widget decimates a cached level of detail instead of the full curve
// (per block of 16, 128, ... points: the min, the max and the first NaN), choosing the level
// separately in 8 pieces of the range, so a log x axis gets full detail where it is sparse.
// Dense stretches (points in neighbouring pixel columns) are drawn as the filled band between
// each column's lowest and highest point, sparse ones as anti-aliased polylines: see
// ui/README.md "Plot widget" for why. Returns the plot area (inside the axes), e.g. to place the
// mouse in tests or to crop a screenshot.
//
// `id` must be unique in the window (it is pushed on the ID stack). The window should have
// ImGuiWindowFlags_NoScrollWithMouse if it can scroll, or the wheel scrolls it as well as zooms.
PlotRect plot(const char* id, std::vector<PlotSeries>& series, const PlotOptions& opt, PlotView& view,
              ImVec2 size = ImVec2(0, 0));

// The i-th colour of a 10-colour palette (Tableau 10), cycling; for runs without a chosen colour.
ImU32 plot_palette(size_t i);

// Drops every cached copy (they are otherwise dropped 120 frames after their last use). Call it
// after freeing Series whose address may be reused by another Series within that time.
void plot_cache_clear();

// ---------------------------------------------------------------------------------------------
// Intended usage
// ---------------------------------------------------------------------------------------------
//
//   struct LossPanel {                       // one per plot, lives as long as the panel
//       tw::ui::PlotView view;
//       std::vector<tw::ui::PlotSeries> series;   // data points into the run store's cache
//       void draw() {
//           tw::ui::PlotOptions opt{"step", "train.loss"};
//           opt.smoothing = 0.9;
//           ImGui::Begin("Loss", nullptr, ImGuiWindowFlags_NoScrollWithMouse);
//           tw::ui::plot("loss", series, opt, view);
//           ImGui::End();
//       }
//   };
//
// Cost on this 2-core machine with Mesa's llvmpipe, 10 series × 100,000 points, smoothing on:
// about 10 ms of CPU per frame (ui/README.md "Plot widget"; tw_plot_demo --bench-frames 200).
// The cache is a process-wide table, so the widget is not thread-safe: call it from the ImGui
// thread only, like every ImGui function.

}  // namespace tw::ui
