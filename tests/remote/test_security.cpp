// Nodes that trust no one: CurveZMQ on the control and metric sockets, an unknown key
// refused and logged, only the configuring coordinator drives a run or keeps its watchdog alive,
// and the data plane drops what is not from the run and notices a silent or departed member.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "core/config_io.h"
#include "core/layout.h"
#include "remote/cluster.h"
#include "remote/coordinator.h"
#include "remote/curve.h"
#include "remote/protocol.h"
#include "remote/wire_frame.h"
#include "remote/zmq_collective.h"

namespace tw {
namespace {

using namespace std::chrono_literals;

// Reports one train.loss per step, 5 ms apart, until `steps` or a stop.
class TickWorker : public Worker {
public:
    TickWorker(NodeRole role, int64_t steps) : role_(std::move(role)), steps_(steps) {}
    Result<WorkerSummary> run(WorkerControl& ctl, MetricSink& sink) override {
        int64_t s = 0;
        while (s < steps_ && ctl.wait_while_paused()) {
            std::this_thread::sleep_for(5ms);
            ++s;
            sink.metrics({{role_.name, s, -1, 0, 0, "train.loss", 1.0}});
            ctl.step = s;
        }
        return WorkerSummary{{"steps", static_cast<double>(s)}};
    }

private:
    NodeRole role_;
    int64_t steps_;
};

struct CollectSink : CoordinatorSink {
    void on_metrics(const std::vector<MetricRecord>& r) override { rows += r.size(); }
    void on_event(const EventRecord& e) override { events.push_back(e); }
    size_t rows = 0;
    std::vector<EventRecord> events;
};

WorkerFactory ticking(int64_t steps) {
    return [steps](const RunConfig&, const NodeRole& r, const NodeSite&) {
        return Result<std::unique_ptr<Worker>>(std::make_unique<TickWorker>(r, steps));
    };
}

// One node server on its own thread; with keys on TCP loopback in a context of its own.
struct NodeThread {
    NodeThread(NodeOptions o, WorkerFactory f) {
        if (!o.ctx) o.ctx = std::make_shared<zmq::context_t>();
        o.log = [this](const std::string& t) {
            std::lock_guard<std::mutex> lock(mu);
            log.push_back(t);
        };
        endpoint = o.listen;
        server = unwrap(NodeServer::bind(std::move(o), std::move(f)));
        thread = std::thread([this] { (void)server->serve(&interrupt); });
    }
    ~NodeThread() {
        interrupt = true;
        thread.join();
    }
    std::string logged() {
        std::lock_guard<std::mutex> lock(mu);
        std::string all;
        for (auto& l : log) all += l + "\n";
        return all;
    }
    std::string endpoint;
    std::unique_ptr<NodeServer> server;
    std::atomic<bool> interrupt{false};
    std::thread thread;
    std::mutex mu;
    std::vector<std::string> log;
};

std::string loopback_endpoint() { return "tcp://127.0.0.1:" + std::to_string(unwrap(free_tcp_port_block(4))); }

// Sends one request on a fresh DEALER and waits `wait` for any reply; nullopt when none came.
// A send that cannot even be queued (the CURVE handshake failed, so there is no connection) is no
// reply either.
std::optional<nlohmann::json> ask_once(zmq::socket_t& d, const nlohmann::json& header, std::chrono::milliseconds wait) {
    d.set(zmq::sockopt::sndtimeo, static_cast<int>(wait.count()));
    if (!d.send(zmq::buffer(header.dump()))) return std::nullopt;
    zmq::pollitem_t it{d.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&it, 1, wait) <= 0) return std::nullopt;
    zmq::message_t m;
    (void)d.recv(m);
    return nlohmann::json::parse(m.to_string());
}

TEST(Curve, KeypairFilesRoundTripAndSecretKeyModeIsChecked) {
    char tmpl[] = "/tmp/tw-keys-XXXXXX";
    const std::string dir = std::string(mkdtemp(tmpl)) + "/node";
    const CurveKeyPair kp = unwrap(curve_keypair_new());
    ASSERT_TRUE(write_keypair(dir, kp));
    EXPECT_FALSE(write_keypair(dir, kp)) << "an existing key must never be overwritten";
    const CurveKeyPair back = unwrap(read_secret_key(dir + "/secret.key"));
    EXPECT_EQ(back.public_key, kp.public_key);  // derived from the secret key
    EXPECT_EQ(back.secret_key, kp.secret_key);
    EXPECT_EQ(unwrap(read_public_key(dir + "/public.key")), kp.public_key);
    ASSERT_EQ(chmod((dir + "/secret.key").c_str(), 0644), 0);
    auto open = read_secret_key(dir + "/secret.key");
    ASSERT_FALSE(open);
    EXPECT_NE(open.message().find("readable by others"), std::string::npos) << open.message();
    EXPECT_FALSE(public_key_from_text_or_file("not-a-key"));
    EXPECT_TRUE(public_key_from_text_or_file(kp.public_key));
}

TEST(Curve, KeyedNodeServesItsCoordinatorAndNobodyElse) {
    const CurveKeyPair node_keys = unwrap(curve_keypair_new()), coord_keys = unwrap(curve_keypair_new()),
                       stranger = unwrap(curve_keypair_new());
    NodeOptions o;
    o.listen = loopback_endpoint();
    o.keys = node_keys;
    o.allowed_coordinators = {coord_keys.public_key};
    NodeThread node(o, ticking(40));
    auto ctx = std::make_shared<zmq::context_t>();

    // The allowed coordinator runs a whole run over CURVE.
    CoordinatorOptions co;
    co.heartbeat_s = 0.05;
    co.heartbeat_timeout_s = 2;
    co.keys = coord_keys;
    co.node_keys = {node_keys.public_key};
    auto coord = unwrap(Coordinator::connect(ctx, {node.endpoint}, co));
    RunConfig cfg;
    ASSERT_TRUE(coord->configure(unwrap(assign_roles(cfg, {node.endpoint}, free_tcp_port)), ""));
    ASSERT_TRUE(coord->start());

    // Meanwhile: a plaintext client, and a CURVE client with a key the node does not know.
    const NodeEndpoints eps = unwrap(derive_endpoints(node.endpoint));
    zmq::socket_t plain(*ctx, zmq::socket_type::dealer), unknown(*ctx, zmq::socket_type::dealer);
    zmq::socket_t plain_sub(*ctx, zmq::socket_type::sub);
    for (auto* s : {&plain, &unknown, &plain_sub}) s->set(zmq::sockopt::linger, 0);
    curve_client(unknown, stranger, node_keys.public_key);
    plain.connect(eps.control);
    unknown.connect(eps.control);
    plain_sub.set(zmq::sockopt::subscribe, "");
    plain_sub.connect(eps.metrics);
    const nlohmann::json stop = {{"v", kProtocolVersion}, {"kind", "stop"}, {"id", 1}};
    EXPECT_FALSE(ask_once(plain, stop, 400ms)) << "a plaintext client got a reply";
    EXPECT_FALSE(ask_once(unknown, stop, 400ms)) << "an unknown key got a reply";
    zmq::pollitem_t it{plain_sub.handle(), 0, ZMQ_POLLIN, 0};
    EXPECT_EQ(zmq::poll(&it, 1, 300ms), 0) << "a plaintext subscriber received the metric stream";

    CollectSink sink;
    std::optional<RunOutcome> out;
    for (int i = 0; i < 300 && !out; ++i) out = coord->poll(sink, 20);
    ASSERT_TRUE(out);
    EXPECT_EQ(out->status, RunStatus::kFinished) << out->reason;  // the strangers' stop did nothing
    EXPECT_EQ(sink.rows, 40u);
    const std::string log = node.logged();
    EXPECT_NE(log.find("unknown key " + stranger.public_key), std::string::npos) << log;
    // (A plaintext client fails the CURVE handshake before any key is offered: nothing to log but
    // that it got nothing, checked above.)
}

TEST(Curve, NodeWithKeysBindsAnyInterfaceAndWithoutKeysRefusesWithTheReason) {
    const CurveKeyPair node_keys = unwrap(curve_keypair_new()), coord_keys = unwrap(curve_keypair_new());
    NodeOptions o;
    o.listen = "tcp://0.0.0.0:" + std::to_string(unwrap(free_tcp_port_block(4)));
    auto refused = NodeServer::bind(o, ticking(1));
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.message().find("without CurveZMQ keys"), std::string::npos) << refused.message();
    o.keys = node_keys;
    auto no_allow = NodeServer::bind(o, ticking(1));
    ASSERT_FALSE(no_allow);
    EXPECT_NE(no_allow.message().find("--allow"), std::string::npos);
    o.allowed_coordinators = {coord_keys.public_key};
    NodeThread node(o, ticking(1));
    CoordinatorOptions co;
    co.keys = coord_keys;
    co.node_keys = {node_keys.public_key};
    const std::string port = node.endpoint.substr(node.endpoint.rfind(':'));
    auto coord = Coordinator::connect(std::make_shared<zmq::context_t>(), {"tcp://127.0.0.1" + port}, co);
    ASSERT_TRUE(coord) << coord.message();
}

