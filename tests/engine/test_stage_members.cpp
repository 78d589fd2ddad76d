// Which replicas a stage round runs among when replicas may be lost (engine/worker/stage_members.h):
// the holders' sets of present replicas travel as exact doubles and are hostile input; a holder
// that sees another set redoes the round among the replicas every set names.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/worker/stage_members.h"

namespace tw {
namespace {

TEST(StageMembers, MasksRoundTripThroughADouble) {
    const std::vector<int> rs{0, 2, 5, 51};
    const uint64_t m = replica_mask(rs);
    EXPECT_EQ(m, (uint64_t{1} << 0) | (uint64_t{1} << 2) | (uint64_t{1} << 5) | (uint64_t{1} << 51));
    auto back = mask_from_wire(static_cast<double>(m), 52);
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(*back, m);
    EXPECT_EQ(mask_replicas(*back), rs);
}

TEST(StageMembers, AHostileSetIsRefusedByName) {
    for (double v : {-1.0, 0.5, 8.0, 1e300, std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN()}) {
        auto m = mask_from_wire(v, 3);  // three replicas: masks 0..7
        ASSERT_FALSE(m) << v;
        EXPECT_NE(m.message().find("is not a mask of 3 replicas"), std::string::npos) << m.message();
    }
    EXPECT_TRUE(mask_from_wire(7.0, 3));
    EXPECT_FALSE(mask_from_wire(std::ldexp(1.0, 52), 60)) << "beyond 52 replicas a mask is not exact";
    auto v = check_views(3, {3.0, 2.5}, 3);
    ASSERT_FALSE(v);
    EXPECT_NE(v.message().find("stage round"), std::string::npos) << v.message();
}

TEST(StageMembers, EqualSetsAgree) {
    auto v = check_views(0b111, {7.0, 7.0, 7.0}, 3);
    ASSERT_TRUE(v) << v.message();
    EXPECT_TRUE(v->agreed);
    EXPECT_EQ(v->present, (std::vector<int>{0, 1, 2}));
}

TEST(StageMembers, HoldersThatCountApartMeetOnTheReplicasEverySetNames) {
    // Replica 0 found replica 2 lost; replicas 1 and 2's stage node did not: every holder that sees
    // both sets redoes among 0 and 1, and replica 2's node finds itself out.
    for (uint64_t mine : {uint64_t{0b011}, uint64_t{0b111}}) {
        auto v = check_views(mine, {3.0, 7.0, 7.0}, 3);
        ASSERT_TRUE(v) << v.message();
        EXPECT_FALSE(v->agreed);
        EXPECT_EQ(v->present, (std::vector<int>{0, 1}));
        EXPECT_EQ(v->other, mine == 0b011 ? (std::vector<int>{0, 1, 2}) : (std::vector<int>{0, 1}));
    }
    // A larger set seen by one whose own set is smaller: it disagrees but keeps its own.
    auto v = check_views(0b011, {3.0, 7.0}, 3);
    ASSERT_TRUE(v) << v.message();
    EXPECT_FALSE(v->agreed);
    EXPECT_EQ(v->present, (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace tw
