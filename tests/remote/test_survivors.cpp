// Rounds that survive lost members on the real data plane (ZmqCollective over inproc://, the
// MemberView of core/member_view.h): a silent member is declared lost and the round is redone
// among the others; a member that gives an attempt up frees whoever waits for it at once and
// passes on whom it found lost; messages of an abandoned attempt are discarded; over the hub relay
// a lost member ends the wait for the relay's answer the same way, and the redo runs among the
// survivors through the relay.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <zmq.hpp>

#include "core/member_view.h"
#include "remote/hub_relay.h"
#include "remote/wire_frame.h"
#include "remote/zmq_collective.h"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;

MeshOptions live(double silence_s) {
    MeshOptions o;
    o.heartbeat_s = 0.05;
    o.silence_timeout_s = silence_s;
    o.timeout_ms = 20000;
    return o;
}

TEST(Survivors, ASilentMemberIsLostAndTheRoundIsRedoneAmongTheOthers) {
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps{"inproc://sv0", "inproc://sv1", "inproc://sv2"};
    auto a = ZmqCollective::create(ctx, eps, 0, live(0.5)).value();
    auto b = ZmqCollective::create(ctx, eps, 1, live(0.5)).value();
    MeshOptions dead;  // member 2: bound, but it never beats nor sends (a frozen process)
    dead.timeout_ms = 20000;
    auto c = ZmqCollective::create(ctx, eps, 2, dead).value();
    auto survive = [](ZmqCollective& m, uint8_t mine, std::vector<std::vector<uint8_t>>& out, std::vector<int>& lost) {
        m.begin_epoch(1);
        MemberView all(m, {0, 1, 2});
        auto first = all.all_gather({mine}, LinkClass::kOuterSync, 1.0);
        ASSERT_FALSE(first);
        EXPECT_NE(first.message().find("mesh member 2"), std::string::npos) << first.message();
        lost = m.lost_members();
        m.abandon({m.rank() == 0 ? 1 : 0});
        m.begin_epoch(2);
        MemberView rest(m, {0, 1});
        EXPECT_EQ(rest.rank(), m.rank());
        EXPECT_EQ(rest.size(), 2);
        auto second = rest.all_gather({mine, mine}, LinkClass::kOuterSync, 2.0);
        ASSERT_TRUE(second) << second.message();
        out = *second;
    };
    std::vector<std::vector<uint8_t>> got_a, got_b;
    std::vector<int> lost_a, lost_b;
    std::thread tb([&] { survive(*b, 2, got_b, lost_b); });
    survive(*a, 1, got_a, lost_a);
    tb.join();
    EXPECT_EQ(lost_a, (std::vector<int>{2}));
    EXPECT_EQ(lost_b, (std::vector<int>{2}));
    const std::vector<std::vector<uint8_t>> want{{1, 1}, {2, 2}};
    EXPECT_EQ(got_a, want);
    EXPECT_EQ(got_b, want);
    // The failed attempt's single bytes were sent; the redo's two bytes each: what the counters hold.
    EXPECT_EQ(a->counters().sent_bytes[static_cast<int>(LinkClass::kOuterSync)], 2u * 1 + 1u * 2);
    (void)c;
}