// A frame over the control socket's limit is refused by ZeroMQ before it is read (the sender's
// connection is dropped, which the node logs); the node keeps serving everyone else.
TEST(Limits, AnOversizedControlFrameIsDroppedUnreadAndLogged) {
    NodeOptions o;
    o.listen = loopback_endpoint();
    NodeThread node(o, ticking(1));
    zmq::context_t ctx;
    zmq::socket_t big(ctx, zmq::socket_type::dealer), fine(ctx, zmq::socket_type::dealer);
    big.set(zmq::sockopt::linger, 0);
    fine.set(zmq::sockopt::linger, 0);
    big.connect(node.endpoint);
    std::string huge(16u << 20, ' ');  // 16 MiB of white space: valid JSON padding, over the 4 MiB limit
    huge.replace(0, 40, R"({"v": 1, "kind": "hello", "id": 1}      )");
    big.send(zmq::buffer(huge));
    zmq::pollitem_t it{big.handle(), 0, ZMQ_POLLIN, 0};
    EXPECT_EQ(zmq::poll(&it, 1, 800ms), 0) << "an oversized frame was answered";
    fine.connect(node.endpoint);
    auto caps = ask_once(fine, {{"v", kProtocolVersion}, {"kind", "hello"}, {"id", 2}}, 2000ms);
    ASSERT_TRUE(caps);
    EXPECT_EQ((*caps)["kind"], "capabilities");
    std::this_thread::sleep_for(100ms);
    EXPECT_NE(node.logged().find("control socket"), std::string::npos) << node.logged();
}

