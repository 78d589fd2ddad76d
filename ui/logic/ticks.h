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

}  // namespace tw::ui
