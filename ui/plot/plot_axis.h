// One axis of the plot widget (plot_widget.cpp): data units <-> axis space (log10 on a log axis) <->
// pixels, its zoom and pan, and its ticks. A value type; thread-safe as such.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ui/logic/ticks.h"

namespace tw::ui {

struct Axis {
    bool log = false;
    double lo = 0, hi = 1;  // visible range, axis space
    float p0 = 0, p1 = 1;   // pixels of lo and hi (p0 > p1 on the y axis: up is smaller)

    double to_axis(double v) const { return log ? (v > 0 ? std::log10(v) : std::numeric_limits<double>::quiet_NaN()) : v; }
    double to_data(double a) const { return log ? std::pow(10.0, a) : a; }
    float px(double a) const {
        // Clamped so far-off points stay finite floats; the clip rectangle hides them anyway.
        const double p = p0 + (a - lo) * (double(p1) - p0) / (hi - lo);
        return float(std::clamp(p, -1e6, 1e6));
    }
    double at(float p) const { return lo + (double(p) - p0) * (hi - lo) / (double(p1) - p0); }

    void zoom(double center, double factor) {
        const double new_lo = center - (center - lo) * factor, new_hi = center + (hi - center) * factor;
        if (new_hi - new_lo > 1e-12 * std::max(1.0, std::abs(center))) lo = new_lo, hi = new_hi;
        limit();
    }
    void pan_px(float d) {
        const double da = double(d) * (hi - lo) / (double(p1) - p0);
        lo -= da;
        hi -= da;
        limit();
    }
    // Zooming out stops where data units would overflow (10^±300 on a log axis, ±1e300 linear).
    void limit() {
        const double bound = log ? 300 : 1e300;
        lo = std::max(lo, -bound);
        hi = std::min(hi, bound);
        if (!(lo < hi)) lo = -bound, hi = bound;
    }
};

// Axis over view [lo, hi] (data units); falls back to the data's range, then to [0, 1] (1..10 on log).
Axis make_axis(bool log, double lo, double hi, double fit_lo, double fit_hi);
// About `target` ticks over the axis's visible range, labelled in `unit` (positions in axis space).
std::vector<Tick> axis_ticks(const Axis& a, int target, AxisUnit unit);

}  // namespace tw::ui