TEST(Survivors, OverTheHubASilentMemberEndsTheRelayWaitAndTheRoundIsRedoneAmongTheOthers) {
    auto ctx = std::make_shared<zmq::context_t>();
    HubRelayOptions ro;
    ro.members = 3;
    auto relay = HubRelay::start(ctx, "inproc://sv-hub", ro);
    ASSERT_TRUE(relay) << relay.message();
    std::vector<std::string> eps{"inproc://svh0", "inproc://svh1", "inproc://svh2"};
    auto with_hub = [&](MeshOptions o) {
        o.hub_endpoint = (*relay)->endpoint();
        return o;
    };
    auto a = ZmqCollective::create(ctx, eps, 0, with_hub(live(0.5))).value();
    auto b = ZmqCollective::create(ctx, eps, 1, with_hub(live(0.5))).value();
    MeshOptions dead;  // member 2: bound, but it never beats nor uploads (a frozen process)
    dead.timeout_ms = 20000;
    auto c = ZmqCollective::create(ctx, eps, 2, with_hub(dead)).value();
    auto survive = [](ZmqCollective& m, uint8_t mine, std::vector<std::vector<uint8_t>>& out, std::vector<int>& lost) {
        m.begin_epoch(1);
        MemberView all(m, {0, 1, 2});
        auto first = all.hub_round({mine}, 1.0, nullptr);
        ASSERT_FALSE(first);
        // Found silent here, or told by the other survivor, which found it first (its abandon
        // frame names member 2 as lost: lost_members() below).
        EXPECT_TRUE(first.message().find("mesh member 2") != std::string::npos ||
                    first.message().find("gave up this round attempt") != std::string::npos)
            << first.message();
        lost = m.lost_members();
        m.abandon({m.rank() == 0 ? 1 : 0});
        m.begin_epoch(2);
        MemberView rest(m, {0, 1});
        std::vector<double> clocks;
        auto second = rest.hub_round({mine, mine}, 2.0 + m.rank(), &clocks);
        ASSERT_TRUE(second) << second.message();
        EXPECT_EQ(clocks, (std::vector<double>{2.0, 3.0}));
        out = *second;
    };
    std::vector<std::vector<uint8_t>> got_a, got_b;
    std::vector<int> lost_a, lost_b;
    std::thread tb([&] { survive(*b, 2, got_b, lost_b); });
    survive(*a, 1, got_a, lost_a);
    tb.join();
    EXPECT_EQ(lost_a, (std::vector<int>{2}));
    EXPECT_EQ(lost_b, (std::vector<int>{2}));
    const std::vector<std::vector<uint8_t>> want{{1, 1}, {2, 2}};
    EXPECT_EQ(got_a, want);
    EXPECT_EQ(got_b, want);
    // Sent: the given-up upload (1 byte) and the redo's (2 bytes); received: the other's 2 bytes.
    constexpr int kOuter = static_cast<int>(LinkClass::kOuterSync);
    EXPECT_EQ(a->counters().sent_bytes[kOuter], 1u + 2u);
    EXPECT_EQ(a->counters().recv_bytes[kOuter], 2u);
    EXPECT_EQ((*relay)->held_rounds(), 0u);  // the given-up round was dropped, the redo fully served
    EXPECT_EQ((*relay)->refused(), 0u);
    (void)c;
}

// A process restarted after a real loss says it is up (kReadyLive): a peer counts it lost at once
// — its predecessor's part is gone — and hears it until it forgives it. The members agree on whom
// they admit by gathering one word each: framing only, in group order, no payload bytes.
TEST(Survivors, ARestartedMembersWordCountsItLostUntilForgivenAndWordsAreGathered) {
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps{"inproc://rl0", "inproc://rl1", "inproc://rl2"};
    auto a = ZmqCollective::create(ctx, eps, 0, live(5)).value();
    auto b = ZmqCollective::create(ctx, eps, 1, live(5)).value();
    auto c = ZmqCollective::create(ctx, eps, 2, live(5)).value();
    EXPECT_FALSE(a->heard_live(2));
    EXPECT_TRUE(a->lost_members().empty());
    c->tell_ready(0, Membership::kReadyLive);
    bool heard = false;
    for (auto until = Clock::now() + std::chrono::seconds(5); !heard && Clock::now() < until;) heard = a->heard_live(2);
    ASSERT_TRUE(heard);
    EXPECT_EQ(a->lost_members(), (std::vector<int>{2}));
    EXPECT_FALSE(a->heard_live(1));
    EXPECT_FALSE(b->heard_live(2));  // told nothing
    // A scheduled joiner's word (a step) is not a restarted process's.
    c->tell_ready(1, 30);
    EXPECT_TRUE(b->wait_ready(2, 30));
    EXPECT_FALSE(b->heard_live(2));
    EXPECT_TRUE(b->lost_members().empty());

    a->begin_epoch(1);
    b->begin_epoch(1);
    Result<std::vector<uint64_t>> got_b = Status::error("not run");
    std::thread tb([&] { got_b = MemberView(*b, {0, 1}).gather_words({0, 1}, 0); });
    auto got_a = MemberView(*a, {0, 1}).gather_words({0, 1}, uint64_t{1} << 2);
    tb.join();
    ASSERT_TRUE(got_a) << got_a.message();
    ASSERT_TRUE(got_b) << got_b.message();
    EXPECT_EQ(*got_a, (std::vector<uint64_t>{4, 0}));
    EXPECT_EQ(*got_b, (std::vector<uint64_t>{4, 0}));
    for (int k = 0; k < 3; ++k) EXPECT_EQ(a->counters().sent_bytes[k] + a->counters().recv_bytes[k], 0u);

    a->forgive(2);
    EXPECT_FALSE(a->heard_live(2));
    EXPECT_TRUE(a->lost_members().empty());
}

