// ZeroMQ PUSH → PULL throughput against memcpy; see transport_bench.h.
#include "remote/bench/transport_bench.h"

#include "remote/curve.h"
#include "remote/mesh_outbox.h"
#include "remote/relay.h"
#include "remote/tunnel_client.h"

#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <thread>
#include <zmq.hpp>

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// A private directory for one ipc:// socket file, removed with the object.
struct TempDir {
    std::string path;
    TempDir() {
        char templ[] = "/tmp/tw-bench-XXXXXX";
        if (mkdtemp(templ)) path = templ;
    }
    ~TempDir() {
        std::error_code ec;
        if (!path.empty()) std::filesystem::remove_all(path, ec);
    }
};

Result<std::string> bind_address(Transport t, const TempDir& dir) {
    static std::atomic<int> cell{0};
    switch (t) {
        case Transport::kInproc: return "inproc://tw-bench-transport-" + std::to_string(cell++);
        case Transport::kIpc:
            if (dir.path.empty()) return Result<std::string>::error("bench transport: cannot create a temp dir for ipc://");
            return "ipc://" + dir.path + "/pull";
        case Transport::kTcp: return std::string("tcp://127.0.0.1:*");  // ephemeral port, read back after bind
    }
    return Result<std::string>::error("bench transport: unknown transport");
}

// A relay on loopback and the receiver's tunnel to it: the endpoint the sender dials instead of
// `bound` (tcp://127.0.0.1:P, the receiver's port).
Result<std::string> relayed_endpoint(const std::string& bound, std::unique_ptr<Relay>& relay,
                                     std::unique_ptr<TunnelClient>& tunnel) {
    using R = Result<std::string>;
    auto relay_keys = curve_keypair_new(), node_keys = curve_keypair_new();
    if (!relay_keys || !node_keys) return R::error("no CURVE keys for the relay");
    RelayOptions o;
    o.listen = "tcp://127.0.0.1:*";
    o.keys = *relay_keys;
    o.allowed = {node_keys->public_key};
    auto r = Relay::start(o);
    if (!r) return r.status();
    relay = std::move(*r);
    TunnelOptions t;
    t.relay = relay->endpoint();
    t.relay_key = relay_keys->public_key;
    t.keys = *node_keys;
    t.local_host = "127.0.0.1";
    t.local_port = std::stoi(bound.substr(bound.rfind(':') + 1));
    auto c = TunnelClient::start(t);
    if (!c) return c.status();
    tunnel = std::move(*c);
    for (int i = 0; i < 500 && tunnel->public_endpoint().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (tunnel->public_endpoint().empty()) return R::error("the tunnel did not join the relay within 5 s");
    return tunnel->public_endpoint();
}

// What the receiving thread reports back.
struct Received {
    Clock::time_point end;  // when it held the last message
    uint64_t edge_sum = 0;  // sum of every message's first and last byte
    std::string error;
};

// Takes the warm-up message (so the connection exists before the clock starts), releases the
// sender through `ready`, then takes `n` messages and reads each one's first and last byte:
// memcpy has to touch its data, so a transport should too.
void receive(zmq::socket_t& pull, int64_t n, uint64_t msg_bytes, std::promise<bool>& ready, Received& out) {
    bool released = false;  // the sender waits on `ready`: it must be set on every path
    try {
        zmq::message_t m;
        const bool warm = pull.recv(m).has_value();
        ready.set_value(warm);
        released = true;
        if (!warm) { out.error = "warm-up message timed out"; return; }
        for (int64_t i = 0; i < n; ++i) {
            if (!pull.recv(m)) { out.error = "message " + std::to_string(i) + " timed out"; return; }
            if (m.size() != msg_bytes) { out.error = "message of " + std::to_string(m.size()) + " bytes"; return; }
            const auto* b = static_cast<const uint8_t*>(m.data());
            out.edge_sum += b[0] + b[msg_bytes - 1];
        }
        out.end = Clock::now();
    } catch (const zmq::error_t& e) {
        out.error = e.what();
        if (!released) ready.set_value(false);
    }
}

// Sends the warm-up message, waits for the receiver to hold it, then `n` copies of `payload` the way
// ZmqCollective sends a payload frame (zmq::const_buffer: one copy into a fresh zmq message).
Result<Clock::time_point> send_all(zmq::socket_t& push, const std::vector<uint8_t>& payload, int64_t n,
                                   std::future<bool> ready) {
    using R = Result<Clock::time_point>;
    try {  // never throws: the receiving thread is still running and must be joined
        if (!push.send(zmq::str_buffer("w"), zmq::send_flags::none)) return R::error("warm-up send timed out");
        if (!ready.get()) return R::error("receiver did not get the warm-up message");
        const auto start = Clock::now();
        for (int64_t i = 0; i < n; ++i)
            if (!push.send(zmq::const_buffer(payload.data(), payload.size()), zmq::send_flags::none))
                return R::error("send " + std::to_string(i) + " timed out");
        return start;
    } catch (const zmq::error_t& e) {
        return R::error(e.what());
    }
}

}  // namespace

