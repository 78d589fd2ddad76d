// Tests of ui/logic/mean_band.h and the unit-labelled ticks (ui/logic/ticks.h) against hand-worked values.
#include <gtest/gtest.h>

#include <cmath>

#include "ui/logic/mean_band.h"
#include "ui/logic/ticks.h"

namespace tw::ui {
namespace {

TEST(MeanBand, MeanAndMinMaxOverReplicasStepByStep) {
    // Replica a: 4, 3, 2 at steps 1..3; replica b: 6, 5 at steps 1..2 (it left after step 2).
    MemberCurve a{{1, 2, 3}, {10, 20, 30}, {4, 3, 2}}, b{{1, 2}, {12, 22}, {6, 5}};
    MeanBand m = mean_band({a, b}, BandKind::kMinMax);
    ASSERT_EQ(m.mean.x.size(), 3u);
    EXPECT_EQ(m.mean.x, (std::vector<double>{11, 21, 30}));
    EXPECT_EQ(m.mean.y, (std::vector<double>{5, 4, 2}));  // step 3: replica a alone
    EXPECT_EQ(m.lo.y, (std::vector<double>{4, 3, 2}));
    EXPECT_EQ(m.hi.y, (std::vector<double>{6, 5, 2}));
    EXPECT_EQ(m.count, (std::vector<size_t>{2, 2, 1}));
    EXPECT_EQ(m.step, (std::vector<double>{1, 2, 3}));
}

TEST(MeanBand, StandardDeviationBandAndGaps) {
    // Values 1, 3, 5 at one step: mean 3, population std sqrt(8/3). A NaN is no value.
    MemberCurve a{{7}, {0}, {1}}, b{{7}, {0}, {3}}, c{{7}, {0}, {5}}, d{{7}, {0}, {NAN}};
    MeanBand m = mean_band({a, b, c, d}, BandKind::kStdDev);
    ASSERT_EQ(m.mean.y.size(), 1u);
    EXPECT_DOUBLE_EQ(m.mean.y[0], 3);
    EXPECT_NEAR(m.lo.y[0], 3 - std::sqrt(8.0 / 3.0), 1e-12);
    EXPECT_NEAR(m.hi.y[0], 3 + std::sqrt(8.0 / 3.0), 1e-12);
    EXPECT_EQ(m.count[0], 3u);
}

TEST(MeanBand, AMeanXThatWouldGoBackIsLeftOut) {
    // Clocks differ: at step 2 the mean x (5) is before step 1's (6): the point is dropped.
    MemberCurve a{{1, 2, 3}, {6, 4, 9}, {1, 1, 1}}, b{{1, 2, 3}, {6, 6, 9}, {1, 1, 1}};
    MeanBand m = mean_band({a, b}, BandKind::kMinMax);
    EXPECT_EQ(m.mean.x, (std::vector<double>{6, 9}));
}

TEST(UnitTicks, BytesSecondsAndCountsInHumanUnits) {
    auto labels = [](const std::vector<Tick>& t) {
        std::vector<std::string> out;
        for (auto& k : t)
            if (k.major) out.push_back(k.label);
        return out;
    };
    // 0..2.5 MB: one unit for the axis, steps counted in it.
    auto b = unit_linear_ticks(0, 2.5e6, 6, AxisUnit::kBytes);
    EXPECT_EQ(labels(b), (std::vector<std::string>{"0", "0.5 MB", "1 MB", "1.5 MB", "2 MB", "2.5 MB"}));
    EXPECT_DOUBLE_EQ(b[2].value, 1e6);
    // 0..1200 s: minutes, nice steps in minutes (not 8.333 min).
    auto s = unit_linear_ticks(0, 1200, 5, AxisUnit::kSeconds);
    EXPECT_EQ(labels(s), (std::vector<std::string>{"0", "5 min", "10 min", "15 min", "20 min"}));
    EXPECT_DOUBLE_EQ(s[1].value, 300);
    auto c = unit_linear_ticks(0, 5000, 5, AxisUnit::kCount);
    EXPECT_EQ(labels(c), (std::vector<std::string>{"0", "1,000", "2,000", "3,000", "4,000", "5,000"}));
    EXPECT_EQ(unit_text(318781464, AxisUnit::kBytes), "318.8 MB");
    EXPECT_EQ(unit_text(5400, AxisUnit::kSeconds), "90 min");
    EXPECT_EQ(unit_text(12345, AxisUnit::kCount), "12.35k");
    EXPECT_EQ(unit_text(2500, AxisUnit::kCount), "2,500");
    std::vector<Tick> log = {{1e3, true, ""}, {1e6, true, ""}, {3e6, false, ""}};
    label_log_ticks(log, AxisUnit::kBytes);
    EXPECT_EQ(log[0].label, "1 kB");
    EXPECT_EQ(log[1].label, "1 MB");
    EXPECT_EQ(log[2].label, "");  // minors stay unlabelled
}

}  // namespace
}  // namespace tw::ui
