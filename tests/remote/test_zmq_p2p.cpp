// Point-to-point messages on the data-plane mesh: per-sender order, interleaving with all-gather
// rounds, sender clocks, exact counters, and uncounted (measurement) traffic.
#include <gtest/gtest.h>

#include <thread>
#include <zmq.hpp>

#include "remote/zmq_collective.h"

namespace tw {
namespace {

TEST(ZmqP2P, MessagesArriveInOrderBesideRoundsAndAreCountedExactly) {
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps{"inproc://p2p0", "inproc://p2p1"};
    auto a = ZmqCollective::create(ctx, eps, 0).value();
    auto b = ZmqCollective::create(ctx, eps, 1).value();
    std::thread t([&] {
        // b sends three messages, then joins a round, then one uncounted message.
        for (uint8_t i = 0; i < 3; ++i)
            ASSERT_TRUE(b->send(0, std::vector<uint8_t>(10 + i, i), LinkClass::kInterStage, 1.5 + i));
        auto r = b->all_gather({7, 7}, LinkClass::kOuterSync, 9.0);
        ASSERT_TRUE(r);
        ASSERT_TRUE(b->send(0, std::vector<uint8_t>(100, 1), LinkClass::kInterStage, 0, /*count=*/false));
        auto back = b->recv(0);
        ASSERT_TRUE(back);
        EXPECT_EQ(back->size(), 5u);
    });
    // The round completes although point-to-point messages were queued ahead of it.
    auto r = a->all_gather({1}, LinkClass::kOuterSync, 2.0);
    ASSERT_TRUE(r);
    EXPECT_EQ((*r)[1], (std::vector<uint8_t>{7, 7}));
    for (uint8_t i = 0; i < 3; ++i) {
        double clock = -1;
        auto m = a->recv(1, &clock);
        ASSERT_TRUE(m);
        EXPECT_EQ(m->size(), 10u + i);
        EXPECT_EQ((*m)[0], i);
        EXPECT_DOUBLE_EQ(clock, 1.5 + i);
    }
    ASSERT_TRUE(a->recv(1));
    ASSERT_TRUE(a->send(1, std::vector<uint8_t>(5, 0), LinkClass::kInterStage, 0));
    t.join();
    const int st = static_cast<int>(LinkClass::kInterStage);
    EXPECT_EQ(a->counters().recv_bytes[st], 10u + 11u + 12u);  // the uncounted 100 bytes are not here
    EXPECT_EQ(a->counters().recv_msgs[st], 3u);
    EXPECT_EQ(b->counters().sent_bytes[st], 33u);
    EXPECT_EQ(a->counters().sent_bytes[st], 5u);
    EXPECT_FALSE(a->send(0, {}, LinkClass::kInterStage, 0));  // not to itself
}

}  // namespace
}  // namespace tw
