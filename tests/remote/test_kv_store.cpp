// The gradient group's rendezvous store (remote/kv_store.h): every op with TCPStore's semantics,
// blocking gets released by later sets, wait timeouts, malformed requests answered with errors
// while the server keeps serving, CURVE (an unknown key gets nothing, the right key works), and a
// port that a closed store frees for the next run.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <zmq.hpp>

#include "remote/curve.h"
#include "remote/kv_store.h"
#include "remote/poll.h"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;
double since_s(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
KvBytes bytes(const std::string& s) { return KvBytes(s.begin(), s.end()); }
// The value of an op that must succeed (a failure is reported and yields T{}).
template <class T>
T val(Result<T> r) {
    if (!r) {
        ADD_FAILURE() << r.message();
        return T{};
    }
    return std::move(r).value();
}

struct Store {
    std::shared_ptr<zmq::context_t> ctx = std::make_shared<zmq::context_t>();
    std::unique_ptr<KvStoreServer> server;
    std::unique_ptr<KvStoreClient> client;

    explicit Store(const std::string& ep = "inproc://kv-test", KvStoreLimits limits = {}) {
        KvServerOptions so;
        so.limits = limits;
        auto s = KvStoreServer::start(ctx, ep, std::move(so));
        EXPECT_TRUE(s) << s.message();
        server = std::move(*s);
        KvClientOptions co;
        co.op_timeout_ms = 5000;
        auto c = KvStoreClient::connect(ctx, server->endpoint(), co);
        EXPECT_TRUE(c) << c.message();
        client = std::move(*c);
    }
    ~Store() {
        client.reset();
        server.reset();
    }
};

TEST(KvStore, EveryOpFollowsTcpStore) {
    Store s;
    KvStore& kv = *s.client;
    ASSERT_TRUE(kv.set("a", bytes("one")));
    auto a = kv.get("a", 1000);
    ASSERT_TRUE(a) << a.message();
    EXPECT_EQ(*a, bytes("one"));
    ASSERT_TRUE(kv.set("a", bytes("")));  // overwrite with an empty value: the key still exists
    EXPECT_EQ(val(kv.get("a", 1000)), bytes(""));

    // add: an absent counter starts at 0, kept as decimal text like TCPStore's.
    EXPECT_EQ(val(kv.add("n", 5)), 5);
    EXPECT_EQ(val(kv.add("n", -7)), -2);
    EXPECT_EQ(val(kv.get("n", 1000)), bytes("-2"));
    ASSERT_TRUE(kv.set("text", bytes("abc")));
    auto bad_add = kv.add("text", 1);
    EXPECT_FALSE(bad_add);
    EXPECT_NE(bad_add.message().find("no decimal counter"), std::string::npos) << bad_add.message();

    // compare_set: absent + empty expected sets; a mismatch returns the current value unchanged; a
    // match swaps; absent + non-empty expected returns `expected` and leaves the key absent.
    EXPECT_EQ(val(kv.compare_set("c", {}, bytes("x"))), bytes("x"));
    EXPECT_EQ(val(kv.compare_set("c", bytes("nope"), bytes("y"))), bytes("x"));
    EXPECT_EQ(val(kv.compare_set("c", bytes("x"), bytes("y"))), bytes("y"));
    EXPECT_EQ(val(kv.get("c", 1000)), bytes("y"));
    EXPECT_EQ(val(kv.compare_set("absent", bytes("e"), bytes("d"))), bytes("e"));
    EXPECT_FALSE(val(kv.check({"absent"})));

    EXPECT_TRUE(val(kv.check({"a", "n", "c"})));
    EXPECT_FALSE(val(kv.check({"a", "zzz"})));
    EXPECT_EQ(val(kv.num_keys()), 4);  // a, n, text, c
    EXPECT_TRUE(val(kv.delete_key("text")));
    EXPECT_FALSE(val(kv.delete_key("text")));
    EXPECT_EQ(val(kv.num_keys()), 3);
    EXPECT_TRUE(kv.wait({"a", "c"}, 1000));  // already there: returns at once
    EXPECT_EQ(kv.address(), "inproc://kv-test");
}

TEST(KvStore, BlockingGetAndWaitAreReleasedByLaterWrites) {
    Store s;
    KvStore& kv = *s.client;  // one client from three threads: each request borrows its own socket
    const auto t0 = Clock::now();
    Result<KvBytes> got = Status::error("not run");
    Status waited = Status::error("not run");
    std::thread getter([&] { got = kv.get("late", 10000); });
    std::thread waiter([&] { waited = kv.wait({"late", "counter"}, 10000); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_TRUE(kv.set("late", bytes("here")));
    ASSERT_TRUE(kv.add("counter", 1));
    getter.join();
    waiter.join();
    ASSERT_TRUE(got) << got.message();
    EXPECT_EQ(*got, bytes("here"));
    EXPECT_TRUE(waited) << waited.message();
    EXPECT_GT(since_s(t0), 0.25);  // they did block until the writes ...
    EXPECT_LT(since_s(t0), 5.0);   // ... and were released by them, not by the timeout
}

TEST(KvStore, WaitAndGetTimeOutWithAnErrorNamingTheMissingKey) {
    Store s;
    ASSERT_TRUE(s.client->set("here", bytes("1")));
    auto t0 = Clock::now();
    Status w = s.client->wait({"here", "never"}, 400);
    const double waited = since_s(t0);
    EXPECT_FALSE(w);
    EXPECT_NE(w.message().find("wait timed out waiting for never"), std::string::npos) << w.message();
    EXPECT_GT(waited, 0.35);
    EXPECT_LT(waited, 2.0);
    t0 = Clock::now();
    auto g = s.client->get("never", 300);
    EXPECT_FALSE(g);
    EXPECT_NE(g.message().find("get timed out"), std::string::npos) << g.message();
    EXPECT_LT(since_s(t0), 2.0);
    // The server is still serving, and the timed-out key can still be set and read.
    ASSERT_TRUE(s.client->set("never", bytes("now")));
    EXPECT_EQ(val(s.client->get("never", 1000)), bytes("now"));
}

TEST(KvStore, NoServerIsAnErrorAfterTheTimeoutNotAHang) {
    auto ctx = std::make_shared<zmq::context_t>();
    KvClientOptions co;
    co.op_timeout_ms = 300;
    auto c = KvStoreClient::connect(ctx, "tcp://127.0.0.1:1", co);  // nobody listens on port 1
    ASSERT_TRUE(c) << c.message();
    const auto t0 = Clock::now();
    Status s = (*c)->set("k", bytes("v"));
    EXPECT_FALSE(s);
    EXPECT_NE(s.message().find("no reply to set within 300 ms"), std::string::npos) << s.message();
    EXPECT_LT(since_s(t0), 2.0);
    EXPECT_FALSE(KvStoreClient::connect(ctx, "nonsense://x", co));
}

// A raw DEALER speaking the wire format by hand, for requests the client never sends.
struct Raw {
    zmq::socket_t sock;
    Raw(zmq::context_t& ctx, const std::string& ep) : sock(ctx, zmq::socket_type::dealer) {
        sock.set(zmq::sockopt::linger, 0);
        sock.connect(ep);
    }
    static std::string header(uint8_t op, uint64_t id, int64_t timeout_ms = 0, uint8_t version = 1) {
        std::string h(24, '\0');
        std::memcpy(h.data(), "TWKV", 4);
        h[4] = static_cast<char>(version);
        h[5] = static_cast<char>(op);
        for (int i = 0; i < 8; ++i) h[8 + i] = static_cast<char>(id >> (8 * i));
        for (int i = 0; i < 8; ++i) h[16 + i] = static_cast<char>(static_cast<uint64_t>(timeout_ms) >> (8 * i));
        return h;
    }
    // Sends the frames and returns the reply: {status byte, payload}; status 255 = no reply in 2 s.
    std::pair<int, std::string> ask(const std::vector<std::string>& frames) {
        for (size_t i = 0; i < frames.size(); ++i)
            sock.send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
        if (!poll_in(sock, 2000)) return {255, ""};
        std::vector<zmq::message_t> parts;
        for (;;) {
            zmq::message_t m;
            if (!sock.recv(m, zmq::recv_flags::dontwait)) break;
            const bool more = m.more();
            parts.push_back(std::move(m));
            if (!more) break;
        }
        if (parts.size() != 2 || parts[0].size() != 16) return {254, ""};
        return {static_cast<const uint8_t*>(parts[0].data())[6], parts[1].to_string()};
    }
};

TEST(KvStore, MalformedRequestsGetErrorsAndTheServerKeepsServing) {
    KvStoreLimits lim;
    lim.max_key_bytes = 128;
    lim.max_value_bytes = 64;
    lim.max_keys_per_request = 4;
    lim.max_keys = 3;
    Store s("inproc://kv-bad", lim);
    Raw raw(*s.ctx, "inproc://kv-bad");
    const std::string k8(8, '\0');  // an 8-byte delta of 0

    struct Case {
        std::vector<std::string> frames;
        std::string expect;  // in the error text
    };
    const std::vector<Case> cases = {
        {{"short"}, "24-byte TWKV header, got 5 bytes"},
        {{"XXXX" + Raw::header(1, 1).substr(4), "k", "v"}, "TWKV header"},
        {{Raw::header(1, 2, 0, 9), "k", "v"}, "version 9"},
        {{Raw::header(99, 3)}, "unknown op 99"},
        {{Raw::header(1, 4), "k"}, "set takes 2 frames after the header, got 1"},
        {{Raw::header(3, 5), "k", "abc"}, "add's delta is 8 bytes, got 3"},
        {{Raw::header(1, 6), "", "v"}, "an empty key"},
        {{Raw::header(1, 7), std::string(100, 'k'), std::string(100, 'v')}, "a value of 100 bytes (at most 64)"},
        {{Raw::header(1, 8), std::string(129, 'k'), "v"}, "a key of 129 bytes (at most 128)"},
        {{Raw::header(5, 9), "a", "b", "c", "d", "e"}, "more than 4 keys in one request"},
        {{Raw::header(8, 10)}, "wait names no key"},
        {{Raw::header(8, 11, -5), "k"}, "timeout -5 ms is outside"},
        {{Raw::header(4, 12), "k", "e"}, "compare_set takes 3 frames after the header, got 2"},
    };
    for (const auto& c : cases) {
        auto [status, text] = raw.ask(c.frames);
        EXPECT_EQ(status, 1) << c.expect;
        EXPECT_NE(text.find(c.expect), std::string::npos) << "want \"" << c.expect << "\", got \"" << text << "\"";
    }
    EXPECT_EQ(s.server->bad_requests(), cases.size());

    // A well-formed raw request works; a full store refuses a new key but still serves.
    EXPECT_EQ(raw.ask({Raw::header(3, 20), "n", k8}).first, 0);
    ASSERT_TRUE(s.client->set("k1", bytes("1")));
    ASSERT_TRUE(s.client->set("k2", bytes("2")));
    Status full = s.client->set("k3", bytes("3"));
    EXPECT_FALSE(full);
    EXPECT_NE(full.message().find("maximum of 3 keys"), std::string::npos) << full.message();
    ASSERT_TRUE(s.client->set("k1", bytes("overwrite")));  // an existing key may still change
    EXPECT_EQ(val(s.client->get("k1", 1000)), bytes("overwrite"));
    EXPECT_EQ(val(s.client->num_keys()), 3);
}

TEST(KvStore, CurveAnswersOnlyTheAllowedKeys) {
    if (!curve_available()) GTEST_SKIP() << "libzmq without CURVE";
    auto ctx = std::make_shared<zmq::context_t>();
    auto zap = ZapHandler::start(ctx, nullptr);
    ASSERT_TRUE(zap) << zap.message();
    auto server_keys = unwrap(curve_keypair_new()), good = unwrap(curve_keypair_new()), stranger = unwrap(curve_keypair_new());
    (*zap)->allow(kZapData, {good.public_key});
    KvServerOptions so;
    so.keys = server_keys;
    auto server = KvStoreServer::start(ctx, "tcp://127.0.0.1:*", so);
    ASSERT_TRUE(server) << server.message();
    const std::string ep = (*server)->endpoint();

    auto client = [&](const CurveKeyPair& keys) {
        KvClientOptions co;
        co.keys = keys;
        co.server_key = server_keys.public_key;
        co.op_timeout_ms = 700;
        return unwrap(KvStoreClient::connect(ctx, ep, co));
    };
    auto ok = client(good);
    ASSERT_TRUE(ok->set("k", bytes("v")));
    EXPECT_EQ(val(ok->get("k", 1000)), bytes("v"));

    auto bad = client(stranger);
    Status refused = bad->set("k", bytes("stolen"));
    EXPECT_FALSE(refused);
    EXPECT_NE(refused.message().find("no reply to set"), std::string::npos) << refused.message();
    EXPECT_GE((*zap)->refused(), 1u);
    EXPECT_FALSE(bad->get("k", 200));

    // A client without CURVE gets nothing either.
    Raw plain(*ctx, ep);
    EXPECT_EQ(plain.ask({Raw::header(7, 1)}).first, 255);

    // The stranger wrote nothing; the allowed key still works.
    EXPECT_EQ(val(ok->get("k", 1000)), bytes("v"));
    EXPECT_EQ(val(ok->num_keys()), 1);
    ok.reset(), bad.reset(), server->reset();
}

TEST(KvStore, AClosedStoreFreesItsPortForTheNextRun) {
    auto ctx = std::make_shared<zmq::context_t>();
    auto first = KvStoreServer::start(ctx, "tcp://127.0.0.1:*", {});
    ASSERT_TRUE(first) << first.message();
    const std::string ep = (*first)->endpoint();
    {
        KvClientOptions co;
        co.op_timeout_ms = 2000;
        auto c = unwrap(KvStoreClient::connect(ctx, ep, co));
        ASSERT_TRUE(c->set("run", bytes("1")));
    }
    // While bound, the port is taken ...
    auto clash = KvStoreServer::start(ctx, ep, {});
    EXPECT_FALSE(clash);
    first->reset();
    // ... and once closed, the next run binds it again at once and starts empty.
    for (int run = 2; run <= 3; ++run) {
        auto again = KvStoreServer::start(ctx, ep, {});
        ASSERT_TRUE(again) << "run " << run << ": " << again.message();
        KvClientOptions co;
        co.op_timeout_ms = 2000;
        auto c = unwrap(KvStoreClient::connect(ctx, ep, co));
        EXPECT_EQ(val(c->num_keys()), 0);
        c.reset();
        again->reset();
    }
}

}  // namespace
}  // namespace tw
