// The hub topology's relay (remote/hub_relay.h) over real ZeroMQ sockets: each member uploads once
// and receives the others' payloads in rank order; the bytes both sides count are exact; malformed
// uploads (wrong round, a length that disagrees with the frame, a foreign member count, a second
// upload of a round, a foreign token, another member's key, an upload ahead of its download) are
// refused with a message naming the problem while the relay keeps serving.
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

std::vector<uint8_t> payload_of(int rank, uint64_t round, size_t n) {
    std::vector<uint8_t> p(n);
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(rank * 31 + round * 7 + i);
    return p;
}

// Members 0 and 1 complete round 0 together and each receives the other's payload.
void honest_round(HubClient& a, HubClient& b) {
    Result<std::vector<std::vector<uint8_t>>> ra = Status::error("not run");
    std::thread t([&] { ra = a.round(0, payload_of(0, 0, 64), 1.0, nullptr, 20000); });
    auto rb = b.round(0, payload_of(1, 0, 64), 2.0, nullptr, 20000);
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
                auto all = clients[r]->round(k, payload_of(r, k, P), 10.0 * r + k, &clocks, 20000);
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

    Status s = (*hostile)->raw_upload(0, R, 5, p.size(), p);  // a round that is not the member's next
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("replica 0 uploaded round 5; its next round is 0"), std::string::npos) << s.message();
    s = (*hostile)->raw_upload(1, R, 0, 90, p);  // declares 90 bytes, carries 100
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("declares 90 payload bytes but carries 100"), std::string::npos) << s.message();
    s = (*hostile)->raw_upload(1, 3, 0, p.size(), p);  // a foreign member count
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("this relay serves 2"), std::string::npos) << s.message();
    s = (*hostile)->raw_upload(0, R, 0, 5000, std::vector<uint8_t>(5000));  // over the limit (declared)
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("exceeds the limit of 4096"), std::string::npos) << s.message();
    EXPECT_EQ((*relay)->refused(), 4u);
    EXPECT_EQ((*relay)->counters().recv_bytes[kOuter], 0u);  // nothing refused was kept or counted

    // The honest members still complete their rounds.
    auto a = client(ctx, (*relay)->endpoint(), 0, R);
    auto b = client(ctx, (*relay)->endpoint(), 1, R);
    ASSERT_TRUE(a && b);
    honest_round(**a, **b);

    // A second upload of a round already uploaded is refused too.
    s = (*hostile)->raw_upload(0, R, 0, p.size(), p);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("replica 0 uploaded round 0; its next round is 1"), std::string::npos) << s.message();
    EXPECT_EQ((*relay)->counters().recv_bytes[kOuter], 128u);
}

TEST(HubRelay, RefusesAForeignTokenAndAnUploadAheadOfItsDownload) {
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

    // Replica 0 uploads round 0, then tries round 1 without downloading round 0: refused, so one
    // member cannot make the relay hold more than its current round.
    auto a = client(ctx, (*relay)->endpoint(), 0, R);
    ASSERT_TRUE(a);
    ASSERT_TRUE((*a)->raw_upload(0, R, 0, p.size(), p));
    s = (*a)->raw_upload(0, R, 1, p.size(), p);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("replica 0 uploaded round 1 before downloading round 0"), std::string::npos)
        << s.message();
    // A download of a round it did not upload is refused too.
    auto b = client(ctx, (*relay)->endpoint(), 1, R);
    ASSERT_TRUE(b);
    s = (*b)->raw_download(1, R, 0);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("replica 1 asked for round 0; it may download only the round it uploaded last (none yet)"),
              std::string::npos)
        << s.message();
    EXPECT_EQ((*relay)->refused(), 3u);
    EXPECT_EQ((*relay)->counters().recv_bytes[kOuter], 100u);
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
