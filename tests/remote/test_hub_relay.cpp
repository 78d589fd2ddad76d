// The hub topology's relay (remote/hub_relay.h) over real ZeroMQ sockets: each member uploads once
// and receives the others' payloads in rank order; the bytes both sides count are exact; a round
// among some members (the survivors of a loss) answers with theirs; malformed uploads (a mask
// outside the run or without the sender, a mask that differs from the round's, a round not after
// the member's newest, a length that disagrees with the frame, a foreign member count, a second
// upload of a round, a foreign token, another member's key, a download of a round not uploaded)
// are refused with a message naming the problem while the relay keeps serving; a round a member
// left is given up and redone as a larger round; the relay holds at most one round per member.
#include <gtest/gtest.h>

#include <thread>
#include <zmq.hpp>

#include "remote/hub_relay.h"

namespace tw {
namespace {

constexpr int kOuter = static_cast<int>(LinkClass::kOuterSync);
constexpr uint64_t kToken = 0x5eed'1234'abcdULL;

HubRelayOptions relay_options(int members, uint64_t limit) {
    HubRelayOptions o;
    o.members = members;
    o.max_payload_bytes = limit;
    o.token = kToken;
    return o;
}

Result<std::unique_ptr<HubClient>> client(std::shared_ptr<zmq::context_t> ctx, const std::string& ep, int rank,
                                          int members, uint64_t token = kToken, CurveKeyPair own = {},
                                          std::string relay_key = "") {
    HubClientOptions o;
    o.endpoint = ep;
    o.rank = rank;
    o.members = members;
    o.token = token;
    o.own = std::move(own);
    o.relay_key = std::move(relay_key);
    return HubClient::connect(std::move(ctx), std::move(o));
}

constexpr uint64_t kAll2 = 0b11, kAll3 = 0b111;

std::vector<uint8_t> payload_of(int rank, uint64_t round, size_t n) {
    std::vector<uint8_t> p(n);
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(rank * 31 + round * 7 + i);
    return p;
}

// Members 0 and 1 complete round 0 together and each receives the other's payload.
void honest_round(HubClient& a, HubClient& b) {
    Result<std::vector<std::vector<uint8_t>>> ra = Status::error("not run");
    std::thread t([&] { ra = a.round(0, kAll2, payload_of(0, 0, 64), 1.0, nullptr, 20000); });
    auto rb = b.round(0, kAll2, payload_of(1, 0, 64), 2.0, nullptr, 20000);
    t.join();
    ASSERT_TRUE(ra) << ra.message();
    ASSERT_TRUE(rb) << rb.message();
    EXPECT_EQ((*ra)[1], payload_of(1, 0, 64));
    EXPECT_EQ((*rb)[0], payload_of(0, 0, 64));
}

TEST(HubRelay, EveryMemberUploadsOnceAndReceivesTheOthersInRankOrderWithExactBytes) {
    auto ctx = std::make_shared<zmq::context_t>(1);
    constexpr int R = 3;
    constexpr size_t P = 1000;
    constexpr uint64_t kRounds = 4;
    auto relay = HubRelay::start(ctx, "inproc://hub-test-1", relay_options(R, 1 << 20));
    ASSERT_TRUE(relay) << relay.message();
    std::vector<std::unique_ptr<HubClient>> clients;
    for (int r = 0; r < R; ++r) {
        auto c = client(ctx, (*relay)->endpoint(), r, R);
        ASSERT_TRUE(c) << c.message();
        clients.push_back(std::move(c).value());
    }
    std::vector<std::string> errors(R);
    std::vector<std::thread> threads;
    for (int r = 0; r < R; ++r)
        threads.emplace_back([&, r] {
            for (uint64_t k = 0; k < kRounds; ++k) {
                std::vector<double> clocks;
                auto all = clients[r]->round(k, kAll3, payload_of(r, k, P), 10.0 * r + k, &clocks, 20000);
                if (!all) {
                    errors[r] = all.message();
                    return;
                }
                for (int i = 0; i < R; ++i) {
                    if ((*all)[i] != payload_of(i, k, P)) errors[r] = "wrong payload of member " + std::to_string(i);
                    if (clocks.size() != R || clocks[i] != 10.0 * i + k) errors[r] = "wrong clock";
                }
            }
        });
    for (auto& t : threads) t.join();
    for (int r = 0; r < R; ++r) {
        EXPECT_EQ(errors[r], "") << "member " << r;
        // Sent: its payload once per round; received: the R − 1 others'.
        EXPECT_EQ(clients[r]->counters().sent_bytes[kOuter], kRounds * P);
        EXPECT_EQ(clients[r]->counters().recv_bytes[kOuter], kRounds * (R - 1) * P);
        EXPECT_EQ(clients[r]->counters().sent_msgs[kOuter], kRounds);
        EXPECT_EQ(clients[r]->counters().recv_msgs[kOuter], kRounds * (R - 1));
    }
    const ByteCounters relay_bytes = (*relay)->counters();
    EXPECT_EQ(relay_bytes.recv_bytes[kOuter], kRounds * R * P);
    EXPECT_EQ(relay_bytes.sent_bytes[kOuter], kRounds * R * (R - 1) * P);
    EXPECT_EQ((*relay)->refused(), 0u);
}

TEST(HubRelay, MalformedUploadsAreRefusedWithAClearMessageAndTheRelayKeepsServing) {
    auto ctx = std::make_shared<zmq::context_t>(1);
    constexpr int R = 2;
    auto relay = HubRelay::start(ctx, "inproc://hub-test-2", relay_options(R, 4096));
    ASSERT_TRUE(relay) << relay.message();
    auto hostile = client(ctx, (*relay)->endpoint(), 0, R);
    ASSERT_TRUE(hostile);
    const std::vector<uint8_t> p(100, 7);

    // Masks naming a rank outside the run, or leaving the sender out.
    Status s = (*hostile)->raw_upload(0, R, 0, p.size(), p, 10000, 0b101);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("replica 0: round 0 names members {0, 2} (mask 0x5), which are not all ranks below 2"),
              std::string::npos)
        << s.message();
    s = (*hostile)->raw_upload(0, R, 0, p.size(), p, 10000, 0b10);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("names members {1} (mask 0x2), which leave out the sender"), std::string::npos)
        << s.message();
    s = (*hostile)->raw_upload(1, R, 0, 90, p);  // declares 90 bytes, carries 100
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("declares 90 payload bytes but carries 100"), std::string::npos) << s.message();
    s = (*hostile)->raw_upload(1, 3, 0, p.size(), p);  // a foreign member count
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("this relay serves 2"), std::string::npos) << s.message();
    s = (*hostile)->raw_upload(0, R, 0, 5000, std::vector<uint8_t>(5000));  // over the limit (declared)
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("exceeds the limit of 4096"), std::string::npos) << s.message();
    EXPECT_EQ((*relay)->refused(), 5u);
    EXPECT_EQ((*relay)->counters().recv_bytes[kOuter], 0u);  // nothing refused was kept or counted

    // The honest members still complete their rounds.
    auto a = client(ctx, (*relay)->endpoint(), 0, R);
    auto b = client(ctx, (*relay)->endpoint(), 1, R);
    ASSERT_TRUE(a && b);
    honest_round(**a, **b);

    // A second upload of a round already uploaded is refused too.
    s = (*hostile)->raw_upload(0, R, 0, p.size(), p);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("replica 0 uploaded round 0 twice"), std::string::npos) << s.message();
    EXPECT_EQ((*relay)->counters().recv_bytes[kOuter], 128u);
}