// Without keys (loopback): the run token decides who may drive the run.
// A preparation runs off the control loop: while one request's preparation (a tokenizer's
// training, say) is under way, the node answers others at once — a stranger's prepare cannot hold
// it past a coordinator's hello deadline — and refuses a second prepare by name; the first
// requester gets its reply, with its id, when the preparation ends.
TEST(Ownership, APreparationDoesNotHoldTheControlLoop) {
    auto ctx = std::make_shared<zmq::context_t>();
    std::atomic<bool> release{false}, started{false};
    NodeOptions o;
    o.ctx = ctx;
    o.listen = "inproc://prepare-test";
    o.prepare_data = [&](const RunConfig&, const NodeSite&) -> Result<DataReport> {
        started = true;
        const auto until = std::chrono::steady_clock::now() + 10s;
        while (!release.load() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(5ms);
        DataReport r;
        r.vocab_size = 123;
        return r;
    };
    NodeThread node(o, ticking(1));
    zmq::socket_t first(*ctx, zmq::socket_type::dealer), other(*ctx, zmq::socket_type::dealer);
    for (auto* d : {&first, &other}) {
        d->set(zmq::sockopt::linger, 0);
        d->connect(node.endpoint);
    }
    const nlohmann::json prepare = {{"v", kProtocolVersion}, {"kind", "prepare"}, {"id", 5}, {"config_toml", to_toml(RunConfig{})}};
    ASSERT_TRUE(first.send(zmq::buffer(prepare.dump())));
    for (int i = 0; i < 400 && !started.load(); ++i) std::this_thread::sleep_for(5ms);
    ASSERT_TRUE(started.load());
    const auto t0 = std::chrono::steady_clock::now();
    auto status = ask_once(other, {{"v", kProtocolVersion}, {"kind", "status"}, {"id", 6}}, 2000ms);
    ASSERT_TRUE(status) << "no answer while a preparation runs";
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1500ms);
    EXPECT_EQ((*status)["state"], "idle") << status->dump();
    auto second = ask_once(other, {{"v", kProtocolVersion}, {"kind", "prepare"}, {"id", 7}, {"config_toml", to_toml(RunConfig{})}}, 2000ms);
    ASSERT_TRUE(second);
    EXPECT_NE(second->dump().find("preparing data for an earlier request"), std::string::npos) << second->dump();
    release = true;
    zmq::pollitem_t it{first.handle(), 0, ZMQ_POLLIN, 0};
    ASSERT_GT(zmq::poll(&it, 1, 5000ms), 0) << "the first requester got no reply";
    zmq::message_t m;
    ASSERT_TRUE(first.recv(m));
    const auto reply = nlohmann::json::parse(m.to_string());
    EXPECT_EQ(reply["kind"], "prepared") << reply.dump();
    EXPECT_EQ(reply["id"], 5);
    EXPECT_EQ(reply["vocab_size"], 123);
}

