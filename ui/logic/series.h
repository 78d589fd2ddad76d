// Series processing for live plots: decimation that keeps extremes and debiased EMA smoothing.
// Pure functions, no ImGui; the plot widget calls them on the visible x-range every frame.
#pragma once

#include <cstddef>
#include <vector>

namespace tw::ui {

struct Series {
    std::vector<double> x;  // non-decreasing
    std::vector<double> y;  // same length; NaN = gap
};

// Decimates the points with x in [x_lo, x_hi] (plus one neighbour on each side, so lines reach the
// edges) to at most ~2·buckets points: the x-range is cut into `buckets` equal buckets and each
// non-empty bucket contributes its minimum and its maximum point in x order. A series that already
// has ≤ 2·buckets visible points is returned as is. Zooming in re-buckets the visible part, so
// detail appears; the global extremes of the visible range are always kept.
Series decimate_minmax(const Series& s, double x_lo, double x_hi, size_t buckets);

// Exponential moving average with weight `alpha` on the past (0 = no smoothing, 0.99 = heavy),
// debiased like Adam: ema_t = alpha·ema_{t−1} + (1−alpha)·y_t from ema_0 = 0, divided by
// (1 − alpha^t). So the first point equals y_1 and a constant series stays constant.
// NaNs are skipped (output NaN there, state unchanged).
std::vector<double> debiased_ema(const std::vector<double>& y, double alpha);

// Index of the point whose x is closest to `x` (for the hover tooltip); s must not be empty.
size_t nearest_index(const Series& s, double x);

}  // namespace tw::ui
