// Nodes that joined a relay found the ways a user meets them: the workbench's "Find node" asks the
// layout's relay by key (remote/node_probe.h); a run whose coordinator hosts the relay itself
// (cluster.relay_listen, coordinator/relay_joins.h) waits for the node to join it; and a run finds a
// node listed by endpoint and key at the relay when it does not answer where it is listed. Real node servers, relays and tunnels on loopback.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <zmq.hpp>

#include "coordinator/relay_joins.h"
#include "remote/cluster.h"
#include "remote/curve.h"
#include "remote/node_probe.h"
#include "remote/node_server.h"
#include "remote/relay.h"
#include "remote/tunnel_client.h"

namespace tw {
namespace {

WorkerFactory no_workers() {
    return [](const RunConfig&, const NodeRole&, const NodeSite&) {
        return Result<std::unique_ptr<Worker>>::error("this test's node runs nothing");
    };
}

// A keyed node server on loopback (serving on its own thread) and, once `join` is called, its
// tunnel to a relay.
struct JoinedNode {
    JoinedNode(const CurveKeyPair& coordinator, const std::filesystem::path& root) {
        keys = unwrap(curve_keypair_new());
        port = unwrap(free_tcp_port_block(4));
        NodeOptions o;
        o.listen = "tcp://127.0.0.1:" + std::to_string(port);
        o.ctx = std::make_shared<zmq::context_t>();
        o.keys = keys;
        o.allowed_coordinators = {coordinator.public_key};
        o.data_root = root.string();
        o.log = [](const std::string&) {};
        server = unwrap(NodeServer::bind(o, no_workers()));
        thread = std::thread([this] { (void)server->serve(&quit); });
    }
    ~JoinedNode() {
        tunnel.reset();
        quit = true;
        thread.join();
    }
    void join(const std::string& relay, const std::string& relay_key) {
        TunnelOptions t;
        t.relay = relay;
        t.relay_key = relay_key;
        t.keys = keys;
        t.local_host = "127.0.0.1";
        t.local_port = port;
        tunnel = unwrap(TunnelClient::start(t));
    }
    CurveKeyPair keys;
    int port = 0;
    std::unique_ptr<NodeServer> server;
    std::unique_ptr<TunnelClient> tunnel;
    std::atomic<bool> quit{false};
    std::thread thread;
};

// A relay on loopback with `keys`, admitting `allowed`.
std::unique_ptr<Relay> loopback_relay(const CurveKeyPair& keys, std::vector<std::string> allowed) {
    RelayOptions ro;
    ro.listen = "tcp://127.0.0.1:*";
    ro.keys = keys;
    ro.allowed = std::move(allowed);
    return unwrap(Relay::start(ro));
}

// The nodes as a run's coordinator (keys `coord`) greets them at `endpoints`, marked by `joins`
// as the workbench shows them.
Result<std::vector<NodeInfo>> greeted(const CurveKeyPair& coord, const std::vector<std::string>& endpoints,
                                      const std::vector<std::string>& node_keys, const RelayJoins& joins) {
    CoordinatorOptions o;
    o.keys = coord;
    o.node_keys = node_keys;
    auto c = Coordinator::connect(std::make_shared<zmq::context_t>(), endpoints, o);
    if (!c) return c.status();
    std::vector<NodeInfo> nodes = (*c)->nodes();
    joins.mark(nodes);
    return nodes;
}

struct TempDir {
    TempDir() {
        std::string t = (std::filesystem::temp_directory_path() / "tw-probe-XXXXXX").string();
        path = mkdtemp(t.data());
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    std::filesystem::path path;
};

TEST(NodeProbe, FindsANodeByItsKeyThroughTheLayoutsRelayAndNamesWhatIsMissing) {
    if (!curve_available()) GTEST_SKIP() << "libzmq without CURVE";
    TempDir dir;
    const CurveKeyPair coord = unwrap(curve_keypair_new()), relay_keys = unwrap(curve_keypair_new());
    ASSERT_TRUE(write_keypair((dir.path / "coord").string(), coord));
    JoinedNode node(coord, dir.path);

    auto relay = loopback_relay(relay_keys, {node.keys.public_key, coord.public_key});
    node.join(relay->endpoint(), relay_keys.public_key);

    ClusterConfig c;
    c.relay = relay->endpoint();
    c.relay_key = relay_keys.public_key;
    c.coordinator_key = (dir.path / "coord" / "secret.key").string();
    auto p = probe_node("key:" + node.keys.public_key, c, 10000);
    ASSERT_TRUE(p) << p.message();
    EXPECT_TRUE(p->joined);
    EXPECT_EQ(p->entry, "key:" + node.keys.public_key);
    EXPECT_EQ(p->reached_at, node.tunnel->public_endpoint());
    EXPECT_NE(p->reached_at, "tcp://127.0.0.1:" + std::to_string(node.port));  // the relay's port, not the node's
    EXPECT_EQ(p->info.state, "idle");
    EXPECT_FALSE(p->info.version.empty());

    // The same node dialled directly with the layout's keys for its endpoint.
    c.endpoints = {"tcp://127.0.0.1:" + std::to_string(node.port)};
    c.node_keys = {node.keys.public_key};
    auto direct = probe_node(c.endpoints[0], c, 10000);
    ASSERT_TRUE(direct) << direct.message();
    EXPECT_FALSE(direct->joined);
    EXPECT_EQ(direct->info.host, p->info.host);
    EXPECT_EQ(direct->info.pid, p->info.pid);

    // A key nobody joined with: the relay's wait names it when the time is up.
    const CurveKeyPair absent = unwrap(curve_keypair_new());
    auto missing = probe_node("key:" + absent.public_key, c, 1000);
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.message().find(key_tag(absent.public_key)), std::string::npos) << missing.message();

