// DiLoCo: Nesterov on hand-computed values, one replica with η = 1 and μ = 0 is plain training,
// replicas agree after every round, and the bytes on the wire equal P·b per peer per round.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>
#include <zmq.hpp>

#include "engine/algo/diloco.h"
#include "engine/train/trainer.h"
#include "remote/zmq_collective.h"
#include "tests/engine/micro_run.h"

namespace tw {
namespace {

std::unique_ptr<ZmqCollective> solo(std::shared_ptr<zmq::context_t> ctx, const std::string& name) {
    return ZmqCollective::create(ctx, {"inproc://" + name}, 0).value();
}

TEST(DiLoCo, OuterNesterovMatchesHandComputedValues) {
    auto ctx = std::make_shared<zmq::context_t>();
    auto c = solo(ctx, "nesterov");
    auto p = torch::tensor({1.0f, 2.0f, 3.0f});
    DiLoCo d({p}, {0.7, 0.9, WireDtype::kFp32});
    p.copy_(torch::tensor({0.5f, 2.0f, 4.0f}));  // Δ = [0.5, 0, -1]; b = Δ; θ -= 0.7·1.9·Δ
    ASSERT_TRUE(d.sync(*c).is_ok());
    EXPECT_TRUE(torch::allclose(p, torch::tensor({0.335f, 2.0f, 4.33f}), 0, 1e-6)) << p;
    p.sub_(torch::tensor({0.1f, 0.0f, 0.0f}));  // Δ = [0.1, 0, 0]; b = 0.9·b + Δ = [0.55, 0, -0.9]
    ASSERT_TRUE(d.sync(*c).is_ok());
    EXPECT_TRUE(torch::allclose(p, torch::tensor({-0.0815f, 2.0f, 4.897f}), 0, 1e-6)) << p;
}

RunConfig micro_run() { return testing_support::micro_run(53, 12); }

std::shared_ptr<std::vector<uint16_t>> tokens() {
    static auto t = [] {
        auto v = std::make_shared<std::vector<uint16_t>>(30000);
        std::mt19937 rng(3);
        for (auto& x : *v) x = static_cast<uint16_t>(rng() % 53);
        return v;
    }();
    return t;
}

Trainer make(const RunConfig& c, int replica, int n) {
    return Trainer(c, WindowLoader(tokens(), {{0, 30000}}, 16, 4, 1, replica, n),
                   WindowLoader(tokens(), {{0, 30000}}, 16, 4, 2));
}

TEST(DiLoCo, OneReplicaWithUnitLrAndNoMomentumIsPlainTraining) {
    auto c = micro_run();
    auto plain = make(c, 0, 1), outer = make(c, 0, 1);
    auto ctx = std::make_shared<zmq::context_t>();
    auto coll = solo(ctx, "plain");
    DiLoCo d(outer.model()->parameters(), {1.0, 0.0, WireDtype::kFp32});
    for (int round = 0; round < 3; ++round) {
        for (int h = 0; h < 4; ++h) EXPECT_NEAR(outer.step().loss, plain.step().loss, 1e-5) << round << "/" << h;
        ASSERT_TRUE(d.sync(*coll).is_ok());
    }
    auto a = plain.model()->parameters(), b = outer.model()->parameters();
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::allclose(a[i], b[i], 0, 1e-6));  // θ − (θ − θ_r) rounds
}

TEST(DiLoCo, ThreeReplicasAgreeAfterEveryRoundAndCountExactBytes) {
    const int R = 3, H = 3, rounds = 2;
    auto c = micro_run();
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps;
    for (int r = 0; r < R; ++r) eps.push_back("inproc://diloco-" + std::to_string(r));
    std::vector<std::vector<torch::Tensor>> finals(R);
    std::vector<ByteCounters> bytes(R);
    std::vector<std::string> errors(R);
    int64_t P = 0;
    std::vector<std::thread> threads;
    for (int r = 0; r < R; ++r) {
        threads.emplace_back([&, r] {
            auto coll = ZmqCollective::create(ctx, eps, r).value();
            auto t = make(c, r, R);
            DiLoCo d(t.model()->parameters(), {0.7, 0.9, WireDtype::kBf16});
            if (r == 0) P = d.num_params();
            for (int k = 0; k < rounds; ++k) {
                for (int h = 0; h < H; ++h) (void)t.step();
                if (Status s = d.sync(*coll); !s) errors[r] = s.message();
            }
            for (auto& p : t.model()->parameters()) finals[r].push_back(p.detach().clone());
            bytes[r] = coll->counters();
        });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < R; ++r) ASSERT_EQ(errors[r], "") << r;
    const uint64_t per_round = DiLoCo::payload_bytes(P, WireDtype::kBf16);
    EXPECT_EQ(per_round, static_cast<uint64_t>(P) * 2);
    for (int r = 0; r < R; ++r) {
        for (size_t i = 0; i < finals[0].size(); ++i) EXPECT_TRUE(torch::equal(finals[r][i], finals[0][i])) << r;
        const int k = static_cast<int>(LinkClass::kOuterSync);
        EXPECT_EQ(bytes[r].sent_bytes[k], rounds * (R - 1) * per_round);
        EXPECT_EQ(bytes[r].recv_bytes[k], rounds * (R - 1) * per_round);
        EXPECT_EQ(bytes[r].sent_msgs[k], static_cast<uint64_t>(rounds * (R - 1)));
    }
}

}  // namespace
}  // namespace tw