TEST(HubRelay, RefusesAForeignTokenARoundNotAfterTheNewestAndADownloadOfARoundNotUploaded) {
    auto ctx = std::make_shared<zmq::context_t>(1);
    constexpr int R = 2;
    auto relay = HubRelay::start(ctx, "inproc://hub-test-3", relay_options(R, 4096));
    ASSERT_TRUE(relay) << relay.message();
    const std::vector<uint8_t> p(100, 7);
    auto stranger = client(ctx, (*relay)->endpoint(), 0, R, kToken + 1);
    ASSERT_TRUE(stranger);
    Status s = (*stranger)->raw_upload(0, R, 0, p.size(), p);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("does not carry this run's token"), std::string::npos) << s.message();

    // A member's rounds only go up (not necessarily by one: attempts are abandoned).
    auto a = client(ctx, (*relay)->endpoint(), 0, R);
    ASSERT_TRUE(a);
    ASSERT_TRUE((*a)->raw_upload(0, R, 3, p.size(), p));
    s = (*a)->raw_upload(0, R, 2, p.size(), p);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("replica 0 uploaded round 2 after round 3 (a member's rounds only go up)"),
              std::string::npos)
        << s.message();
    // A download of a round it did not upload is refused too, and so is a second download.
    auto b = client(ctx, (*relay)->endpoint(), 1, R);
    ASSERT_TRUE(b);
    s = (*b)->raw_download(1, R, 0);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("replica 1 asked for round 0; it may download only the round it uploaded last (none yet)"),
              std::string::npos)
        << s.message();
    ASSERT_TRUE((*b)->raw_upload(1, R, 3, p.size(), p));
    ASSERT_TRUE((*b)->raw_download(1, R, 3));  // round 3 is complete: answered at once
    s = (*b)->raw_download(1, R, 3);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("replica 1 asked for round 3; it may download only the round it uploaded last (3), once"),
              std::string::npos)
        << s.message();
    EXPECT_EQ((*relay)->refused(), 4u);
    EXPECT_EQ((*relay)->counters().recv_bytes[kOuter], 200u);
}

