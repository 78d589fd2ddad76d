// Tests of ui/logic/legend_place.h (the legend's corner, or outside the plot area on the right)
// against hand-computed boxes. The area is 400 × 300 px from (0, 0), the legend 100 × 50 px,
// 10 px in from the edges: its corner boxes are
//   top-right    [290, 390] × [10, 60]     top-left    [10, 110] × [10, 60]
//   bottom-right [290, 390] × [240, 290]   bottom-left [10, 110] × [240, 290]
#include <gtest/gtest.h>

#include "ui/logic/legend_place.h"

namespace tw::ui {
namespace {

const PxBox kArea{0, 0, 400, 300};
constexpr float kW = 100, kH = 50, kMargin = 10;

void expect_box(const PxBox& b, float x0, float y0, float x1, float y1) {
    EXPECT_FLOAT_EQ(b.x0, x0);
    EXPECT_FLOAT_EQ(b.y0, y0);
    EXPECT_FLOAT_EQ(b.x1, x1);
    EXPECT_FLOAT_EQ(b.y1, y1);
}

TEST(LegendPlace, NoDataTakesTheTopRightCorner) {
    const LegendPlacement p = place_legend(kArea, {}, kW, kH, kMargin);
    EXPECT_EQ(p.spot, LegendSpot::kTopRight);
    expect_box(p.box, 290, 10, 390, 60);
    expect_box(p.area, 0, 0, 400, 300);
    EXPECT_EQ(p.covered, 0u);
}

TEST(LegendPlace, TheCornerCoveringFewestPointsWins) {
    // Two points under top-right, one under top-left, none under the bottom corners.
    const LegendPlacement p = place_legend(kArea, {{300, 20}, {350, 50}, {50, 30}, {200, 150}}, kW, kH, kMargin);
    EXPECT_EQ(p.spot, LegendSpot::kBottomRight);
    expect_box(p.box, 290, 240, 390, 290);
    expect_box(p.area, 0, 0, 400, 300);  // inside: the plot keeps its width
}

TEST(LegendPlace, TiesGoTopRightThenTopLeftThenBottomRightThenBottomLeft) {
    const PxPoint tr{300, 20}, tl{50, 30}, br{300, 250};
    EXPECT_EQ(place_legend(kArea, {tr}, kW, kH, kMargin).spot, LegendSpot::kTopLeft);
    EXPECT_EQ(place_legend(kArea, {tr, tl}, kW, kH, kMargin).spot, LegendSpot::kBottomRight);
    EXPECT_EQ(place_legend(kArea, {tr, tl, br}, kW, kH, kMargin).spot, LegendSpot::kBottomLeft);
    // Bottom-left alone is free, whatever the others hold.
    EXPECT_EQ(place_legend(kArea, {tr, tr, tr, tl, br, br}, kW, kH, kMargin).spot, LegendSpot::kBottomLeft);
}

TEST(LegendPlace, APointOnTheBoxsEdgeIsCovered) {
    // (290, 10) is top-right's top-left corner; (289.5, 10) is half a pixel left of it.
    EXPECT_EQ(place_legend(kArea, {{290, 10}}, kW, kH, kMargin).spot, LegendSpot::kTopLeft);
    EXPECT_EQ(place_legend(kArea, {{289.5f, 10}}, kW, kH, kMargin).spot, LegendSpot::kTopRight);
    EXPECT_EQ(place_legend(kArea, {{390, 60}}, kW, kH, kMargin).spot, LegendSpot::kTopLeft);
}

TEST(LegendPlace, EveryCornerCoveredMovesItOutsideOnTheRight) {
    const LegendPlacement p =
        place_legend(kArea, {{300, 20}, {50, 30}, {60, 40}, {300, 250}, {50, 250}}, kW, kH, kMargin);
    EXPECT_EQ(p.spot, LegendSpot::kOutsideRight);
    expect_box(p.area, 0, 0, 290, 300);    // 400 − 100 − 10
    expect_box(p.box, 300, 0, 400, 50);    // in the strip the area gave up, level with its top
    EXPECT_EQ(p.covered, 0u);
}

TEST(LegendPlace, ANarrowPlotKeepsTheLegendInItsLeastCoveredCorner) {
    // 150 px wide: outside would leave 150 − 110 = 40 px, under half. Its corners overlap:
    //   top-right [40, 140] × [10, 60], top-left [10, 110] × [10, 60],
    //   bottom-right [40, 140] × [240, 290], bottom-left [10, 110] × [240, 290].
    // (120, 30): top-right; (50, 30): both tops; (100, 250): both bottoms; (20, 280): bottom-left.
    // Counts 2, 1, 1, 2: top-left wins the tie with bottom-right.
    const PxBox narrow{0, 0, 150, 300};
    const LegendPlacement p = place_legend(narrow, {{120, 30}, {50, 30}, {100, 250}, {20, 280}}, kW, kH, kMargin);
    EXPECT_EQ(p.spot, LegendSpot::kTopLeft);
    expect_box(p.box, 10, 10, 110, 60);
    expect_box(p.area, 0, 0, 150, 300);
    EXPECT_EQ(p.covered, 1u);
}

TEST(LegendPlace, ALegendTallerThanTheAreaStaysInside) {
    // 100 px high, legend 95 px + 10 px margin: top boxes span y [10, 105], bottom ones [-5, 90]; each point lies
    // under two of them, so all four hold one point; outside is not possible: top-right.
    const PxBox flat{0, 0, 400, 100};
    const LegendPlacement p = place_legend(flat, {{300, 50}, {50, 50}}, kW, 95, kMargin);
    EXPECT_EQ(p.spot, LegendSpot::kTopRight);
    EXPECT_EQ(p.covered, 1u);
    expect_box(p.area, 0, 0, 400, 100);
}

}  // namespace
}  // namespace tw::ui
