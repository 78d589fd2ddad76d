// The membership rules of one mesh member (remote/mesh_membership.h), on their own: no sockets,
// times given by the test, so every rule is checked at its boundary.
#include <gtest/gtest.h>

#include "core/membership.h"
#include "remote/mesh_membership.h"

namespace tw {
namespace {

using Clock = MeshMembership::Clock;
using Out = MeshMembership::Out;
Clock::duration sec(double s) { return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); }

TEST(MeshMembership, AMemberSilentPastTheTimeoutWithinTheWaitIsLostAndStaysLost) {
    const auto t0 = Clock::now();
    MeshMembership m(3, 0, 2.0, t0);
    m.heard(1, t0);
    double silent = 0;
    EXPECT_EQ(m.check(1, t0, t0 + sec(1.9), &silent), Out::kIn);
    EXPECT_NEAR(silent, 1.9, 1e-6);
    EXPECT_EQ(m.check(1, t0, t0 + sec(2.1), &silent), Out::kSilent);
    EXPECT_TRUE(m.is_lost(1));
    EXPECT_EQ(m.check(1, t0 + sec(3), t0 + sec(3)), Out::kLost);  // sticky: even for a new wait
    EXPECT_EQ(m.lost_members(), (std::vector<int>{1}));
    EXPECT_EQ(m.lost_mask(), uint64_t{2});
}

TEST(MeshMembership, SilenceBeforeAWaitBeganDoesNotCount) {
    const auto t0 = Clock::now();
    MeshMembership m(2, 0, 2.0, t0);
    // Last heard 10 s ago, but the wait began 1 s ago: a peer quiet before it was awaited had
    // nothing to say.
    EXPECT_EQ(m.check(1, t0 + sec(9), t0 + sec(10)), Out::kIn);
    EXPECT_FALSE(m.is_lost(1));
    EXPECT_EQ(m.check(1, t0 + sec(9), t0 + sec(11.5)), Out::kSilent);
}

TEST(MeshMembership, ItsOwnPauseIsNotThePeersSilence) {
    const auto t0 = Clock::now();
    MeshMembership m(3, 2, 2.0, t0);
    m.heard(0, t0);
    m.heard(1, t0 + sec(0.5));
    // This process stopped for 20 s from t0 + 1 s: on waking, the peers were last heard 1.0 and
    // 0.5 s before the pause, which is what counts.
    const auto woke = t0 + sec(21);
    m.own_pause(sec(20), woke);
    EXPECT_EQ(m.check(0, t0, woke), Out::kIn);
    EXPECT_EQ(m.check(1, t0, woke), Out::kIn);
    EXPECT_EQ(m.check(0, t0, woke + sec(1.1)), Out::kSilent);  // 1.0 + 1.1 s of its own running time
    EXPECT_EQ(m.check(1, t0, woke + sec(1.1)), Out::kIn);      // 0.5 + 1.1 s
}

TEST(MeshMembership, WhomAFencedOrStaleMemberNamesLostIsNotTaken) {
    const auto t0 = Clock::now();
    MeshMembership m(4, 0, 2.0, t0);
    m.begin_epoch(32);
    m.declare_lost(3);  // member 3 was found lost here (it may have been paused)
    m.on_abandon(3, 32, uint64_t{1} << 1 | uint64_t{1} << 2);  // and says 1 and 2 are lost
    EXPECT_EQ(m.lost_members(), (std::vector<int>{3}));
    EXPECT_EQ(m.fenced(), 1u);
    m.on_abandon(1, 16, uint64_t{1} << 2);  // an attempt already given up here
    EXPECT_EQ(m.lost_members(), (std::vector<int>{3}));
    EXPECT_EQ(m.fenced(), 2u);
    EXPECT_FALSE(m.gave_up(1));  // it gave up attempt 16, not this one
    m.on_abandon(1, 32, uint64_t{1} << 2);  // a member counted in, about this attempt: taken
    EXPECT_EQ(m.lost_members(), (std::vector<int>{2, 3}));
    EXPECT_TRUE(m.gave_up(1));
    EXPECT_EQ(m.fenced(), 2u);
    EXPECT_FALSE(m.counted_out());
}

TEST(MeshMembership, BeingNamedOutCountsEvenFromAFencedMember) {
    const auto t0 = Clock::now();
    MeshMembership m(3, 1, 2.0, t0);
    m.begin_epoch(16);
    m.declare_lost(2);
    m.on_abandon(2, 16, uint64_t{1} << 1);  // only this member named: nothing fenced, it leaves
    EXPECT_TRUE(m.counted_out());
    EXPECT_EQ(m.fenced(), 0u);
    EXPECT_EQ(m.lost_members(), (std::vector<int>{2}));
}

TEST(MeshMembership, AnAbandonWordArrivingBeforeTheAttemptBeginsCountsForIt) {
    const auto t0 = Clock::now();
    MeshMembership m(3, 0, 2.0, t0);
    m.begin_epoch(16);
    m.on_abandon(2, 32, 0);  // its word for attempt 32, which this member has not begun
    EXPECT_FALSE(m.gave_up(2));
    m.begin_epoch(32);
    EXPECT_TRUE(m.gave_up(2));
    EXPECT_EQ(m.check(2, t0, t0), Out::kGaveUp);
    m.begin_epoch(48);
    EXPECT_FALSE(m.gave_up(2));
}

TEST(MeshMembership, AMemberStoppedOnRequestIsAwaitedForATimeoutThenCountedGone) {
    const auto t0 = Clock::now();
    MeshMembership m(3, 0, 2.0, t0);
    m.on_bye(1, MeshMembership::kByeStopped, t0);
    EXPECT_TRUE(m.said_bye(1));
    EXPECT_EQ(m.check(1, t0, t0 + sec(1.5)), Out::kStopping);
    EXPECT_FALSE(m.is_lost(1));
    EXPECT_EQ(m.check(1, t0, t0 + sec(2.5)), Out::kLeft);
    EXPECT_TRUE(m.is_lost(1));
    m.on_bye(2, MeshMembership::kByeEnded, t0);  // its run ended: gone at once
    EXPECT_EQ(m.check(2, t0, t0), Out::kLeft);
    EXPECT_TRUE(m.is_lost(2));
}

TEST(MeshMembership, AMemberWhoseProcessRestartsIsExcusedItsSilenceForTheAllowanceOnly) {
    const auto t0 = Clock::now();
    const double allowance = MeshMembership::kRestartAllowanceS;
    ASSERT_GT(allowance, 20.0);  // longer than a coordinator waits for a fresh node's answer
    MeshMembership m(3, 0, 2.0, t0);
    m.heard(1, t0);
    m.heard(2, t0);
    m.on_bye(1, MeshMembership::kByeRestarting, t0);
    EXPECT_FALSE(m.said_bye(1));  // not a leave
    // Silent far past the heartbeat timeout while its fresh process starts: still in.
    EXPECT_EQ(m.check(1, t0, t0 + sec(allowance - 0.5)), Out::kIn);
    EXPECT_FALSE(m.is_lost(1));
    // A member that said nothing of a restart is judged by the timeout as before.
    EXPECT_EQ(m.check(2, t0, t0 + sec(2.5)), Out::kSilent);
    // Past the allowance the silence counts again.
    EXPECT_EQ(m.check(1, t0, t0 + sec(allowance + 0.5)), Out::kSilent);
    EXPECT_TRUE(m.is_lost(1));
}

TEST(MeshMembership, AdmissionIgnoresWordsThatToldItsPredecessorOut) {
    const auto t0 = Clock::now();
    MeshMembership m(3, 2, 2.0, t0);
    m.await_admission();
    EXPECT_TRUE(m.awaiting_admission());
    m.on_abandon(0, 16, uint64_t{1} << 2);  // told out while it was away
    EXPECT_TRUE(m.counted_out());
    m.begin_epoch(48);                      // admitted here
    EXPECT_FALSE(m.awaiting_admission());
    EXPECT_FALSE(m.counted_out());
    m.on_abandon(0, 32, uint64_t{1} << 2 | uint64_t{1} << 1);  // a late copy of an earlier attempt's word
    EXPECT_FALSE(m.counted_out());
    EXPECT_TRUE(m.lost_members().empty());
    EXPECT_EQ(m.fenced(), 0u);  // not fenced: not even read
    m.on_abandon(0, 48, uint64_t{1} << 2);  // a word of an attempt after its admission counts
    EXPECT_TRUE(m.counted_out());
}

TEST(MeshMembership, ARestartedProcessIsLostAtOnceUntilForgiven) {
    const auto t0 = Clock::now();
    MeshMembership m(3, 0, 2.0, t0);
    m.on_ready(1, 40);  // a joiner waiting for the state after step 40: not a loss
    EXPECT_EQ(m.ready_step(1), std::optional<uint64_t>(40));
    EXPECT_FALSE(m.is_lost(1));
    m.begin_epoch(16);
    m.on_abandon(2, 16, 0);
    m.on_bye(2, MeshMembership::kByeEnded, t0);
    m.on_ready(2, Membership::kReadyLive);  // its predecessor is gone, whatever it was doing
    EXPECT_TRUE(m.is_lost(2));
    m.forgive(2, t0 + sec(5));  // back as a new incarnation: nothing of the old one sticks
    EXPECT_FALSE(m.is_lost(2));
    EXPECT_FALSE(m.gave_up(2));
    EXPECT_FALSE(m.said_bye(2));
    EXPECT_EQ(m.ready_step(2), std::nullopt);
    EXPECT_EQ(m.check(2, t0, t0 + sec(6.9)), Out::kIn);  // heard "now" at the forgiving
}

TEST(MeshMembership, DeclaringLostIgnoresItselfAndRanksOutOfRange) {
    const auto t0 = Clock::now();
    MeshMembership m(3, 1, 0, t0);
    m.declare_lost(1);
    m.declare_lost(-1);
    m.declare_lost(3);
    EXPECT_TRUE(m.lost_members().empty());
    // Without a silence timeout, silence never loses anyone.
    EXPECT_EQ(m.check(0, t0, t0 + sec(3600)), Out::kIn);
}

}  // namespace
}  // namespace tw