TEST(Ownership, OnlyTheConfiguringCoordinatorDrivesTheRunOrFeedsItsWatchdog) {
    auto ctx = std::make_shared<zmq::context_t>();
    NodeOptions o;
    o.ctx = ctx;
    o.listen = "inproc://owner-test";
    NodeThread node(o, ticking(1000000));
    CoordinatorOptions co;
    co.heartbeat_s = 0.05;
    co.heartbeat_timeout_s = 0.6;
    auto coord = unwrap(Coordinator::connect(ctx, {node.endpoint}, co));
    RunConfig cfg;
    ASSERT_TRUE(coord->configure(unwrap(assign_roles(cfg, {node.endpoint}, free_tcp_port)), ""));
    ASSERT_TRUE(coord->start());
    CollectSink sink;
    (void)coord->poll(sink, 100);

    zmq::socket_t stranger(*ctx, zmq::socket_type::dealer);
    stranger.set(zmq::sockopt::linger, 0);
    stranger.connect(node.endpoint);
    for (const char* kind : {"stop", "pause", "shutdown"}) {
        auto r = ask_once(stranger, {{"v", kProtocolVersion}, {"kind", kind}, {"id", 7}, {"token", "0123456789abcdef"}},
                          2000ms);
        ASSERT_TRUE(r);
        EXPECT_EQ((*r)["kind"], "error") << kind;
        EXPECT_NE((*r)["error"].get<std::string>().find("only the coordinator that configured"), std::string::npos);
    }
    (void)coord->poll(sink, 100);
    EXPECT_EQ(coord->nodes()[0].state, "running");

    // The owner pauses: an event names who did it.
    ASSERT_TRUE(coord->pause());
    (void)coord->poll(sink, 150);
    bool paused_event = false;
    for (auto& e : sink.events) paused_event |= e.kind == "pause" && e.text.find("paused by") != std::string::npos;
    EXPECT_TRUE(paused_event);
    ASSERT_TRUE(coord->resume());

    // The coordinator falls silent; a stranger's heartbeats must not keep the node training.
    const auto until = std::chrono::steady_clock::now() + 1500ms;
    while (std::chrono::steady_clock::now() < until) {
        stranger.send(zmq::buffer(nlohmann::json({{"v", kProtocolVersion}, {"kind", "heartbeat"}}).dump()));
        std::this_thread::sleep_for(50ms);
    }
    auto st = ask_once(stranger, {{"v", kProtocolVersion}, {"kind", "status"}, {"id", 8}}, 2000ms);
    ASSERT_TRUE(st);
    EXPECT_EQ((*st)["state"], "stopped") << st->dump();
}

