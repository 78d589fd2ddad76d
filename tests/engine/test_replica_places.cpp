// Replica places (engine/worker/replica_places.h): who holds each replica's place when spares
// take lost replicas' places, and a donor's table checked before it is adopted.
#include <gtest/gtest.h>

#include "engine/worker/replica_places.h"

namespace tw {
namespace {

TEST(ReplicaPlaces, SparesTakeFreePlacesInOrderAndRoundsFollowTheirRanks) {
    ReplicaPlaces p(3, 5);  // replicas 0..2, spares at ranks 3 and 4
    EXPECT_EQ(p.rank_of(2), 2);
    EXPECT_EQ(p.replica_at(3), -1);
    // Replicas 0 and 2 lost for good; the spare at rank 3 is lost too: only rank 4 stands by.
    auto pairs = p.refill({0, 2}, [](int k) { return k == 3; });
    ASSERT_EQ(pairs.size(), 1u);
    EXPECT_EQ(pairs[0], std::make_pair(0, 4));
    EXPECT_TRUE(p.refilled(0));
    EXPECT_FALSE(p.refilled(2));  // no spare left for it
    EXPECT_EQ(p.replica_at(4), 0);
    // A round's members in the order of the ranks that hold them: 1 (rank 1), 2 (rank 2), 0 (rank 4).
    EXPECT_EQ(p.by_rank({0, 1, 2}), (std::vector<int>{1, 2, 0}));
    EXPECT_EQ(p.ranks_of({1, 2, 0}), (std::vector<int>{1, 2, 4}));
    // Nothing stands by any more while rank 3 stays lost; once it is heard again it takes place 2.
    EXPECT_TRUE(p.refill({2}, [](int k) { return k == 3; }).empty());
    EXPECT_EQ(p.refill({2}, [](int) { return false; }), (std::vector<std::pair<int, int>>{{2, 3}}));
}

TEST(ReplicaPlaces, ADonorsTableIsCheckedBeforeItIsAdopted) {
    ReplicaPlaces p(3, 4);
    EXPECT_NE(p.adopt({0, 1}).message().find("names 2 places for 3 replicas"), std::string::npos);
    EXPECT_NE(p.adopt({0, 1, 4}).message().find("held by mesh rank 4, beyond the mesh's 4"), std::string::npos);
    EXPECT_NE(p.adopt({0, 3, 3}).message().find("mesh rank 3 holds two places"), std::string::npos);
    EXPECT_EQ(p.holders(), (std::vector<int>{0, 1, 2}));  // a refused table changes nothing
    ASSERT_TRUE(p.adopt({0, 1, 3}));
    EXPECT_EQ(p.replica_at(3), 2);
    EXPECT_EQ(p.replica_at(2), -1);
}

TEST(ReplicaPlaces, WithoutATableEveryReplicaIsItsRank) {
    ReplicaPlaces p;
    EXPECT_TRUE(p.empty());
    EXPECT_EQ(p.rank_of(5), 5);
    EXPECT_EQ(p.replica_at(5), 5);
}

}  // namespace
}  // namespace tw
