// Real exchange time and the in-process shaper: the shaper's token bucket against
// hand-computed release times, and the mesh's measured exchange time of a round — waiting for a
// late member left out, the shaped link's cost included.
#include <gtest/gtest.h>

#include <thread>
#include <zmq.hpp>

#include "remote/link_shaper.h"
#include "remote/zmq_collective.h"

namespace tw {
namespace {

using namespace std::chrono_literals;

double secs(LinkShaper::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

TEST(LinkShaper, BooksTheUplinkBackToBackAndAddsOneLatencyPerMessage) {
    // Outer link 8 Mb/s, 50 ms: 100 kB take 0.1 s on the wire.
    LinkShaper s({LinkSpec{1e9, 0}, LinkSpec{1e9, 0}, LinkSpec{8e6, 0.05}});
    const auto t0 = LinkShaper::Clock::now();
    // Two messages handed over together (one per peer): the second waits for the first's last bit.
    EXPECT_NEAR(secs(s.release_at(LinkClass::kOuterSync, 100000, t0) - t0), 0.15, 1e-9);
    EXPECT_NEAR(secs(s.release_at(LinkClass::kOuterSync, 100000, t0) - t0), 0.25, 1e-9);
    // Handed over after the uplink went idle (t0 + 1 s): it starts at once.
    EXPECT_NEAR(secs(s.release_at(LinkClass::kOuterSync, 50000, t0 + 1s) - t0), 1.0 + 0.05 + 0.05, 1e-9);
    // Link classes are separate uplinks.
    EXPECT_NEAR(secs(s.release_at(LinkClass::kInterStage, 125, t0) - t0), 1e-6, 1e-12);
}

TEST(RealExchangeTime, LeavesOutWaitingForALateMemberAndIncludesTheShapedLink) {
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps{"inproc://lt0", "inproc://lt1"};
    MeshOptions shaped;
    shaped.shape = std::array<LinkSpec, 3>{LinkSpec{1e9, 0}, LinkSpec{1e9, 0}, LinkSpec{8e6, 0.05}};
    auto a = ZmqCollective::create(ctx, eps, 0, shaped).value();
    auto b = ZmqCollective::create(ctx, eps, 1, shaped).value();
    EXPECT_EQ(a->real_exchange_s(), 0.0);
    std::thread late([&] {
        std::this_thread::sleep_for(1s);  // b reaches the round a second after a
        ASSERT_TRUE(b->all_gather(std::vector<uint8_t>(100000, 1), LinkClass::kOuterSync));
    });
    ASSERT_TRUE(a->all_gather(std::vector<uint8_t>(100000, 2), LinkClass::kOuterSync));
    late.join();
    // Each side waits for the other's shaped send: 50 ms + 100 ms at least, from b's start; a's
    // second of waiting for b is not exchange time (the bounds leave a loaded machine its margin).
    EXPECT_GE(a->real_exchange_s(), 0.15);
    EXPECT_LT(a->real_exchange_s(), 0.9);
    EXPECT_GE(b->real_exchange_s(), 0.15);
    EXPECT_LT(b->real_exchange_s(), 0.9);
    // Unshaped, the time is only the transport's; it adds up over rounds.
    auto c = ZmqCollective::create(ctx, {"inproc://lt2", "inproc://lt3"}, 0).value();
    auto d = ZmqCollective::create(ctx, {"inproc://lt2", "inproc://lt3"}, 1).value();
    std::thread t([&] {
        for (int i = 0; i < 2; ++i) ASSERT_TRUE(d->all_gather({1}, LinkClass::kOuterSync));
    });
    for (int i = 0; i < 2; ++i) ASSERT_TRUE(c->all_gather({2}, LinkClass::kOuterSync));
    t.join();
    EXPECT_GT(c->real_exchange_s(), 0.0);
    EXPECT_LT(c->real_exchange_s(), 0.5);
}

}  // namespace
}  // namespace tw