// A round among members 0 and 2 of 3 (member 1 lost): each receives the other's payload and clock,
// nothing of member 1's, and the bytes are the two members' only. Member 1 then comes back for a
// later round of all three.
TEST(HubRelay, ARoundAmongSomeMembersAnswersWithTheirPayloadsOnly) {
    auto ctx = std::make_shared<zmq::context_t>(1);
    constexpr int R = 3;
    constexpr size_t P = 500;
    auto relay = HubRelay::start(ctx, "inproc://hub-test-subset", relay_options(R, 1 << 20));
    ASSERT_TRUE(relay) << relay.message();
    std::vector<std::unique_ptr<HubClient>> c;
    for (int r = 0; r < R; ++r) {
        auto x = client(ctx, (*relay)->endpoint(), r, R);
        ASSERT_TRUE(x) << x.message();
        c.push_back(std::move(x).value());
    }
    Result<std::vector<std::vector<uint8_t>>> r0 = Status::error("not run");
    std::vector<double> clocks0, clocks2;
    std::thread t([&] { r0 = c[0]->round(37, 0b101, payload_of(0, 37, P), 1.5, &clocks0, 20000); });
    auto r2 = c[2]->round(37, 0b101, payload_of(2, 37, P), 2.5, &clocks2, 20000);
    t.join();
    ASSERT_TRUE(r0) << r0.message();
    ASSERT_TRUE(r2) << r2.message();
    ASSERT_EQ(r0->size(), 2u);
    ASSERT_EQ(r2->size(), 2u);
    EXPECT_EQ((*r0)[0], payload_of(0, 37, P));
    EXPECT_EQ((*r0)[1], payload_of(2, 37, P));
    EXPECT_EQ((*r2)[0], payload_of(0, 37, P));
    EXPECT_EQ(clocks0, (std::vector<double>{1.5, 2.5}));
    EXPECT_EQ(clocks2, (std::vector<double>{1.5, 2.5}));
    EXPECT_EQ(c[0]->counters().recv_bytes[kOuter], P);
    EXPECT_EQ(c[0]->counters().recv_msgs[kOuter], 1u);
    EXPECT_EQ((*relay)->counters().recv_bytes[kOuter], 2 * P);
    EXPECT_EQ((*relay)->counters().sent_bytes[kOuter], 2 * P);
    EXPECT_EQ((*relay)->held_rounds(), 0u);

    // Member 1's first round is a later one of all three.
    std::vector<std::string> errors(R);
    std::vector<std::thread> threads;
    for (int r = 0; r < R; ++r)
        threads.emplace_back([&, r] {
            auto all = c[r]->round(50, kAll3, payload_of(r, 50, P), 0.0, nullptr, 20000);
            if (!all) errors[r] = all.message();
            else if (all->size() != 3 || (*all)[(r + 1) % 3] != payload_of((r + 1) % 3, 50, P)) errors[r] = "wrong payloads";
        });
    for (auto& x : threads) x.join();
    for (int r = 0; r < R; ++r) EXPECT_EQ(errors[r], "") << "member " << r;
    EXPECT_EQ((*relay)->refused(), 0u);
}

