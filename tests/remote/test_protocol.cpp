// The control protocol's error cases: every bad message gets an error reply naming the problem,
// and the node keeps serving afterwards.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "remote/node_server.h"
#include "remote/protocol.h"

namespace tw {
namespace {

std::vector<zmq::message_t> frames_of(const std::string& header) {
    std::vector<zmq::message_t> f;
    f.emplace_back(header.data(), header.size());
    return f;
}

TEST(Protocol, EncodeDecodeRoundTripKeepsBodyAndBlobs) {
    Message m;
    m.kind = MsgKind::kConfigure;
    m.body = {{"id", 7}, {"x", "y"}};
    m.blobs = {{1, 2, 3}, {}};
    auto back = decode(encode(m));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->kind, MsgKind::kConfigure);
    EXPECT_EQ(back->body["id"], 7);
    EXPECT_EQ(back->body["x"], "y");
    EXPECT_FALSE(back->body.contains("v"));
    ASSERT_EQ(back->blobs.size(), 2u);
    EXPECT_EQ(back->blobs[0], (std::vector<uint8_t>{1, 2, 3}));
}

TEST(Protocol, DecodeNamesEachProblem) {
    EXPECT_NE(decode(frames_of("{not json")).message().find("not valid JSON"), std::string::npos);
    EXPECT_NE(decode(frames_of("[1,2]")).message().find("not a JSON object"), std::string::npos);
    EXPECT_NE(decode(frames_of(R"({"v":1})")).message().find("no string \"kind\""), std::string::npos);
    EXPECT_NE(decode(frames_of(R"({"kind":"hello"})")).message().find("protocol version"), std::string::npos);
    EXPECT_NE(decode(frames_of(R"({"v":1,"kind":"launch"})")).message().find("unknown message kind \"launch\""),
              std::string::npos);
    EXPECT_NE(decode(frames_of(R"({"v":9,"kind":"hello"})")).message().find("protocol version 9 is not supported"),
              std::string::npos);
    const std::string big(2000, ' ');
    EXPECT_NE(decode(frames_of(R"({"v":1,"kind":"hello"})" + big), 1024).message().find("exceeds the limit of 1024"),
              std::string::npos);
}

TEST(Protocol, RoleRoundTripAndRangeCheck) {
    NodeRole r;
    r.name = "replica-1.1";
    r.replica = 1;
    r.replicas = 2;
    r.rank = 1;
    r.replica_nodes = 2;
    r.mesh_endpoints = {"inproc://a", "inproc://b"};
    r.mesh_rank = -1;
    r.grad_group = {"127.0.0.1", 4000, 1, 2};
    auto back = role_from_json(role_to_json(r));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->name, r.name);
    EXPECT_EQ(back->grad_group.port, 4000);
    auto j = role_to_json(r);
    j["rank"] = 5;
    EXPECT_NE(role_from_json(j).message().find("out of range"), std::string::npos);
    j.erase("replica");
    EXPECT_NE(role_from_json(j).message().find("replica"), std::string::npos);
}

TEST(Protocol, NonLoopbackBindNeedsCurveKeys) {
    EXPECT_TRUE(check_bind_allowed("tcp://127.0.0.1:5555", false));
    EXPECT_TRUE(check_bind_allowed("inproc://x", false));
    EXPECT_NE(check_bind_allowed("tcp://0.0.0.0:5555", false).message().find("without CurveZMQ keys"),
              std::string::npos);
    EXPECT_TRUE(check_bind_allowed("tcp://10.1.2.3:5555", true));  // with keys any interface
    EXPECT_NE(check_bind_allowed("tcp://localhost:5555", false).message().find("use tcp://127.0.0.1"),
              std::string::npos);
    EXPECT_FALSE(NodeServer::bind({"tcp://0.0.0.0:5599"}, nullptr));
}