const char* to_string(Transport t) {
    switch (t) {
        case Transport::kInproc: return "inproc";
        case Transport::kIpc: return "ipc";
        case Transport::kTcp: return "tcp";
    }
    return "unknown";
}

Result<Transport> parse_transport(const std::string& name) {
    for (Transport t : {Transport::kInproc, Transport::kIpc, Transport::kTcp})
        if (name == to_string(t)) return t;
    return Result<Transport>::error("unknown transport \"" + name + "\" (inproc | ipc | tcp)");
}

int64_t messages_for(uint64_t msg_bytes, const TransportBenchConfig& cfg) {
    const auto n = static_cast<int64_t>(cfg.budget_bytes / std::max<uint64_t>(msg_bytes, 1));
    return std::clamp(n, cfg.min_msgs, cfg.max_msgs);
}

double measure_memcpy_bytes_per_s(uint64_t msg_bytes, uint64_t budget_bytes) {
    // Filled before timing so no page fault lands inside the loop.
    std::vector<uint8_t> src(msg_bytes, 1), dst(msg_bytes, 0);
    const uint64_t reps = std::max<uint64_t>(8, budget_bytes / std::max<uint64_t>(msg_bytes, 1));
    double batch_s[3];
    for (double& s : batch_s) {
        const auto t0 = Clock::now();
        for (uint64_t r = 0; r < reps; ++r) {
            std::memcpy(dst.data(), src.data(), msg_bytes);
            asm volatile("" : : "g"(dst.data()) : "memory");  // the copy's result counts as read: no elision
        }
        s = seconds_between(t0, Clock::now());
    }
    std::sort(batch_s, batch_s + 3);
    return static_cast<double>(reps * msg_bytes) / batch_s[1];
}