// Every member of a round names the same members: an upload that names others is refused naming
// both masks, and the relay goes on serving the round among the members its first upload named.
TEST(HubRelay, AnUploadNamingOtherMembersThanTheRoundsIsRefusedByNameAndTheRelayKeepsServing) {
    auto ctx = std::make_shared<zmq::context_t>(1);
    constexpr int R = 3;
    auto relay = HubRelay::start(ctx, "inproc://hub-test-mask", relay_options(R, 4096));
    ASSERT_TRUE(relay) << relay.message();
    auto a = client(ctx, (*relay)->endpoint(), 0, R);
    auto b = client(ctx, (*relay)->endpoint(), 1, R);
    auto odd = client(ctx, (*relay)->endpoint(), 2, R);
    ASSERT_TRUE(a && b && odd);
    ASSERT_TRUE((*a)->begin_round(4, kAll2, payload_of(0, 4, 64), 0.0, 10000));
    Status s = (*odd)->raw_upload(2, R, 4, 64, payload_of(2, 4, 64), 10000, kAll3);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("replica 2 names members {0, 1, 2} (mask 0x7) for round 4, but replica 0's upload named "
                               "{0, 1} (mask 0x3)"),
              std::string::npos)
        << s.message();
    EXPECT_EQ((*relay)->refused(), 1u);
    // Member 1 names the round's members: the round completes for both.
    auto rb = (*b)->round(4, kAll2, payload_of(1, 4, 64), 0.0, nullptr, 20000);
    ASSERT_TRUE(rb) << rb.message();
    EXPECT_EQ((*rb)[0], payload_of(0, 4, 64));
    Result<HubPoll> pa = Status::error("not polled");
    for (int i = 0; i < 200; ++i) {
        pa = (*a)->poll_round(100, nullptr);
        if (!pa || pa->state != HubPoll::kPending) break;
    }
    ASSERT_TRUE(pa) << pa.message();
    ASSERT_EQ(pa->state, HubPoll::kDone);
    EXPECT_EQ(pa->all[1], payload_of(1, 4, 64));
    EXPECT_EQ((*relay)->counters().recv_bytes[kOuter], 128u);  // the refused upload was not kept
}

// An attempt given up and redone: members 0 and 1 upload round 16 of all three, member 2 never
// does (lost). Member 0 moves on to round 32 among {0, 1}: round 16 is dropped and member 1, still
// waiting for it, is told who gave it up; then both complete round 32.
// A member the coordinator counted lost (a paused process, awake again) would open the survivors'
// next round with its old membership first, and their uploads would be refused for naming other
// members. Fenced, its requests are refused; the survivors' round completes; taken back, it uploads.
TEST(HubRelay, AFencedMemberCannotOpenTheSurvivorsRoundUntilTakenBack) {
    auto ctx = std::make_shared<zmq::context_t>(1);
    constexpr int R = 3;
    auto relay = HubRelay::start(ctx, "inproc://hub-test-fence", relay_options(R, 4096));
    ASSERT_TRUE(relay) << relay.message();
    auto a = client(ctx, (*relay)->endpoint(), 0, R);
    auto b = client(ctx, (*relay)->endpoint(), 1, R);
    auto stale = client(ctx, (*relay)->endpoint(), 2, R);
    ASSERT_TRUE(a && b && stale);
    (*relay)->fence(2, true);
    Status s = (*stale)->raw_upload(2, R, 4, 64, payload_of(2, 4, 64), 10000, kAll3);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("replica 2 was counted lost by the coordinator"), std::string::npos) << s.message();
    Result<std::vector<std::vector<uint8_t>>> ra = Status::error("not run");
    std::thread t([&] { ra = (*a)->round(4, kAll2, payload_of(0, 4, 64), 0.0, nullptr, 20000); });
    auto rb = (*b)->round(4, kAll2, payload_of(1, 4, 64), 0.0, nullptr, 20000);
    t.join();
    ASSERT_TRUE(ra) << ra.message();
    ASSERT_TRUE(rb) << rb.message();
    EXPECT_EQ((*ra)[1], payload_of(1, 4, 64));
    (*relay)->fence(2, false);
    EXPECT_TRUE((*stale)->raw_upload(2, R, 5, 64, payload_of(2, 5, 64), 10000, kAll3));
    EXPECT_EQ((*relay)->refused(), 1u);
}

