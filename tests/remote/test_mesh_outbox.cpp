// A keyed tcp:// mesh with members that joined a relay (MeshOptions::relayed_members): a reachable
// member's messages to a relayed one leave through its outbox, over the connection the relayed
// member dialled; two relayed members reach each other's data ports (through the relay in a real
// run; here straight, on loopback). The relayed counters tell the two ways apart, to the byte.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <zmq.hpp>

#include "remote/bench/transport_bench.h"
#include "remote/cluster.h"
#include "remote/curve.h"
#include "remote/mesh_outbox.h"
#include "remote/poll.h"
#include "remote/zmq_collective.h"

namespace tw {
namespace {

using namespace std::chrono_literals;

// Three members on loopback, data ports two apart (each outbox takes the port after its member's):
// member 0 reachable, 1 and 2 relayed.
struct RelayedMesh {
    RelayedMesh() {
        ctx = std::make_shared<zmq::context_t>();
        zap = ZapHandler::start(ctx, [](const std::string&) {}).value();
        const int port = free_tcp_port_block(6).value();
        for (int r = 0; r < 3; ++r) {
            keys.push_back(curve_keypair_new().value());
            eps.push_back("tcp://127.0.0.1:" + std::to_string(port + 2 * r));
        }
        std::vector<std::string> pub;
        for (auto& k : keys) pub.push_back(k.public_key);
        zap->allow(kZapData, pub);
        events.resize(3);
        for (int r = 0; r < 3; ++r) {
            MeshOptions o;
            o.timeout_ms = 20000;
            o.token = 0x77;
            o.heartbeat_s = 0.05;
            o.silence_timeout_s = 5;
            o.public_key = keys[static_cast<size_t>(r)].public_key;
            o.secret_key = keys[static_cast<size_t>(r)].secret_key;
            o.member_keys = pub;
            o.relayed_members = {1, 2};
            o.on_event = [this, r](const std::string& kind, const std::string& text) {
                std::lock_guard<std::mutex> lock(mu);
                events[static_cast<size_t>(r)].push_back(kind + ": " + text);
            };
            auto m = ZmqCollective::create(ctx, eps, r, o);
            EXPECT_TRUE(m) << m.message();
            members.push_back(std::move(*m));
        }
    }
    // One all-gather of every member at once; member r offers `sizes[r]` bytes of value r.
    void gather(const std::vector<size_t>& sizes) {
        std::vector<std::thread> ts;
        for (int r = 0; r < 3; ++r)
            ts.emplace_back([this, r, &sizes] {
                auto got = members[static_cast<size_t>(r)]->all_gather(
                    std::vector<uint8_t>(sizes[static_cast<size_t>(r)], static_cast<uint8_t>(r)), LinkClass::kOuterSync);
                ASSERT_TRUE(got) << got.message();
                for (int q = 0; q < 3; ++q)
                    EXPECT_EQ((*got)[static_cast<size_t>(q)],
                              std::vector<uint8_t>(sizes[static_cast<size_t>(q)], static_cast<uint8_t>(q)));
            });
        for (auto& t : ts) t.join();
    }
    std::shared_ptr<zmq::context_t> ctx;
    std::unique_ptr<ZapHandler> zap;
    std::vector<CurveKeyPair> keys;
    std::vector<std::string> eps;
    std::vector<std::unique_ptr<ZmqCollective>> members;
    std::mutex mu;
    std::vector<std::vector<std::string>> events;
};

constexpr int kOuter = static_cast<int>(LinkClass::kOuterSync);

TEST(MeshOutbox, AReachableMembersPayloadsReachRelayedMembersOverTheConnectionsTheyDialled) {
    if (!curve_available()) GTEST_SKIP() << "libzmq without CURVE";
    RelayedMesh m;
    m.gather({1000, 300, 70});
    m.gather({11, 22, 33});
    // Member 1 read 1000 + 11 B from member 0 and 70 + 33 B from member 2; only member 2's came to
    // its data port, the relay's way in. Member 2 likewise: only member 1's 300 + 22 B.
    const ByteCounters& c1 = m.members[1]->counters();
    const ByteCounters& c2 = m.members[2]->counters();
    EXPECT_EQ(c1.recv_bytes[kOuter], 1000u + 11 + 70 + 33);
    EXPECT_EQ(c1.relayed_recv_bytes[kOuter], 70u + 33);
    EXPECT_EQ(c2.recv_bytes[kOuter], 1000u + 11 + 300 + 22);
    EXPECT_EQ(c2.relayed_recv_bytes[kOuter], 300u + 22);
    // The reachable member counts nothing as relayed: everyone dials it.
    const ByteCounters& c0 = m.members[0]->counters();
    EXPECT_EQ(c0.recv_bytes[kOuter], 300u + 22 + 70 + 33);
    for (int k = 0; k < 3; ++k) EXPECT_EQ(c0.relayed_recv_bytes[k], 0u) << k;
    for (auto& e : m.events) EXPECT_TRUE(e.empty()) << e.front();
}

// A member's key that is not a relayed member's (here the outbox owner's own, which the data
// domain admits) dials the outbox: it is named once, and gets nothing of what the owner sends.
TEST(MeshOutbox, AConnectionWithAKeyThatIsNotARelayedMembersGetsNothing) {
    if (!curve_available()) GTEST_SKIP() << "libzmq without CURVE";
    RelayedMesh m;
    zmq::socket_t d(*m.ctx, zmq::socket_type::dealer);
    d.set(zmq::sockopt::probe_router, 1);
    d.set(zmq::sockopt::linger, 0);
    curve_client(d, m.keys[0], m.keys[0].public_key);
    d.connect(mesh_outbox_endpoint(m.eps[0]).value());
    m.gather({40, 50, 60});
    EXPECT_FALSE(poll_in(d, 300)) << "the outbox sent a stranger something";
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    bool named = false;
    while (!named && std::chrono::steady_clock::now() < deadline) {
        {
            std::lock_guard<std::mutex> lock(m.mu);
            for (auto& e : m.events[0]) named |= e.find("not a relayed member's: it gets nothing") != std::string::npos;
        }
        std::this_thread::sleep_for(20ms);
    }
    EXPECT_TRUE(named);
}

TEST(MeshOutbox, TheOutboxEndpointIsTheDataPortsNextPort) {
    EXPECT_EQ(mesh_outbox_endpoint("tcp://10.0.0.5:7002").value(), "tcp://10.0.0.5:7003");
    EXPECT_EQ(mesh_outbox_endpoint("tcp://0.0.0.0:1").value(), "tcp://0.0.0.0:2");
    for (const char* bad : {"ipc:///tmp/x", "tcp://host", "tcp://host:", "tcp://h:65535", "tcp://h:7a", "tcp://h:0"}) {
        auto r = mesh_outbox_endpoint(bad);
        EXPECT_FALSE(r) << bad;
    }
}

// The transport bench's outbox cell (`thinwire bench transport --curve --outbox`) carries every
// message, unchanged (it checks each one's first and last byte), and refuses what it cannot run.
TEST(MeshOutbox, TheTransportBenchCarriesEveryMessageThroughAnOutbox) {
    if (!curve_available()) GTEST_SKIP() << "libzmq without CURVE";
    TransportBenchConfig cfg;
    cfg.budget_bytes = 1 << 20;
    cfg.curve = cfg.outbox = true;
    auto r = bench_transport(Transport::kTcp, 64 << 10, cfg);
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(r->msgs, 16);
    EXPECT_GT(r->bytes_per_s, 0);
    cfg.curve = false;
    auto plain = bench_transport(Transport::kTcp, 64 << 10, cfg);
    ASSERT_FALSE(plain);
    EXPECT_NE(plain.message().find("an outbox serves keyed tcp:// only"), std::string::npos) << plain.message();
}

// A relayed member hears a public one only over that member's outbox. When the outbox never
// answers (here: nobody serves it, as behind a firewall that keeps the port closed), the public
// member is lost for silence, and the error says where the relayed member looked.
TEST(MeshOutbox, ARelayedMemberThatNeverHearsAnOutboxSaysWhereItLooked) {
    if (!curve_available()) GTEST_SKIP() << "libzmq without CURVE";
    auto ctx = std::make_shared<zmq::context_t>();
    auto zap = ZapHandler::start(ctx, [](const std::string&) {}).value();
    auto k0 = curve_keypair_new().value(), k1 = curve_keypair_new().value();
    zap->allow(kZapData, {k0.public_key, k1.public_key});
    const int port = free_tcp_port_block(4).value();
    const std::vector<std::string> eps = {"tcp://127.0.0.1:" + std::to_string(port),
                                          "tcp://127.0.0.1:" + std::to_string(port + 2)};
    MeshOptions o;
    o.timeout_ms = 20000;
    o.token = 0x77;
    o.heartbeat_s = 0.05;
    o.silence_timeout_s = 0.5;
    o.public_key = k1.public_key;
    o.secret_key = k1.secret_key;
    o.member_keys = {k0.public_key, k1.public_key};
    o.relayed_members = {1};
    auto m = ZmqCollective::create(ctx, eps, 1, o);
    ASSERT_TRUE(m) << m.message();
    auto got = (*m)->all_gather({1, 2, 3}, LinkClass::kOuterSync);
    ASSERT_FALSE(got);
    EXPECT_NE(got.message().find("is lost: silent for"), std::string::npos) << got.message();
    EXPECT_NE(got.message().find("its outbox at tcp://127.0.0.1:" + std::to_string(port + 1) +
                                 " never answered this member (is that port open to it?)"),
              std::string::npos)
        << got.message();
}

// A mesh with relayed members is keyed: without CURVE there is no key to know a dialler by.
TEST(MeshOutbox, ARelayedMeshWithoutKeysIsRefused) {
    auto ctx = std::make_shared<zmq::context_t>();
    const int port = free_tcp_port_block(4).value();
    MeshOptions o;
    o.relayed_members = {1};
    auto m = ZmqCollective::create(ctx, {"tcp://127.0.0.1:" + std::to_string(port), "tcp://127.0.0.1:" + std::to_string(port + 2)},
                                   0, o);
    ASSERT_FALSE(m);
    EXPECT_NE(m.message().find("needs CurveZMQ keys"), std::string::npos) << m.message();
}

}  // namespace
}  // namespace tw