// A member of the data plane: its own inproc endpoint set, and what it reported.
struct Mesh {
    explicit Mesh(int n, const std::string& tag, double silence_s = 0.5, double heartbeat_s = 0.05) {
        ctx = std::make_shared<zmq::context_t>();
        for (int r = 0; r < n; ++r) eps.push_back("inproc://mesh-" + tag + "-" + std::to_string(r));
        events.resize(static_cast<size_t>(n));
        for (int r = 0; r < n; ++r) {
            MeshOptions o;
            o.timeout_ms = 10000;
            o.token = 0x1234;
            o.heartbeat_s = heartbeat_s;
            o.silence_timeout_s = silence_s;
            o.on_event = [this, r](const std::string& kind, const std::string& text) {
                std::lock_guard<std::mutex> lock(mu);
                events[static_cast<size_t>(r)].push_back(kind + ": " + text);
            };
            members.push_back(unwrap(ZmqCollective::create(ctx, eps, r, o)));
        }
    }
    std::shared_ptr<zmq::context_t> ctx;
    std::vector<std::string> eps;
    std::vector<std::unique_ptr<ZmqCollective>> members;
    std::mutex mu;
    std::vector<std::vector<std::string>> events;
};

void push_raw(zmq::context_t& ctx, const std::string& ep, std::vector<std::vector<uint8_t>> frames) {
    zmq::socket_t p(ctx, zmq::socket_type::push);
    p.set(zmq::sockopt::linger, 1000);
    p.connect(ep);
    for (size_t i = 0; i < frames.size(); ++i)
        p.send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
}

std::vector<uint8_t> header(wire::FrameHeader h) {
    std::vector<uint8_t> out(wire::kFrameHeaderBytes);
    wire::encode_frame_header(h, out.data());
    return out;
}

TEST(DataPlane, MalformedAndForgedFramesAreDroppedAndTheRoundGoesOn) {
    Mesh m(2, "forged");
    // One 4-byte frame (used to fail the run), a forged payload claiming rank 1 with another
    // run's token, and a header with a NaN clock.
    push_raw(*m.ctx, m.eps[0], {{1, 2, 3, 4}});
    wire::FrameHeader forged;
    forged.rank = 1;
    forged.token = 0xbad;
    push_raw(*m.ctx, m.eps[0], {header(forged), std::vector<uint8_t>(8, 0xff)});
    auto nan_clock = header({wire::FrameKind::kRound, LinkClass::kOuterSync, true, 1, 0, 0, 0x1234, 0});
    const double nan = std::nan("");
    std::memcpy(nan_clock.data() + 24, &nan, 8);
    push_raw(*m.ctx, m.eps[0], {nan_clock, {9}});
    std::this_thread::sleep_for(100ms);

    // The member's real payload comes later, so the queued junk is read first (the PULL socket
    // fair-queues between senders).
    std::thread peer([&] {
        std::this_thread::sleep_for(300ms);
        ASSERT_TRUE(m.members[1]->all_gather({2, 2}, LinkClass::kOuterSync));
    });
    auto got = m.members[0]->all_gather({1}, LinkClass::kOuterSync);
    peer.join();
    ASSERT_TRUE(got) << got.message();
    EXPECT_EQ((*got)[1], (std::vector<uint8_t>{2, 2}));  // the real payload, not the forged one
    EXPECT_EQ(m.members[0]->dropped_frames(), 3u);
    EXPECT_EQ(m.members[0]->counters().recv_bytes[2], 2u);  // only the member's payload counted
    std::lock_guard<std::mutex> lock(m.mu);
    ASSERT_EQ(m.events[0].size(), 3u);  // in any order: the PULL socket fair-queues its senders
    std::string all;
    for (auto& e : m.events[0]) all += e + "\n";
    EXPECT_NE(all.find("a message of 1 frames"), std::string::npos) << all;
    EXPECT_NE(all.find("from rank 1: not this run's token"), std::string::npos) << all;
    EXPECT_NE(all.find("sender clock is not a finite time"), std::string::npos) << all;
}

