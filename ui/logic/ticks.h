// Axis ticks for the plot widget: "nice" linear ticks (1, 2, 5 × 10^k steps) and log ticks
// (decades, with 2..9 minor ticks when few decades are visible). Pure functions, no ImGui.
#pragma once

#include <string>
#include <vector>

namespace tw::ui {

struct Tick {
    double value = 0;    // in data units
    bool major = true;   // majors get a label and a grid line; minors a short mark
    std::string label;   // "" for minors
};

// About `target` major ticks covering [lo, hi] (lo < hi), at multiples of a step in {1, 2, 5}·10^k,
// every tick inside [lo, hi]. Labels use the fewest digits that tell neighbours apart
// ("0.25", "1e+06" style beyond 1e6 or below 1e-4).
std::vector<Tick> linear_ticks(double lo, double hi, int target = 6);

// Ticks for a log10 axis over [lo, hi] (0 < lo < hi): majors at powers of ten (every n-th decade
// when there are many, so about `target` majors), minors at 2..9 × 10^k when at most 3 decades
// show. If no power of ten falls inside, the range's ends are labelled majors.
std::vector<Tick> log_ticks(double lo, double hi, int target = 6);

// Formats a value for a label or tooltip with `digits` significant digits.
std::string format_value(double v, int digits = 4);

// How an axis labels its ticks: plain numbers, or quantities in human units (bytes in decimal
// units as `thinwire` counts them: "1.5 MB"; seconds: "90 s", "2.5 min", "1.2 h", "3 d"; counts:
// "12k", "3.5M", with separators below 10,000: "2,500").
enum class AxisUnit { kNumber, kBytes, kSeconds, kCount };

// linear_ticks in `unit`: one unit for the whole axis, chosen for the largest magnitude in
// [lo, hi], and nice steps counted in it (0, 5, 10, 15 min; 0.5, 1, 1.5 MB), values in data units.
std::vector<Tick> unit_linear_ticks(double lo, double hi, int target, AxisUnit unit);

// Relabels the major ticks (data units) of a log axis for `unit`, each tick in its own unit
// (decades apart: "1 kB, 10 kB, 100 kB, 1 MB").
void label_log_ticks(std::vector<Tick>& ticks, AxisUnit unit);

// One value in `unit`, for tooltips: "1.53 MB", "2.50 min", "12,345", with `digits` significant digits.
std::string unit_text(double v, AxisUnit unit, int digits = 4);

}  // namespace tw::ui
