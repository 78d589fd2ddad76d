// Where a plot's legend goes: the corner of the plot area whose box covers the fewest data points,
// or outside the plot area to its right when every corner covers some. Pure; no ImGui: pixels are
// plain floats so tests/ui checks it with hand-computed cases.
#pragma once

#include <cstddef>
#include <vector>

namespace tw::ui {

// A rectangle in screen pixels (y grows downwards): [x0, x1] × [y0, y1].
struct PxBox {
    float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    bool contains(float x, float y) const { return x >= x0 && x <= x1 && y >= y0 && y <= y1; }
};

struct PxPoint {
    float x = 0, y = 0;
};

enum class LegendSpot { kTopRight, kTopLeft, kBottomRight, kBottomLeft, kOutsideRight };

struct LegendPlacement {
    LegendSpot spot = LegendSpot::kTopRight;
    PxBox box;        // where the legend is drawn
    PxBox area;       // the plot area to draw the data in: narrowed when the legend is outside
    size_t covered = 0;  // points under the box (0 outside)
};

// Places a `w` × `h` legend `margin` pixels in from the corners of `area`. The corner whose box
// holds the fewest of `points` (edges included) wins; ties go to top-right, then top-left,
// bottom-right, bottom-left (the top-right corner is where a descending loss curve leaves room).
// When every corner holds at least one point the legend moves outside: the area loses `w + margin`
// pixels on its right and the box sits in that strip, level with the area's top, so no point is
// covered. It stays in the best corner when the narrowed area would keep less than half its
// width (a narrow plot would lose more than the legend hides) or the legend is taller than the
// area. Points are the drawn data in pixels: the caller samples along long segments, or a line
// crossing a corner between two far-apart points would count as missing.
LegendPlacement place_legend(const PxBox& area, const std::vector<PxPoint>& points, float w, float h, float margin);

}  // namespace tw::ui