Result<TransportBenchResult> bench_transport(Transport t, uint64_t msg_bytes, const TransportBenchConfig& cfg) {
    using R = Result<TransportBenchResult>;
    if (msg_bytes == 0) return R::error("bench transport: message size must be positive");
    TransportBenchResult r;
    r.transport = t;
    r.msg_bytes = msg_bytes;
    r.msgs = messages_for(msg_bytes, cfg);
    std::vector<uint8_t> payload(msg_bytes);
    for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i * 31 + 7);

    TempDir dir;
    auto addr = bind_address(t, dir);
    if (!addr) return addr.status();
    if (cfg.curve && t == Transport::kInproc)
        return R::error("bench transport: CURVE does not apply to inproc:// (nothing leaves the process)");
    r.curve = cfg.curve;
    auto ctx_ptr = std::make_shared<zmq::context_t>();
    zmq::context_t& ctx = *ctx_ptr;
    std::unique_ptr<ZapHandler> zap;
    if (cfg.outbox && (t != Transport::kTcp || !cfg.curve))
        return R::error("bench transport: an outbox serves keyed tcp:// only");
    // Through an outbox the receiver is the dialler: a DEALER, as a relayed member's.
    zmq::socket_t pull(ctx, cfg.outbox ? zmq::socket_type::dealer : zmq::socket_type::pull);
    zmq::socket_t push(ctx, zmq::socket_type::push);
    CurveKeyPair server_keys, client_keys;
    if (cfg.curve) {
        auto server = curve_keypair_new(), client = curve_keypair_new();
        if (!server || !client) return R::error("bench transport: no CURVE keys: " + server.message() + client.message());
        server_keys = *server, client_keys = *client;
        auto z = ZapHandler::start(ctx_ptr, nullptr);
        if (!z) return z.status();
        zap = std::move(*z);
        zap->allow(kZapData, {client->public_key});
        if (cfg.outbox) {  // the sender's outbox is the server; its inproc pipe has no CURVE
            curve_client(pull, *client, server->public_key);
        } else {
            curve_server(pull, *server, kZapData);
            curve_client(push, *client, server->public_key);
        }
    }
    if (cfg.relayed && t != Transport::kTcp) return R::error("bench transport: a relay carries tcp:// only");
    std::unique_ptr<MeshOutbox> outbox;
    std::unique_ptr<Relay> relay;
    std::unique_ptr<TunnelClient> tunnel;
    std::string error;
    Received got;
    Clock::time_point start;
    try {
        pull.set(zmq::sockopt::rcvtimeo, cfg.timeout_ms);
        push.set(zmq::sockopt::sndtimeo, cfg.timeout_ms);
        if (cfg.outbox) {
            MeshOutboxOptions o;
            o.bind = *addr;
            o.keys = server_keys;
            o.member_keys = {server_keys.public_key, client_keys.public_key};
            o.relayed = {1};
            auto ob = MeshOutbox::start(ctx, o);
            if (!ob) return ob.status();
            outbox = std::move(*ob);
            pull.set(zmq::sockopt::probe_router, 1);
            pull.connect(outbox->endpoint());
            zmq::message_t welcome;  // the outbox knows this connection: the cell may start
            if (!pull.recv(welcome) || welcome.size() != 0) return R::error("bench transport: no welcome from the outbox");
            push.connect(outbox->sender_endpoint(1));
        } else {
            pull.bind(*addr);
            std::string target = pull.get(zmq::sockopt::last_endpoint);
            if (cfg.relayed) {
                auto via = relayed_endpoint(target, relay, tunnel);
                if (!via) return via.status();
                target = *via;
            }
            push.connect(target);
        }
        std::promise<bool> ready;
        std::thread receiver(receive, std::ref(pull), r.msgs, msg_bytes, std::ref(ready), std::ref(got));
        auto sent = send_all(push, payload, r.msgs, ready.get_future());
        receiver.join();
        if (!sent) error = sent.message();
        else start = *sent;
    } catch (const zmq::error_t& e) {
        error = e.what();
    }
    push.set(zmq::sockopt::linger, 0);
    pull.set(zmq::sockopt::linger, 0);
    push.close();
    tunnel.reset();
    relay.reset();
    outbox.reset();
    pull.close();
    zap.reset();
    if (error.empty()) error = got.error;
    const uint64_t edges = static_cast<uint64_t>(payload.front() + payload.back()) * static_cast<uint64_t>(r.msgs);
    if (error.empty() && got.edge_sum != edges) error = "payload bytes arrived changed";
    if (!error.empty())
        return R::error(std::string("bench transport: ") + to_string(t) + ", " + std::to_string(msg_bytes) +
                        " B: " + error);
    r.elapsed_s = seconds_between(start, got.end);
    r.bytes_per_s = static_cast<double>(r.msgs) * static_cast<double>(msg_bytes) / r.elapsed_s;
    r.msgs_per_s = static_cast<double>(r.msgs) / r.elapsed_s;
    return r;
}

}  // namespace tw