TEST(HubRelay, ARoundGivenUpIsDroppedWithAReplyAndRedoneAsALargerRound) {
    auto ctx = std::make_shared<zmq::context_t>(1);
    constexpr int R = 3;
    auto relay = HubRelay::start(ctx, "inproc://hub-test-redo", relay_options(R, 4096));
    ASSERT_TRUE(relay) << relay.message();
    auto a = client(ctx, (*relay)->endpoint(), 0, R);
    auto b = client(ctx, (*relay)->endpoint(), 1, R);
    ASSERT_TRUE(a && b);
    ASSERT_TRUE((*a)->begin_round(16, kAll3, payload_of(0, 16, 64), 0.0, 10000));
    ASSERT_TRUE((*b)->begin_round(16, kAll3, payload_of(1, 16, 64), 0.0, 10000));
    EXPECT_EQ((*relay)->held_rounds(), 1u);
    // Member 0 gives up round 16 (no answer yet: member 2 is missing).
    auto pa = (*a)->poll_round(0, nullptr);
    ASSERT_TRUE(pa) << pa.message();
    EXPECT_EQ(pa->state, HubPoll::kPending);
    ASSERT_TRUE((*a)->begin_round(32, kAll2, payload_of(0, 32, 64), 0.0, 10000));
    Result<HubPoll> pb = Status::error("not polled");
    for (int i = 0; i < 200; ++i) {
        pb = (*b)->poll_round(100, nullptr);
        if (!pb || pb->state != HubPoll::kPending) break;
    }
    ASSERT_TRUE(pb) << pb.message();
    ASSERT_EQ(pb->state, HubPoll::kGivenUp);
    EXPECT_NE(pb->why.find("round 16 was given up: replica 0 moved on to round 32 without its download"),
              std::string::npos)
        << pb->why;
    auto rb = (*b)->round(32, kAll2, payload_of(1, 32, 64), 0.0, nullptr, 20000);
    ASSERT_TRUE(rb) << rb.message();
    EXPECT_EQ((*rb)[0], payload_of(0, 32, 64));
    for (int i = 0; i < 200; ++i) {
        pa = (*a)->poll_round(100, nullptr);
        if (!pa || pa->state != HubPoll::kPending) break;
    }
    ASSERT_TRUE(pa) << pa.message();
    ASSERT_EQ(pa->state, HubPoll::kDone);  // round 16's stale answer, if any, was skipped
    EXPECT_EQ(pa->all[1], payload_of(1, 32, 64));
    EXPECT_EQ((*relay)->held_rounds(), 0u);
    EXPECT_EQ((*relay)->refused(), 0u);
}