// A copy of a frame of a round this member has completed (a replay by whoever captured it, or a
// duplicate) is dropped and counted with an event naming the round, and the next round is the
// members' own.
TEST(DataPlane, AReplayedFrameOfACompletedRoundIsDroppedAndCounted) {
    Mesh m(2, "replay");
    std::thread peer([&] { ASSERT_TRUE(m.members[1]->all_gather({2}, LinkClass::kOuterSync)); });
    ASSERT_TRUE(m.members[0]->all_gather({1}, LinkClass::kOuterSync));
    peer.join();
    // Round 0 again, as member 1 sent it.
    push_raw(*m.ctx, m.eps[0], {header({wire::FrameKind::kRound, LinkClass::kOuterSync, true, 1, 0, 0, 0x1234, 0}), {7}});
    std::this_thread::sleep_for(100ms);
    std::thread next([&] {
        std::this_thread::sleep_for(200ms);
        ASSERT_TRUE(m.members[1]->all_gather({3}, LinkClass::kOuterSync));
    });
    auto got = m.members[0]->all_gather({1}, LinkClass::kOuterSync);
    next.join();
    ASSERT_TRUE(got) << got.message();
    EXPECT_EQ((*got)[1], (std::vector<uint8_t>{3}));
    EXPECT_EQ(m.members[0]->dropped_frames(), 1u);
    std::lock_guard<std::mutex> lock(m.mu);
    ASSERT_EQ(m.events[0].size(), 1u);
    EXPECT_NE(m.events[0][0].find("from rank 1: round 0 is over (a replayed or repeated frame)"), std::string::npos)
        << m.events[0][0];
}

TEST(DataPlane, ASilentMemberIsDeclaredLostWithinTheTimeoutButALongComputeIsNot) {
    Mesh m(3, "silent", /*silence_s=*/0.4);
    // Member 1 computes for 1.2 s (three silence timeouts) but its heartbeats go on: no loss.
    std::thread slow([&] {
        std::this_thread::sleep_for(1200ms);
        ASSERT_TRUE(m.members[1]->all_gather({1}, LinkClass::kOuterSync));
    });
    std::thread two([&] { ASSERT_TRUE(m.members[2]->all_gather({2}, LinkClass::kOuterSync)); });
    ASSERT_TRUE(m.members[0]->all_gather({0}, LinkClass::kOuterSync));
    slow.join();
    two.join();

    // A member that sends nothing (no heartbeats, no payload, no bye: as if its process hung or
    // was killed) is declared lost within the silence timeout, named.
    Mesh r(2, "nobeat", /*silence_s=*/0.4, /*heartbeat_s=*/0);
    const auto t0 = std::chrono::steady_clock::now();
    auto lost = r.members[0]->all_gather({0}, LinkClass::kOuterSync);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_FALSE(lost);
    EXPECT_NE(lost.message().find("mesh member 1 (inproc://mesh-nobeat-1) is lost"), std::string::npos)
        << lost.message();
    EXPECT_LT(waited, 2.0);
}

TEST(DataPlane, AMemberThatLeavesIsNamedAtOnce) {
    Mesh m(2, "bye", /*silence_s=*/30);
    m.members[1].reset();  // its run ended: it says bye
    const auto t0 = std::chrono::steady_clock::now();
    auto r = m.members[0]->all_gather({0}, LinkClass::kOuterSync);
    ASSERT_FALSE(r);
    EXPECT_NE(r.message().find("mesh member 1 (inproc://mesh-bye-1) left the run"), std::string::npos) << r.message();
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

TEST(DataPlane, AgreementNamesTheMemberWhoseStateDiffersAndCostsNoPayload) {
    Mesh m(3, "agree");
    std::vector<Status> got(3);
    auto run = [&](uint64_t h1) {
        std::vector<std::thread> t;
        for (int r = 0; r < 3; ++r)
            t.emplace_back([&, r] { got[static_cast<size_t>(r)] = m.members[static_cast<size_t>(r)]->agree({0, 1, 2}, r == 1 ? h1 : 42); });
        for (auto& x : t) x.join();
    };
    run(42);
    for (auto& s : got) EXPECT_TRUE(s) << s.message();
    run(43);
    for (auto& s : got) {
        ASSERT_FALSE(s);
        EXPECT_NE(s.message().find("mesh member 1 (inproc://mesh-agree-1)"), std::string::npos) << s.message();
    }
    for (auto& mem : m.members)
        for (int k = 0; k < 3; ++k) {
            EXPECT_EQ(mem->counters().sent_bytes[k], 0u);
            EXPECT_EQ(mem->counters().sent_msgs[k], 0u);
        }
}

}  // namespace
}  // namespace tw