// A node on inproc:// with a 64 KiB message limit and a factory that always refuses.
class NodeFixture : public ::testing::Test {
protected:
    void SetUp() override {
        ctx_ = std::make_shared<zmq::context_t>();
        NodeOptions o;
        o.listen = "inproc://proto-test";
        o.ctx = ctx_;
        o.max_message_bytes = 64 * 1024;
        auto s = NodeServer::bind(o, [](const RunConfig&, const NodeRole&, const NodeSite&) {
            return Result<std::unique_ptr<Worker>>::error("no engine in this test");
        });
        ASSERT_TRUE(s) << s.message();
        server_ = std::move(*s);
        thread_ = std::thread([this] { (void)server_->serve(&stop_); });
        dealer_ = zmq::socket_t(*ctx_, zmq::socket_type::dealer);
        dealer_.set(zmq::sockopt::rcvtimeo, 5000);
        dealer_.connect("inproc://proto-test");
    }
    void TearDown() override {
        stop_ = true;
        thread_.join();
        dealer_.close();
    }
    nlohmann::json ask_raw(std::vector<zmq::message_t> frames) {
        for (size_t i = 0; i < frames.size(); ++i)
            dealer_.send(frames[i], i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
        std::vector<zmq::message_t> reply;
        EXPECT_TRUE(zmq::recv_multipart(dealer_, std::back_inserter(reply)));
        auto m = decode(reply);
        EXPECT_TRUE(m) << m.message();
        nlohmann::json j = m->body;
        j["kind"] = to_string(m->kind);
        return j;
    }
    nlohmann::json ask(MsgKind k, nlohmann::json body = nlohmann::json::object()) {
        Message m;
        m.kind = k;
        m.body = std::move(body);
        return ask_raw(encode(m));
    }

    std::shared_ptr<zmq::context_t> ctx_;
    std::unique_ptr<NodeServer> server_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    zmq::socket_t dealer_;
};

TEST_F(NodeFixture, HelloReportsCapabilities) {
    auto caps = ask(MsgKind::kHello, {{"id", 1}});
    EXPECT_EQ(caps["kind"], "capabilities");
    EXPECT_EQ(caps["id"], 1);
    EXPECT_EQ(caps["protocol"], kProtocolVersion);
    EXPECT_GE(caps["threads"].get<int>(), 1);
    EXPECT_GT(caps["memory_bytes"].get<uint64_t>(), 0u);
    EXPECT_EQ(caps["state"], "idle");
}

TEST_F(NodeFixture, BadMessagesGetErrorRepliesAndTheNodeKeepsServing) {
    auto e1 = ask_raw(frames_of("{garbage"));
    EXPECT_EQ(e1["kind"], "error");
    EXPECT_NE(e1["error"].get<std::string>().find("not valid JSON"), std::string::npos);
    auto e2 = ask_raw(frames_of(R"({"v":1,"kind":"explode"})"));
    EXPECT_NE(e2["error"].get<std::string>().find("unknown message kind \"explode\""), std::string::npos);
    auto e3 = ask_raw(frames_of(R"({"v":2,"kind":"hello"})"));
    EXPECT_NE(e3["error"].get<std::string>().find("protocol version 2"), std::string::npos);
    Message big;
    big.kind = MsgKind::kHello;
    big.blobs.push_back(std::vector<uint8_t>(100 * 1024, 7));
    auto e4 = ask_raw(encode(big));
    EXPECT_NE(e4["error"].get<std::string>().find("exceeds the limit of 65536 bytes"), std::string::npos);
    auto e5 = ask(MsgKind::kMetrics);
    EXPECT_NE(e5["error"].get<std::string>().find("does not accept \"metrics\""), std::string::npos);
    EXPECT_EQ(ask(MsgKind::kHello)["kind"], "capabilities");  // still serving
}

TEST_F(NodeFixture, CommandsOutOfOrderAndBadConfigAreErrors) {
    EXPECT_NE(ask(MsgKind::kStart)["error"].get<std::string>().find("start needs a configured node"), std::string::npos);
    EXPECT_NE(ask(MsgKind::kPause)["error"].get<std::string>().find("pause needs a running node"), std::string::npos);
    EXPECT_NE(ask(MsgKind::kConfigure, {{"role", {}}})["error"].get<std::string>().find("no config_toml"),
              std::string::npos);
    auto bad = ask(MsgKind::kConfigure, {{"config_toml", "[model]\nd_modle = 3\n"}, {"role", {}}});
    EXPECT_NE(bad["error"].get<std::string>().find("model.d_modle: unknown key"), std::string::npos);
    NodeRole r;
    r.name = "replica-0";
    auto refused = ask(MsgKind::kConfigure, {{"config_toml", ""}, {"role", role_to_json(r)}});
    EXPECT_NE(refused["error"].get<std::string>().find("no engine in this test"), std::string::npos);
    EXPECT_EQ(ask(MsgKind::kStatus)["state"], "idle");
}

// A node with a data root (issue 12): a configure naming a path outside it is refused before the
// worker factory sees it, the node keeps serving, and an accepted one reaches the factory resolved
// under the root.
TEST(NodeDataRoot, PathsOutsideTheRootAreRefusedAndTheNodeKeepsServing) {
    namespace fs = std::filesystem;
    const fs::path base = fs::temp_directory_path() / ("tw-node-root-" + std::to_string(getpid()));
    fs::create_directories(base / "root");
    fs::create_directories(base / "outside");
    fs::create_directory_symlink(base / "outside", base / "root" / "out");
    const std::string root = fs::canonical(base / "root").string();

    auto ctx = std::make_shared<zmq::context_t>();
    NodeOptions o;
    o.listen = "inproc://proto-test-root";
    o.ctx = ctx;
    o.data_root = root;
    std::atomic<int> calls{0};
    std::string seen_corpus, seen_cache;  // written by the server thread before its reply
    auto s = NodeServer::bind(o, [&](const RunConfig& c, const NodeRole&, const NodeSite& site) {
        ++calls;
        seen_corpus = c.data.corpus;
        seen_cache = c.data.cache_dir;
        EXPECT_EQ(site.data_root, root);
        return Result<std::unique_ptr<Worker>>::error("stop here");
    });
    ASSERT_TRUE(s) << s.message();
    std::atomic<bool> stop{false};
    std::thread serving([&] { (void)(*s)->serve(&stop); });
    zmq::socket_t dealer(*ctx, zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::rcvtimeo, 5000);
    dealer.connect(o.listen);
    auto ask = [&](MsgKind k, nlohmann::json body) {
        Message m;
        m.kind = k;
        m.body = std::move(body);
        auto frames = encode(m);
        for (size_t i = 0; i < frames.size(); ++i)
            dealer.send(frames[i], i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
        std::vector<zmq::message_t> reply;
        EXPECT_TRUE(zmq::recv_multipart(dealer, std::back_inserter(reply)));
        auto back = decode(reply);
        EXPECT_TRUE(back) << back.message();
        nlohmann::json j = back->body;
        j["kind"] = to_string(back->kind);
        return j;
    };
    NodeRole r;
    r.name = "replica-0";
    auto configure = [&](const std::string& toml) {
        auto j = ask(MsgKind::kConfigure, {{"config_toml", toml}, {"role", role_to_json(r)}});
        return j.contains("error") ? j["error"].get<std::string>() : std::string("(no error)");
    };
    EXPECT_EQ(configure("[data]\ncorpus = \"/etc/passwd\"\n"),
              "configure: data.corpus = \"/etc/passwd\": an absolute path; paths are relative to the node's data root");
    EXPECT_EQ(configure("[data]\ncorpus = \"../../etc/passwd\"\n"),
              "configure: data.corpus = \"../../etc/passwd\": leaves the data root (through \"..\" or a symbolic link)");
    EXPECT_NE(configure("[data]\ncache_dir = \"out\"\n").find("data.cache_dir = \"out\": leaves the data root"),
              std::string::npos);
    EXPECT_NE(configure("[train]\nckpt_path = \"/tmp/x.ckpt\"\n").find("train.ckpt_path = \"/tmp/x.ckpt\""),
              std::string::npos);
    EXPECT_EQ(calls.load(), 0) << "a refused configure reached the worker factory";
    EXPECT_EQ(ask(MsgKind::kHello, nlohmann::json::object())["kind"], "capabilities");  // still serving
    EXPECT_EQ(ask(MsgKind::kStatus, nlohmann::json::object())["state"], "idle");
    // Accepted: the factory gets the paths resolved under the root; the keyword corpus stays one.
    EXPECT_EQ(configure("[data]\ncorpus = \"texts/../corpus.txt\"\ncache_dir = \".cache/thinwire\"\n"),
              "configure: stop here");
    EXPECT_EQ(calls.load(), 1);
    EXPECT_EQ(seen_corpus, root + "/corpus.txt");
    EXPECT_EQ(seen_cache, root + "/.cache/thinwire");
    EXPECT_EQ(configure(""), "configure: stop here");
    EXPECT_EQ(seen_corpus, "brown");
    EXPECT_EQ(seen_cache, root + "/.cache/thinwire");
    stop = true;
    serving.join();
    dealer.close();
    fs::remove_all(base);
}

}  // namespace
}  // namespace tw
