// NoLoCo micro-batch routing (core/routing.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "core/routing.h"

namespace tw {
namespace {

TEST(Routing, SplitMix64MatchesTheReferenceStream) {
    // Vigna's splitmix64.c from state 0: the published first outputs.
    uint64_t state = 0;
    EXPECT_EQ(splitmix64(state), 0xE220A8397B1DCDAFull);
    EXPECT_EQ(splitmix64(state), 0x6E789E6AA1B965F4ull);
    EXPECT_EQ(splitmix64(state), 0x06C45D188009454Full);
}

TEST(Routing, UniformBelowStaysInRange) {
    uint64_t state = 7;
    for (uint64_t bound : {1ull, 2ull, 3ull, 7ull, 1000ull, (1ull << 63) + 1})
        for (int i = 0; i < 200; ++i) EXPECT_LT(uniform_below(state, bound), bound);
}

TEST(Routing, IsAPermutation) {
    for (int replicas = 1; replicas <= 17; ++replicas)
        for (int64_t step = 0; step < 20; ++step) {
            auto perm = routing_permutation(3, step, static_cast<int>(step % 4), static_cast<int>(step % 3), replicas);
            ASSERT_EQ(perm.size(), static_cast<size_t>(replicas));
            std::sort(perm.begin(), perm.end());
            std::vector<int> ids(replicas);
            std::iota(ids.begin(), ids.end(), 0);
            EXPECT_EQ(perm, ids);
        }
}

// Computed once (and cross-checked with a separate Python transcription of the algorithm) and
// written down: a change of generator, key mixing or shuffle shows up here (and would silently
// change every pipeline run's routing).
TEST(Routing, PinnedPermutationsCatchAChangeOfAlgorithm) {
    EXPECT_EQ(routing_permutation(0, 0, 0, 0, 4), (std::vector<int>{3, 0, 1, 2}));
    EXPECT_EQ(routing_permutation(1234, 50, 3, 1, 8), (std::vector<int>{6, 5, 0, 1, 2, 7, 3, 4}));
    EXPECT_EQ(routing_permutation(0xDEADBEEFull, 123456789, 7, 5, 6), (std::vector<int>{5, 2, 1, 0, 3, 4}));
    EXPECT_EQ(routing_permutation(1, -1, 0, 2, 5), (std::vector<int>{0, 4, 2, 1, 3}));
}

TEST(Routing, SameInputsGiveTheSamePermutation) {
    for (int i = 0; i < 50; ++i)
        EXPECT_EQ(routing_permutation(9, i, i % 5, i % 3, 8), routing_permutation(9, i, i % 5, i % 3, 8));
}

TEST(Routing, EachKeyChangesThePermutation) {
    // 8 replicas: 40320 permutations, so two unrelated draws agree with probability 1/40320; across
    // 4 × 200 neighbouring keys even a handful of equal pairs would mean a key is being ignored.
    const int R = 8;
    int equal = 0;
    for (int k = 0; k < 200; ++k) {
        const auto base = routing_permutation(5, k, k % 7, k % 4, R);
        equal += base == routing_permutation(6, k, k % 7, k % 4, R);      // seed
        equal += base == routing_permutation(5, k + 1, k % 7, k % 4, R);  // step
        equal += base == routing_permutation(5, k, k % 7 + 1, k % 4, R);  // micro-batch
        equal += base == routing_permutation(5, k, k % 7, k % 4 + 1, R);  // stage
    }
    EXPECT_LE(equal, 3);
    // Swapping two keys' values is a different routing, not the same one.
    int swapped_equal = 0;
    for (int a = 0; a < 20; ++a)
        for (int b = 0; b < 20; ++b)
            if (a != b) swapped_equal += routing_permutation(1, a, b, 0, R) == routing_permutation(1, b, a, 0, R);
    EXPECT_LE(swapped_equal, 2);
}

// Counts of where each source replica's micro-batch goes over 10,000 draws: every (source, destination)
// cell must lie within ±15% of the mean (about ±8.7 standard deviations for 4 replicas, and the
// draws are deterministic, so this cannot flake).
void expect_uniform(const std::vector<std::vector<int>>& counts, int draws) {
    const int R = static_cast<int>(counts.size());
    const double mean = static_cast<double>(draws) / R;
    for (int r = 0; r < R; ++r)
        for (int d = 0; d < R; ++d) {
            EXPECT_GT(counts[r][d], 0.85 * mean) << "source " << r << " destination " << d;
            EXPECT_LT(counts[r][d], 1.15 * mean) << "source " << r << " destination " << d;
        }
}

TEST(Routing, DestinationsAreRoughlyUniformOverSeedsAndOverSteps) {
    for (int R : {2, 4, 5}) {
        const int draws = 10000;
        std::vector<std::vector<int>> by_seed(R, std::vector<int>(R, 0)), by_step = by_seed;
        for (int i = 0; i < draws; ++i) {
            const auto a = routing_permutation(static_cast<uint64_t>(i), 100, 2, 1, R);
            const auto b = routing_permutation(77, i, 2, 1, R);
            for (int r = 0; r < R; ++r) ++by_seed[r][a[r]], ++by_step[r][b[r]];
        }
        SCOPED_TRACE("replicas " + std::to_string(R));
        expect_uniform(by_seed, draws);
        expect_uniform(by_step, draws);
    }
}

TEST(Routing, RoutingSourceIsTheInverse) {
    for (int R = 1; R <= 9; ++R)
        for (int64_t step = 0; step < 30; ++step) {
            const auto perm = routing_permutation(11, step, 1, 2, R);
            for (int r = 0; r < R; ++r) {
                EXPECT_EQ(routing_source(11, step, 1, 2, R, perm[r]), r);
                EXPECT_EQ(perm[routing_source(11, step, 1, 2, R, r)], r);
            }
        }
}

}  // namespace
}  // namespace tw
