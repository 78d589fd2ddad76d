// Tests of ui/logic/round_mean.h (steps of one round as one point on the bytes axis) and
// ui/logic/plot_fit.h (axis padding, bands by default), against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>

#include "ui/logic/plot_fit.h"
#include "ui/logic/round_mean.h"

namespace tw::ui {
namespace {

TEST(RoundMeans, StepsSharingTheRoundsBytesBecomeTheirMean) {
    // Round 1 (3 steps) ran at 0 bytes, round 2 (3 steps) at 1000, round 3 (1 step so far) at 2000.
    const Series s{{0, 0, 0, 1000, 1000, 1000, 2000}, {9, 8, 7, 6, 5.5, 5, 4.25}};
    const Series r = round_means(s);
    EXPECT_EQ(r.x, (std::vector<double>{0, 1000, 2000}));
    ASSERT_EQ(r.y.size(), 3u);
    EXPECT_DOUBLE_EQ(r.y[0], 8.0);   // (9 + 8 + 7) / 3
    EXPECT_DOUBLE_EQ(r.y[1], 5.5);   // (6 + 5.5 + 5) / 3
    EXPECT_DOUBLE_EQ(r.y[2], 4.25);
    // Distinct xs (DDP: a round per step) come back unchanged.
    const Series ddp{{10, 20, 30}, {3, 2, 1}};
    EXPECT_EQ(round_means(ddp).x, ddp.x);
    EXPECT_EQ(round_means(ddp).y, ddp.y);
}

TEST(RoundMeans, NaNsAreLeftOutAndMembersKeepTheirRoundsFirstStep) {
    const Series s{{5, 5, 5, 7}, {NAN, 2, 4, NAN}};
    const Series r = round_means(s);
    ASSERT_EQ(r.y.size(), 2u);
    EXPECT_DOUBLE_EQ(r.y[0], 3.0);  // (2 + 4) / 2, the NaN left out
    EXPECT_TRUE(std::isnan(r.y[1]));
    const MemberCurve m{{1, 2, 3, 4}, {0, 0, 50, 50}, {4, 2, 3, 1}};
    const MemberCurve rm = round_means(m);
    EXPECT_EQ(rm.step, (std::vector<double>{1, 3}));
    EXPECT_EQ(rm.x, (std::vector<double>{0, 50}));
    EXPECT_EQ(rm.y, (std::vector<double>{3, 2}));
    // Two replicas whose rounds start at the same steps average point by point.
    const MeanBand b = mean_band({rm, round_means(MemberCurve{{1, 2, 3, 4}, {0, 0, 50, 50}, {6, 4, 1, 1}})},
                                 BandKind::kMinMax);
    EXPECT_EQ(b.mean.y, (std::vector<double>{4, 1.5}));  // (3 + 5) / 2, (2 + 1) / 2
    EXPECT_EQ(b.lo.y, (std::vector<double>{3, 1}));
    EXPECT_EQ(b.hi.y, (std::vector<double>{5, 2}));
}

TEST(PlotFit, AxesArePaddedSoNoPointSitsOnAnEdge) {
    double lo = 0, hi = 0;
    ASSERT_TRUE(padded_range(100, 300, kFitPadX, lo, hi));
    EXPECT_DOUBLE_EQ(lo, 94);   // 100 - 0.03 · 200
    EXPECT_DOUBLE_EQ(hi, 306);  // 300 + 0.03 · 200
    // Log axis: the range is in decades, 10^5 .. 10^9 → 4 decades, 0.12 of a decade each side.
    ASSERT_TRUE(padded_range(5, 9, kFitPadX, lo, hi));
    EXPECT_DOUBLE_EQ(lo, 4.88);
    EXPECT_DOUBLE_EQ(hi, 9.12);
    ASSERT_TRUE(padded_range(7, 7, kFitPadY, lo, hi));  // a single value: ±0.5
    EXPECT_DOUBLE_EQ(lo, 6.5);
    EXPECT_DOUBLE_EQ(hi, 7.5);
    lo = hi = -1;
    EXPECT_FALSE(padded_range(INFINITY, -INFINITY, kFitPadX, lo, hi));  // nothing to fit
    EXPECT_EQ(lo, -1);
}

TEST(PlotFit, BandsAreOffWithMoreThanFourRunsUnlessAsked) {
    EXPECT_TRUE(bands_shown(1, -1));
    EXPECT_TRUE(bands_shown(4, -1));
    EXPECT_FALSE(bands_shown(5, -1));
    EXPECT_TRUE(bands_shown(12, 1));
    EXPECT_FALSE(bands_shown(2, 0));
}

}  // namespace
}  // namespace tw::ui

namespace tw::ui {
namespace {

// Rounds of three steps: steps 1–3 ran before any bytes (the first step's counter holds a 24 B
// start-up checksum), steps 4–6 after round 1's 100 B; each step sits at its round's end.
TEST(RoundEndBytes, EachStepSitsAtTheBytesSentOnceItsRoundIsOver) {
    const double nan = std::nan("");
    const std::vector<double> before{nan, 24, 24, 124, 124, 124, 224};
    const std::vector<double> at{24, 24, 124, 124, 124, 224, 224};
    EXPECT_EQ(round_end_bytes(before, at), (std::vector<double>{124, 124, 124, 224, 224, 224, 224}));
    // One step per round (DDP): each at its own bytes; the first joins the second's round.
    EXPECT_EQ(round_end_bytes({nan, 10, 20}, {10, 20, 30}), (std::vector<double>{20, 20, 30}));
    EXPECT_TRUE(round_end_bytes({}, {}).empty());
}

}  // namespace
}  // namespace tw::ui
