// Where a plot's legend goes; see legend_place.h.
#include "ui/logic/legend_place.h"

namespace tw::ui {

LegendPlacement place_legend(const PxBox& area, const std::vector<PxPoint>& points, float w, float h, float margin) {
    // The four corners in tie order: a later corner wins only with strictly fewer points.
    const LegendSpot order[] = {LegendSpot::kTopRight, LegendSpot::kTopLeft, LegendSpot::kBottomRight,
                                LegendSpot::kBottomLeft};
    LegendPlacement best;
    bool have = false;
    for (LegendSpot spot : order) {
        const bool right = spot == LegendSpot::kTopRight || spot == LegendSpot::kBottomRight;
        const bool top = spot == LegendSpot::kTopRight || spot == LegendSpot::kTopLeft;
        PxBox b;
        b.x0 = right ? area.x1 - margin - w : area.x0 + margin;
        b.y0 = top ? area.y0 + margin : area.y1 - margin - h;
        b.x1 = b.x0 + w;
        b.y1 = b.y0 + h;
        size_t n = 0;
        for (const PxPoint& p : points) n += b.contains(p.x, p.y) ? 1 : 0;
        if (!have || n < best.covered) {
            best.spot = spot, best.box = b, best.covered = n;
            have = true;
        }
    }
    best.area = area;
    const float width = area.x1 - area.x0;
    const bool fits_outside = width - (w + margin) >= width / 2 && h + margin <= area.y1 - area.y0;
    if (best.covered == 0 || !fits_outside) return best;
    LegendPlacement out;
    out.spot = LegendSpot::kOutsideRight;
    out.area = area;
    out.area.x1 = area.x1 - w - margin;
    out.box = PxBox{out.area.x1 + margin, area.y0, area.x1, area.y0 + h};
    out.covered = 0;
    return out;
}

}  // namespace tw::ui