// A restarted process awaiting admission keeps a round far beyond the window (its peers went on
// while it started); once it begins an epoch the window holds again.
TEST(Survivors, AProcessAwaitingAdmissionKeepsRoundsFarAheadUntilItBeginsAnEpoch) {
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps{"inproc://aa0", "inproc://aa1"};
    auto a = ZmqCollective::create(ctx, eps, 0, live(5)).value();
    auto b = ZmqCollective::create(ctx, eps, 1, live(5)).value();
    const uint64_t far = 500;  // epoch 500: round 8000, far past a window of 1024 rounds from 0
    b->await_admission();
    Result<std::vector<std::vector<uint8_t>>> got_b = Status::error("not run");
    std::thread ta([&] {
        a->begin_epoch(far);
        (void)a->all_gather({7}, LinkClass::kOuterSync, 1.0);
    });
    // The peer's frame reaches b while b is still at round 0; b then begins that epoch and gathers.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    (void)b->heard_live(0);  // reads what has arrived
    EXPECT_EQ(b->dropped_frames(), 0u);
    b->begin_epoch(far);
    got_b = b->all_gather({9}, LinkClass::kOuterSync, 1.0);
    ta.join();
    ASSERT_TRUE(got_b) << got_b.message();
    EXPECT_EQ(*got_b, (std::vector<std::vector<uint8_t>>{{7}, {9}}));
    // Not awaiting admission any more: a frame as far ahead of b's round is dropped.
    std::thread tc([&] {
        a->begin_epoch(far + 200);
        (void)a->all_gather({1}, LinkClass::kOuterSync, 1.0);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    (void)b->heard_live(0);
    EXPECT_EQ(b->dropped_frames(), 1u);
    b->begin_epoch(far + 200);  // frees the peer: b gives that attempt up
    b->abandon({0});
    tc.join();
}

// A restarted pipeline node is told out (and its own replica's nodes named lost) while it is out of
// the rounds, and such frames may still reach it after it is admitted. Its admission clears the
// word, and an abandon of an earlier epoch no longer counts; one of its own epoch still does.
TEST(Survivors, AnAdmittedProcessForgetsItWasToldOutBeforeItsAdmission) {
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps{"inproc://ad0", "inproc://ad1", "inproc://ad2"};
    auto a = ZmqCollective::create(ctx, eps, 0, live(5)).value();
    auto b = ZmqCollective::create(ctx, eps, 1, live(5)).value();
    auto c = ZmqCollective::create(ctx, eps, 2, live(5)).value();  // b's pipeline sibling, say
    const auto settle = [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
        (void)b->heard_live(0);  // reads what has arrived
    };
    b->begin_epoch(3);
    b->await_admission();
    a->begin_epoch(4);
    a->declare_lost(2);
    a->tell_out({1});  // the survivors' word while b is out: b, and its sibling 2, lost
    settle();
    EXPECT_TRUE(b->counted_out());
    EXPECT_EQ(b->lost_members(), (std::vector<int>{2}));
    b->begin_epoch(6);  // admitted: the state of the round came, and this is the epoch after it
    EXPECT_FALSE(b->counted_out());
    b->forgive(2);
    a->tell_out({1});  // a late copy of the word, from before b's admission (a is still in epoch 4)
    settle();
    EXPECT_FALSE(b->counted_out()) << "a word from before its admission must not count it out";
    EXPECT_TRUE(b->lost_members().empty());
    a->begin_epoch(6);
    a->tell_out({1});  // told out in an epoch after its admission: that counts
    settle();
    EXPECT_TRUE(b->counted_out());
    (void)c;
}

TEST(Survivors, AnAbandonedAttemptFreesItsPeersAtOnceAndNamesTheLost) {
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps{"inproc://ab0", "inproc://ab1", "inproc://ab2"};
    auto a = ZmqCollective::create(ctx, eps, 0, live(30)).value();  // would wait 30 s for a silence
    auto b = ZmqCollective::create(ctx, eps, 1, live(30)).value();
    auto c = ZmqCollective::create(ctx, eps, 2, live(30)).value();  // alive (beats) but never sends
    a->begin_epoch(5);
    b->begin_epoch(5);
    std::thread tb([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        b->declare_lost(2);  // as if b had found 2 silent
        b->abandon({0, 2});
    });
    const auto t0 = Clock::now();
    MemberView all(*a, {0, 1, 2});
    auto r = all.all_gather({9}, LinkClass::kOuterSync, 0);
    const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
    tb.join();
    ASSERT_FALSE(r);
    EXPECT_LT(waited, 5.0) << "the peer's abandon must end the wait, not the 30 s silence";
    EXPECT_EQ(a->lost_members(), (std::vector<int>{2}));
    a->forgive(2);
    EXPECT_TRUE(a->lost_members().empty());
    (void)c;
}

// A member counted lost may have been paused past the timeout and judged its peers by its own
// stale clock: whom it names lost is not taken. Nor is whom a member names lost in an attempt this
// member has already given up; in the current attempt it is.
TEST(Survivors, WhomAFencedOrStaleMemberNamesLostIsNotTaken) {
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps{"inproc://fe0", "inproc://fe1", "inproc://fe2"};
    auto a = ZmqCollective::create(ctx, eps, 0, live(30)).value();
    auto b = ZmqCollective::create(ctx, eps, 1, live(30)).value();
    auto c = ZmqCollective::create(ctx, eps, 2, live(30)).value();
    const auto settle = [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
        (void)a->heard_live(1);  // reads what has arrived
    };
    a->begin_epoch(5);
    b->begin_epoch(5);
    c->begin_epoch(5);
    a->declare_lost(2);  // a counted c out (c was paused, say)
    c->declare_lost(1);  // c, awake again, blames b
    c->abandon({0, 1});
    settle();
    EXPECT_EQ(a->lost_members(), (std::vector<int>{2})) << "a fenced member named b lost";
    a->forgive(2);
    // b is behind, in attempt 4, and names c lost there: a is in attempt 5 already.
    b->begin_epoch(4);
    b->declare_lost(2);
    b->abandon({0});
    settle();
    EXPECT_TRUE(a->lost_members().empty()) << "a word of an attempt given up decided who is lost";
    b->begin_epoch(5);
    b->abandon({0});
    settle();
    EXPECT_EQ(a->lost_members(), (std::vector<int>{2}));
}

// Member 2 sends its agreement hash to member 0 and then stops (paused or killed between two
// sends): member 0 hears every hash and takes the round; member 1 misses one, finds member 2
// lost, and — holding the same state — takes the round from member 0's word instead of redoing it
// alone (which would leave the two waiting in different rounds for ever). When nobody heard the
// lost member's hash, both give the attempt up.
TEST(Survivors, AMemberLostBetweenItsHashesLeavesOneRoundTakenByAll) {
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps{"inproc://ag0", "inproc://ag1", "inproc://ag2"};
    auto a = ZmqCollective::create(ctx, eps, 0, live(0.5)).value();
    auto b = ZmqCollective::create(ctx, eps, 1, live(0.5)).value();
    MeshOptions dead;  // member 2: bound, silent (its one frame is sent by hand below)
    dead.timeout_ms = 20000;
    auto c = ZmqCollective::create(ctx, eps, 2, dead).value();
    const uint64_t hash = 0x5eed5eed5eedull;
    const auto hash_of_2 = [&](const std::string& to, uint64_t round) {
        zmq::socket_t push(*ctx, zmq::socket_type::push);
        push.connect(to);
        wire::FrameHeader fh;
        fh.kind = wire::FrameKind::kAgree;
        fh.counted = false;
        fh.rank = 2;
        fh.round = round;
        fh.aux = hash;
        uint8_t h[wire::kFrameHeaderBytes];
        wire::encode_frame_header(fh, h);
        push.send(zmq::const_buffer(h, sizeof h), zmq::send_flags::sndmore);
        push.send(zmq::const_buffer(h, 0), zmq::send_flags::none);
    };
    // Epoch 1's first round is its agreement round; only member 0 gets member 2's hash.
    hash_of_2(eps[0], ZmqCollective::kEpochRounds);
    Status got_a, got_b;
    std::thread ta([&] {
        a->begin_epoch(1);
        got_a = a->agree({0, 1, 2}, hash);
    });
    b->begin_epoch(1);
    const auto t0 = Clock::now();
    got_b = b->agree({0, 1, 2}, hash);
    const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
    ta.join();
    EXPECT_TRUE(got_a) << got_a.message();
    EXPECT_TRUE(got_b) << got_b.message();
    EXPECT_EQ(b->lost_members(), (std::vector<int>{2}));
    EXPECT_LT(waited, 5.0);

    // Nobody heard member 2 in epoch 2: both find it lost, neither takes the round.
    std::thread ta2([&] {
        a->begin_epoch(2);
        got_a = a->agree({0, 1, 2}, hash);
    });
    b->begin_epoch(2);
    got_b = b->agree({0, 1, 2}, hash);
    ta2.join();
    EXPECT_FALSE(got_a);
    EXPECT_FALSE(got_b);
    EXPECT_NE(got_b.message().find("mesh member 2"), std::string::npos) << got_b.message();
    EXPECT_TRUE(b->gave_up(0)) << "the other survivor gave the attempt up";
    (void)c;
}

TEST(Survivors, MessagesOfAnAbandonedAttemptAreDiscarded) {
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps{"inproc://st0", "inproc://st1"};
    auto a = ZmqCollective::create(ctx, eps, 0).value();
    auto b = ZmqCollective::create(ctx, eps, 1).value();
    b->begin_epoch(1);
    ASSERT_TRUE(b->send(0, {1, 1, 1}, LinkClass::kOuterSync, 0));  // a ring chunk of attempt 1
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    a->begin_epoch(2);
    b->begin_epoch(2);
    ASSERT_TRUE(b->send(0, {2}, LinkClass::kOuterSync, 0));
    auto m = a->recv(1);
    ASSERT_TRUE(m) << m.message();
    EXPECT_EQ(*m, (std::vector<uint8_t>{2}));
}

}  // namespace
}  // namespace tw
