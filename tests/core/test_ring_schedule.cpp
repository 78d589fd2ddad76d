// The ring all-reduce's schedule (core/ring_schedule.h): the chunk split, that the schedule really
// reduces every chunk over every member and hands it to everyone, and the bytes per member — the
// closed form of the header against the schedule's sum, 2·(R−1)/R·P·b exactly when R divides P.
#include <gtest/gtest.h>

#include <set>

#include "core/ring_schedule.h"

namespace tw {
namespace {

TEST(RingSchedule, ChunksSplitTheRemainderOverTheFirstChunks) {
    EXPECT_EQ(ring_chunk_bounds(10, 3), (std::vector<int64_t>{0, 4, 7, 10}));
    EXPECT_EQ(ring_chunk_bounds(12, 4), (std::vector<int64_t>{0, 3, 6, 9, 12}));
    EXPECT_EQ(ring_chunk_bounds(2, 4), (std::vector<int64_t>{0, 1, 2, 2, 2}));  // n < R: empty last chunks
    EXPECT_EQ(ring_chunk_bounds(7, 1), (std::vector<int64_t>{0, 7}));
    EXPECT_EQ(ring_chunk_bounds(0, 3), (std::vector<int64_t>{0, 0, 0, 0}));
}

// Symbolically: which members' values each position's copy of each chunk holds after every step.
// The reduce-scatter must leave chunk c's owner with all R contributions exactly once (and nobody
// adds a contribution twice); the all-gather must then give every position every owner's chunk.
TEST(RingSchedule, EveryChunkIsReducedOverEveryMemberOnceAndReachesEveryone) {
    for (int R = 1; R <= 6; ++R) {
        SCOPED_TRACE("R = " + std::to_string(R));
        // held[i][c]: the members whose values position i's copy of chunk c sums.
        std::vector<std::vector<std::multiset<int>>> held(R, std::vector<std::multiset<int>>(R));
        for (int i = 0; i < R; ++i)
            for (int c = 0; c < R; ++c) held[i][c] = {i};
        for (int s = 0; s + 1 < R; ++s) {
            auto next = held;
            for (int i = 0; i < R; ++i) {
                const int to = (i + 1) % R;
                const int c = ring_reduce_send_chunk(i, s, R);
                ASSERT_EQ(ring_reduce_recv_chunk(to, s, R), c) << "step " << s << ": " << i << " → " << to;
                next[to][c] = held[i][c];
                next[to][c].insert(to);  // the receiver adds its own values
            }
            held = next;
        }
        for (int c = 0; c < R; ++c) {
            const int owner = ring_chunk_owner(c, R);
            std::multiset<int> all;
            for (int m = 0; m < R; ++m) all.insert(m);
            EXPECT_EQ(held[owner][c], all) << "chunk " << c << " at its owner " << owner;
            EXPECT_EQ((owner + 1) % R, c);
        }
        // All-gather: position i starts with its own reduced chunk (i + 1) mod R and forwards what it got.
        std::vector<std::set<int>> have(R);
        for (int i = 0; i < R; ++i) have[i] = {(i + 1) % R};
        for (int s = 0; s + 1 < R; ++s) {
            auto next = have;
            for (int i = 0; i < R; ++i) {
                const int to = (i + 1) % R;
                const int c = ring_gather_send_chunk(i, s, R);
                ASSERT_EQ(ring_gather_recv_chunk(to, s, R), c);
                ASSERT_TRUE(have[i].count(c)) << "position " << i << " forwards chunk " << c << " it does not hold";
                next[to].insert(c);
            }
            have = next;
        }
        for (int i = 0; i < R; ++i) EXPECT_EQ(have[i].size(), static_cast<size_t>(R)) << "position " << i;
        EXPECT_EQ(ring_hops(R), 2 * (R - 1));
    }
}

TEST(RingSchedule, BytesPerMemberAreTwoRMinusOneOverRTimesPbExactlyWhenRDividesP) {
    for (int R : {2, 3, 4}) {
        for (uint64_t b : {4u, 2u}) {
            const int64_t P = 1200;  // divisible by 2, 3 and 4
            for (int i = 0; i < R; ++i)
                EXPECT_EQ(ring_sent_bytes_dense(P, b, R, i), 2 * static_cast<uint64_t>(R - 1) * P * b / R)
                    << "R " << R << " b " << b << " position " << i;
        }
    }
}

// Uneven splits: per member, the schedule's sum equals the header's closed form
// 2·Σ w − w_(i+1) − w_(i+2); over all members it is 2·(R−1)·P·b; members differ by chunk sizes only.
TEST(RingSchedule, UnevenSplitsFollowTheChunkSizesExactly) {
    for (int R : {2, 3, 4}) {
        for (int64_t P : {1001, 1202, 7, 2, 0}) {
            const auto bounds = ring_chunk_bounds(P, R);
            auto size = [&](int c) { return static_cast<uint64_t>(bounds[c + 1] - bounds[c]); };
            uint64_t total = 0;
            for (int i = 0; i < R; ++i) {
                const uint64_t sent = ring_sent_bytes_dense(P, 4, R, i);
                const uint64_t closed = R == 1 ? 0 : 4 * (2 * static_cast<uint64_t>(P) - size((i + 1) % R) - size((i + 2) % R));
                EXPECT_EQ(sent, closed) << "R " << R << " P " << P << " position " << i;
                total += sent;
            }
            EXPECT_EQ(total, 2 * static_cast<uint64_t>(R - 1) * P * 4) << "R " << R << " P " << P;
        }
    }
    // By hand: P = 10 over R = 3 → chunks 4, 3, 3; position 0 sends all but chunks 1 and 2 once:
    // 2·10 − 3 − 3 = 14 elements; positions 1 and 2: 2·10 − 3 − 4 = 13.
    EXPECT_EQ(ring_sent_bytes_dense(10, 4, 3, 0), 56u);
    EXPECT_EQ(ring_sent_bytes_dense(10, 4, 3, 1), 52u);
    EXPECT_EQ(ring_sent_bytes_dense(10, 4, 3, 2), 52u);
}

// A codec with a 4-byte scale per piece (int8: 4 + n) pays one scale per piece of a tensor, and a
// chunk that spans a segment boundary is two pieces.
TEST(RingSchedule, PiecesCutChunksAtSegmentBoundaries) {
    const auto bounds = ring_chunk_bounds(10, 3);  // [0,4) [4,7) [7,10)
    const std::vector<int64_t> segments{3, 5, 2};  // [0,3) [3,8) [8,10)
    auto pieces = ring_chunk_pieces(bounds, segments, 0);
    ASSERT_EQ(pieces.size(), 2u);
    EXPECT_EQ(pieces[0].offset, 0);
    EXPECT_EQ(pieces[0].length, 3);
    EXPECT_EQ(pieces[1].offset, 3);
    EXPECT_EQ(pieces[1].length, 1);
    pieces = ring_chunk_pieces(bounds, segments, 1);
    ASSERT_EQ(pieces.size(), 1u);
    EXPECT_EQ(pieces[0].offset, 4);
    EXPECT_EQ(pieces[0].length, 3);
    pieces = ring_chunk_pieces(bounds, segments, 2);
    ASSERT_EQ(pieces.size(), 2u);
    EXPECT_EQ(pieces[0].offset, 7);
    EXPECT_EQ(pieces[0].length, 1);
    EXPECT_EQ(pieces[1].offset, 8);
    EXPECT_EQ(pieces[1].length, 2);
    const auto int8 = ring_chunk_wire_bytes(segments, 3, [](int64_t n) { return 4 + static_cast<uint64_t>(n); });
    EXPECT_EQ(int8, (std::vector<uint64_t>{4 + 3 + 4 + 1, 4 + 3, 4 + 1 + 4 + 2}));
    // Position 0 sends every chunk twice but chunks 1 and 2 once: 2·(12 + 7 + 11) − 7 − 11.
    EXPECT_EQ(ring_sent_bytes(int8, 0), 2u * 30 - 7 - 11);
    // Empty segments and empty chunks make no pieces.
    EXPECT_TRUE(ring_chunk_pieces(ring_chunk_bounds(2, 4), {2}, 3).empty());
    EXPECT_EQ(ring_chunk_pieces(bounds, {0, 10, 0}, 1).size(), 1u);
}

}  // namespace
}  // namespace tw