// Memory stays bounded: 40 attempts given up one after the other (member 2 never uploads) leave
// the relay holding one round, and a member that never downloads a completed round holds only
// that one round: every round held is some member's newest.
TEST(HubRelay, HoldsAtMostOneRoundPerMember) {
    auto ctx = std::make_shared<zmq::context_t>(1);
    constexpr int R = 3;
    auto relay = HubRelay::start(ctx, "inproc://hub-test-bound", relay_options(R, 4096));
    ASSERT_TRUE(relay) << relay.message();
    std::vector<std::unique_ptr<HubClient>> c;
    for (int r = 0; r < R; ++r) {
        auto x = client(ctx, (*relay)->endpoint(), r, R);
        ASSERT_TRUE(x) << x.message();
        c.push_back(std::move(x).value());
    }
    size_t most = 0;
    for (uint64_t k = 1; k <= 40; ++k) {
        for (int r = 0; r < 2; ++r) {
            ASSERT_TRUE(c[r]->begin_round(16 * k, kAll3, payload_of(r, k, 64), 0.0, 10000));
            most = std::max(most, (*relay)->held_rounds());
        }
    }
    EXPECT_LE(most, 2u);
    EXPECT_EQ((*relay)->held_rounds(), 1u);
    // Member 2 completes round 16 × 41 with the others and never downloads it; 0 and 1 do, and go
    // on to rounds of their own: the round member 2 did not fetch is the only one left over.
    ASSERT_TRUE(c[0]->begin_round(16 * 41, kAll3, payload_of(0, 41, 64), 0.0, 10000));
    ASSERT_TRUE(c[1]->begin_round(16 * 41, kAll3, payload_of(1, 41, 64), 0.0, 10000));
    ASSERT_TRUE(c[2]->raw_upload(2, R, 16 * 41, 64, payload_of(2, 41, 64)));
    for (int r = 0; r < 2; ++r) {
        Result<HubPoll> p = Status::error("not polled");
        for (int i = 0; i < 200; ++i) {
            p = c[r]->poll_round(100, nullptr);
            if (!p || p->state != HubPoll::kPending) break;
        }
        ASSERT_TRUE(p) << p.message();
        ASSERT_EQ(p->state, HubPoll::kDone);
    }
    for (uint64_t k = 42; k < 60; ++k) {
        std::thread t([&] { (void)c[0]->round(16 * k, kAll2, payload_of(0, k, 64), 0.0, nullptr, 20000); });
        auto r1 = c[1]->round(16 * k, kAll2, payload_of(1, k, 64), 0.0, nullptr, 20000);
        t.join();
        ASSERT_TRUE(r1) << r1.message();
        EXPECT_LE((*relay)->held_rounds(), 1u);
    }
    EXPECT_EQ((*relay)->held_rounds(), 1u);
    EXPECT_EQ((*relay)->refused(), 0u);
}

// With keys the relay is a CURVE server that admits only the members' keys, and a member's key
// only for its own rank: replica 1 cannot upload as replica 0, and a key outside the run gets no
// connection at all (its requests go unanswered).
TEST(HubRelay, WithKeysEachRankIsBoundToItsMembersKey) {
    if (!curve_available()) GTEST_SKIP() << "libzmq without CURVE";
    auto server = curve_keypair_new();
    auto k0 = curve_keypair_new();
    auto k1 = curve_keypair_new();
    auto outsider = curve_keypair_new();
    ASSERT_TRUE(server && k0 && k1 && outsider);
    auto ctx = std::make_shared<zmq::context_t>(1);
    constexpr int R = 2;
    HubRelayOptions o = relay_options(R, 4096);
    o.keys = *server;
    o.member_keys = {k0->public_key, k1->public_key};
    auto relay = HubRelay::start(ctx, "tcp://127.0.0.1:*", o);
    ASSERT_TRUE(relay) << relay.message();
    const std::string ep = (*relay)->endpoint();
    const std::vector<uint8_t> p(100, 7);

    auto impostor = client(ctx, ep, 1, R, kToken, *k1, server->public_key);
    ASSERT_TRUE(impostor) << impostor.message();
    Status s = (*impostor)->raw_upload(0, R, 0, p.size(), p);  // replica 1's key, claiming rank 0
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("a request for replica 0 came with key " + key_tag(k1->public_key)), std::string::npos)
        << s.message();

    auto stranger = client(ctx, ep, 0, R, kToken, *outsider, server->public_key);
    ASSERT_TRUE(stranger);
    s = (*stranger)->raw_upload(0, R, 0, p.size(), p, 1500);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("no answer from the relay"), std::string::npos) << s.message();

    // Without the relay's key a keyed client cannot be built.
    auto blind = client(ctx, ep, 0, R, kToken, *k0, "");
    ASSERT_FALSE(blind);
    EXPECT_NE(blind.message().find("names no relay key"), std::string::npos) << blind.message();

    auto a = client(ctx, ep, 0, R, kToken, *k0, server->public_key);
    auto b = client(ctx, ep, 1, R, kToken, *k1, server->public_key);
    ASSERT_TRUE(a && b);
    honest_round(**a, **b);
    EXPECT_EQ((*relay)->refused(), 1u);
}

}  // namespace
}  // namespace tw