    // What the layout lacks is named.
    ClusterConfig no_relay = c;
    no_relay.relay.clear();
    auto r1 = probe_node("key:" + node.keys.public_key, no_relay, 1000);
    ASSERT_FALSE(r1);
    EXPECT_NE(r1.message().find("cluster.relay"), std::string::npos) << r1.message();
    ClusterConfig no_keys = c;
    no_keys.coordinator_key.clear();
    auto r2 = probe_node("key:" + node.keys.public_key, no_keys, 1000);
    ASSERT_FALSE(r2);
    EXPECT_NE(r2.message().find("cluster.coordinator_key"), std::string::npos) << r2.message();
}

TEST(RelayJoins, ACoordinatorHostingTheRelayWaitsForTheNodeToJoinAndMarksIt) {
    if (!curve_available()) GTEST_SKIP() << "libzmq without CURVE";
    TempDir dir;
    const CurveKeyPair coord = unwrap(curve_keypair_new());
    JoinedNode node(coord, dir.path);
    // The node dials the coordinator's relay before it exists, as a node started first does.
    const std::string relay = "tcp://127.0.0.1:" + std::to_string(unwrap(free_tcp_port_block(1)));
    node.join(relay, coord.public_key);

    RunConfig cfg;
    cfg.cluster.mode = "remote";
    cfg.cluster.relay_listen = relay;
    cfg.cluster.join_timeout_s = 30;
    std::vector<std::string> endpoints = {"key:" + node.keys.public_key}, node_keys = {""};
    std::vector<std::string> log;
    auto joins = RelayJoins::resolve(cfg, coord, endpoints, node_keys, [&](const std::string& l) { log.push_back(l); },
                                     [] { return false; });
    ASSERT_TRUE(joins) << joins.message();
    ASSERT_FALSE(joins->empty());
    EXPECT_EQ(endpoints[0], node.tunnel->public_endpoint());
    EXPECT_EQ(node_keys[0], node.keys.public_key);

    // The run's coordinator reaches the node through its own relay, and the workbench sees it as joined.
    auto nodes = greeted(coord, endpoints, node_keys, *joins);
    ASSERT_TRUE(nodes) << nodes.message();
    EXPECT_EQ((*nodes)[0].joined_key, node.keys.public_key);
    const std::vector<std::string> report = joins->report({"replica-0"});
    ASSERT_EQ(report.size(), 1u);
    EXPECT_NE(report[0].find("replica-0"), std::string::npos) << report[0];
}

// A node listed by endpoint and key that does not answer there (behind a NAT, it joined the
// layout's relay instead) is learned unreachable and found at the relay; one that answers stays
// where it is listed.
TEST(RelayJoins, AListedNodeThatDoesNotAnswerIsLookedForAtTheRelayByItsKey) {
    if (!curve_available()) GTEST_SKIP() << "libzmq without CURVE";
    TempDir dir;
    const CurveKeyPair coord = unwrap(curve_keypair_new()), relay_keys = unwrap(curve_keypair_new());
    JoinedNode home(coord, dir.path), direct(coord, dir.path);
    auto relay = loopback_relay(relay_keys, {home.keys.public_key, coord.public_key});
    home.join(relay->endpoint(), relay_keys.public_key);

    RunConfig cfg;
    cfg.cluster.mode = "remote";
    cfg.cluster.relay = relay->endpoint();
    cfg.cluster.relay_key = relay_keys.public_key;
    cfg.cluster.join_timeout_s = 30;
    // The home node listed where nothing answers (its address inside the home, say).
    const std::string unreachable = "tcp://127.0.0.1:" + std::to_string(unwrap(free_tcp_port_block(4)));
    const std::string direct_ep = "tcp://127.0.0.1:" + std::to_string(direct.port);
    std::vector<std::string> endpoints = {direct_ep, unreachable};
    std::vector<std::string> node_keys = {direct.keys.public_key, home.keys.public_key};
    std::vector<std::string> log;
    auto joins = RelayJoins::resolve(cfg, coord, endpoints, node_keys, [&](const std::string& l) { log.push_back(l); },
                                     [] { return false; });
    ASSERT_TRUE(joins) << joins.message();
    EXPECT_EQ(endpoints[0], direct_ep);
    EXPECT_EQ(endpoints[1], home.tunnel->public_endpoint());
    std::string all;
    for (const auto& l : log) all += l + "\n";
    EXPECT_NE(all.find("node 1 does not answer at " + unreachable), std::string::npos) << all;
    EXPECT_EQ(all.find("node 0 does not answer"), std::string::npos) << all;

    auto nodes = greeted(coord, endpoints, node_keys, *joins);
    ASSERT_TRUE(nodes) << nodes.message();
    EXPECT_TRUE((*nodes)[0].joined_key.empty());
    EXPECT_EQ((*nodes)[1].joined_key, home.keys.public_key);
}

}  // namespace
}  // namespace tw
