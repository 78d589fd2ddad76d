// Tests of core/config_warnings.h against hand-worked cases.
#include <gtest/gtest.h>

#include "core/config_warnings.h"

namespace tw {
namespace {

RunConfig outer(const char* algo, int64_t steps, int64_t H) {
    RunConfig c;
    c.outer.algorithm = algo;
    c.train.steps = steps;
    c.outer.inner_steps = H;
    return c;
}

TEST(ConfigWarnings, StepsFewerThanHNeverSynchronise) {
    auto w = config_warnings(outer("diloco", 40, 50));
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].find("train.steps 40 < outer.inner_steps 50: no outer round runs"), std::string::npos) << w[0];
}

TEST(ConfigWarnings, AnUnsyncedTailNamesItsStepsAndTheLastRound) {
    auto w = config_warnings(outer("sparseloco", 130, 30));  // rounds at 30, 60, 90, 120; 10 steps left
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].find("the last 10 steps are never synchronised"), std::string::npos) << w[0];
    EXPECT_NE(w[0].find("after the round at step 120"), std::string::npos) << w[0];
}

TEST(ConfigWarnings, NoneForWholeRoundsDdpOrTimeBudgets) {
    EXPECT_TRUE(config_warnings(outer("diloco", 300, 15)).empty());
    EXPECT_TRUE(config_warnings(outer("ddp", 40, 50)).empty());
    EXPECT_TRUE(config_warnings(outer("none", 7, 50)).empty());
    RunConfig budget = outer("diloco", 40, 50);
    budget.outer.round_time_s = 2.0;
    EXPECT_TRUE(config_warnings(budget).empty());
}

}  // namespace
}  // namespace tw
