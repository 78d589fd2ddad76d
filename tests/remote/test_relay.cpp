// The relay for nodes nobody can dial (remote/relay.h): its ZMTP counting against hand-built
// streams, and one connection carried end to end through a relay and a joined node's tunnel on
// loopback, its counts against the bytes sent.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <zmq.hpp>

#include "remote/cluster.h"
#include "remote/curve.h"
#include "remote/poll.h"
#include "remote/relay.h"
#include "remote/relay_directory.h"
#include "remote/tunnel_client.h"
#include "remote/zmtp_meter.h"

namespace tw {
namespace {

std::string greeting() { return std::string(kZmtpGreetingBytes, '\x01'); }
std::string short_frame(uint8_t flags, const std::string& body) {
    return std::string(1, static_cast<char>(flags)) + static_cast<char>(body.size()) + body;
}
std::string long_frame(uint8_t flags, const std::string& body) {
    std::string s(1, static_cast<char>(flags | 0x02));
    for (int k = 7; k >= 0; --k) s += static_cast<char>(static_cast<uint64_t>(body.size()) >> (8 * k) & 0xff);
    return s + body;
}

// A CURVE MESSAGE box carrying `payload` bytes: 8 name + 8 nonce + 16 tag + 1 flags + payload.
std::string curve_box(size_t payload) {
    return std::string("\x07MESSAGE", 8) + std::string(8 + 16 + 1, 'n') + std::string(payload, 'p');
}

// `stream` fed to one meter in pieces of `chunk` bytes: the sum of what it counted.
ZmtpCount meter_in_chunks(const std::string& stream, size_t chunk, bool* lost = nullptr) {
    ZmtpMeter m;
    ZmtpCount total;
    for (size_t i = 0; i < stream.size(); i += chunk)
        total += m.feed(reinterpret_cast<const uint8_t*>(stream.data()) + i, std::min(chunk, stream.size() - i));
    if (lost) *lost = m.lost();
    return total;
}

TEST(ZmtpMeter, CountsMessageFramesAndTheirPayloadWhateverTheChunks) {
    // A greeting, a READY command (framing), a 3-byte frame, a 300-byte long frame, a CURVE MESSAGE
    // command carrying 10 payload bytes (8 name + 8 nonce + 16 tag + 1 flags + 10), and a PING.
    const std::string stream = greeting() + short_frame(0x04, "\x05READYxx") + short_frame(0x01, "abc") +
                               long_frame(0x00, std::string(300, 'q')) + short_frame(0x04, curve_box(10)) +
                               short_frame(0x04, "\x04PINGzz");
    for (size_t chunk : {stream.size(), size_t{1}, size_t{7}}) {
        bool lost = true;
        const ZmtpCount total = meter_in_chunks(stream, chunk, &lost);
        EXPECT_EQ(total.bytes, stream.size()) << "chunk " << chunk;
        EXPECT_EQ(total.frames, 3u) << "chunk " << chunk;
        EXPECT_EQ(total.payload, 3u + 300u + 10u) << "chunk " << chunk;
        EXPECT_FALSE(lost);
    }
}

// A greeting that names CURVE: every message is a MESSAGE box, which libzmq 4.3 sends as a plain
// frame (ZMTP 3.1 as a command): 33 bytes of each are framing either way, and the handshake's
// commands (HELLO, READY) none of the payload.
TEST(ZmtpMeter, UnderCurveEveryMessageIsABoxWhoseNameNonceTagAndFlagsAreFraming) {
    std::string g(kZmtpGreetingBytes, '\0');
    g.replace(12, 5, "CURVE");
    const std::string stream = g + short_frame(0x04, "\x05HELLO" + std::string(194, 'h')) +
                               short_frame(0x04, "\x05READYxx") + short_frame(0x01, curve_box(48)) +
                               short_frame(0x00, curve_box(0)) + long_frame(0x00, curve_box(1000)) +
                               short_frame(0x04, curve_box(7));
    for (size_t chunk : {stream.size(), size_t{1}, size_t{5}}) {
        const ZmtpCount total = meter_in_chunks(stream, chunk);
        EXPECT_EQ(total.bytes, stream.size()) << "chunk " << chunk;
        EXPECT_EQ(total.frames, 4u) << "chunk " << chunk;
        EXPECT_EQ(total.payload, 48u + 0 + 1000 + 7) << "chunk " << chunk;
    }
}

TEST(Curve, AKeyFilePathOfFortyCharactersIsReadAsAFile) {
    // A path of 40 characters, every one of them in Z85's alphabet, is still a file's path.
    const std::string dir = std::filesystem::temp_directory_path().string() + "/twk" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    std::string path = dir + "/";
    path += std::string(40 - path.size(), 'k');
    ASSERT_EQ(path.size(), 40u);
    ASSERT_TRUE(is_z85_key(path)) << "the case needs a path that looks like a key";
    auto keys = curve_keypair_new();
    ASSERT_TRUE(keys);
    ASSERT_TRUE(write_keypair(dir + "/pair", *keys));
    std::filesystem::copy_file(dir + "/pair/public.key", path);
    auto got = public_key_from_text_or_file(path);
    std::filesystem::remove_all(dir);
    ASSERT_TRUE(got) << got.message();
    EXPECT_EQ(*got, keys->public_key);
}

TEST(Relay, CarriesAConnectionToAJoinedNodesPortAndCountsItsBytes) {
    auto relay_keys = curve_keypair_new(), node_keys = curve_keypair_new(), asker_keys = curve_keypair_new();
    ASSERT_TRUE(relay_keys && node_keys && asker_keys);
    // The node's "control port": a plain ROUTER on loopback that echoes with a suffix.
    zmq::context_t ctx;
    zmq::socket_t server(ctx, zmq::socket_type::router);
    server.set(zmq::sockopt::linger, 0);
    const int port = unwrap(free_tcp_port_block(4));
    server.bind("tcp://127.0.0.1:" + std::to_string(port));
    // Its "data port" (P + 2), whose connections the relay carries on the bulk lane.
    zmq::socket_t data_server(ctx, zmq::socket_type::router);
    data_server.set(zmq::sockopt::linger, 0);
    data_server.bind("tcp://127.0.0.1:" + std::to_string(port + 2));

    RelayOptions o;
    o.listen = "tcp://127.0.0.1:*";
    o.keys = *relay_keys;
    o.allowed = {node_keys->public_key, asker_keys->public_key};
    auto relay = Relay::start(o);
    ASSERT_TRUE(relay) << relay.message();

    TunnelOptions t;
    t.relay = (*relay)->endpoint();
    t.relay_key = relay_keys->public_key;
    t.keys = *node_keys;
    t.local_host = "127.0.0.1";
    t.local_port = port;
    auto tunnel = TunnelClient::start(t);
    ASSERT_TRUE(tunnel) << tunnel.message();

    auto dir = RelayDirectory::connect((*relay)->endpoint(), relay_keys->public_key, *asker_keys);
    ASSERT_TRUE(dir) << dir.message();
    auto found = (*dir)->wait_for({node_keys->public_key}, 10, nullptr, nullptr);
    ASSERT_TRUE(found) << found.message();
    const std::string public_ep = found->at(node_keys->public_key);
    EXPECT_EQ(public_ep, (*tunnel)->public_endpoint());

    // A stranger's key may not ask.
    auto stranger = curve_keypair_new();
    auto refused = RelayDirectory::connect((*relay)->endpoint(), relay_keys->public_key, *stranger);
    ASSERT_TRUE(refused);
    EXPECT_FALSE((*refused)->counters(node_keys->public_key, 1000));

    zmq::socket_t dialer(ctx, zmq::socket_type::dealer);
    dialer.set(zmq::sockopt::linger, 0);
    dialer.connect(public_ep);
    dialer.send(zmq::buffer(std::string("hello")), zmq::send_flags::none);
    ASSERT_TRUE(poll_in(server, 5000)) << "nothing arrived through the relay";
    zmq::message_t id, body;
    ASSERT_TRUE(server.recv(id));
    ASSERT_TRUE(server.recv(body));
    EXPECT_EQ(body.to_string(), "hello");
    server.send(id, zmq::send_flags::sndmore);
    server.send(zmq::buffer(std::string("hello, dialer")), zmq::send_flags::none);
    ASSERT_TRUE(poll_in(dialer, 5000)) << "the answer did not come back through the relay";
    zmq::message_t answer;
    ASSERT_TRUE(dialer.recv(answer));
    EXPECT_EQ(answer.to_string(), "hello, dialer");

    auto c = (*dir)->counters(node_keys->public_key);
    ASSERT_TRUE(c) << c.message();
    const auto control = static_cast<size_t>(RelayClass::kControl);
    EXPECT_EQ(c->to_node[control].frames, 1u);
    EXPECT_EQ(c->to_node[control].payload, 5u);
    EXPECT_EQ(c->from_node[control].frames, 1u);
    EXPECT_EQ(c->from_node[control].payload, 13u);
    // Framing: at least the two greetings and the two READY commands beside the payload.
    EXPECT_GT(c->to_node[control].bytes, 5u + kZmtpGreetingBytes);
    EXPECT_GT(c->from_node[control].bytes, 13u + kZmtpGreetingBytes);
    EXPECT_EQ(c->connections, 1u);
    EXPECT_EQ(c->joins, 1u);

    // A connection to the data port (Q + 2), carried on the bulk lane beside the control one,
    // whose dialer stays connected: 1 MiB one way, 2 bytes back, counted as data.
    const std::string data_ep = public_ep.substr(0, public_ep.rfind(':') + 1) +
                                std::to_string(std::stoi(public_ep.substr(public_ep.rfind(':') + 1)) + 2);
    zmq::socket_t data_dialer(ctx, zmq::socket_type::dealer);
    data_dialer.set(zmq::sockopt::linger, 0);
    data_dialer.connect(data_ep);
    const std::string big(1 << 20, 'x');
    data_dialer.send(zmq::buffer(big), zmq::send_flags::none);
    ASSERT_TRUE(poll_in(data_server, 5000)) << "nothing arrived at the data port through the relay";
    ASSERT_TRUE(data_server.recv(id));
    ASSERT_TRUE(data_server.recv(body));
    EXPECT_EQ(body.size(), big.size());
    data_server.send(id, zmq::send_flags::sndmore);
    data_server.send(zmq::buffer(std::string("ok")), zmq::send_flags::none);
    ASSERT_TRUE(poll_in(data_dialer, 5000)) << "the data port's answer did not come back";
    ASSERT_TRUE(data_dialer.recv(answer));
    EXPECT_EQ(answer.to_string(), "ok");
    // And the control connection still answers beside it.
    dialer.send(zmq::buffer(std::string("again")), zmq::send_flags::none);
    ASSERT_TRUE(poll_in(server, 5000));
    ASSERT_TRUE(server.recv(id));
    ASSERT_TRUE(server.recv(body));
    EXPECT_EQ(body.to_string(), "again");
    c = (*dir)->counters(node_keys->public_key);
    ASSERT_TRUE(c) << c.message();
    const auto data = static_cast<size_t>(RelayClass::kData);
    EXPECT_EQ(c->to_node[data].frames, 1u);
    EXPECT_EQ(c->to_node[data].payload, big.size());
    EXPECT_EQ(c->from_node[data].frames, 1u);
    EXPECT_EQ(c->from_node[data].payload, 2u);
    EXPECT_EQ(c->to_node[control].frames, 2u);
    EXPECT_EQ(c->connections, 2u);
    EXPECT_EQ(c->bulk_connections, 1u);  // the data port's, on its own lane
}

}  // namespace
}  // namespace tw
