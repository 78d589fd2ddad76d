// The engine's node wiring (app/engine_node.cpp) with CurveZMQ keys, end to end: four node servers
// on TCP loopback with their own keypairs and a coordinator with its own. DiLoCo with two replicas
// of two nodes: each replica's gradient group meets through its leader's CURVE store, which must
// accept the replica's second node although that node is no mesh member (a node's "data" listeners
// accept the union of its mesh peers' and its group's keys). Run twice on the same node servers (the
// first run's store and Gloo group are released, so the second binds the same ports and gives the
// same losses), then DDP on two of them.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <zmq.hpp>

#include "app/engine_node.h"
#include "core/config_io.h"
#include "core/data_root.h"
#include "core/layout.h"
#include "engine/data/dataset.h"
#include "remote/cluster.h"
#include "remote/coordinator.h"
#include "remote/curve.h"
#include "remote/node_server.h"
#include "tests/app/micro_corpus.h"

namespace tw {
namespace {

namespace fs = std::filesystem;

struct Sink : CoordinatorSink {
    std::map<std::string, double> last_loss;  // node → last train.loss
    std::vector<std::string> events;
    void on_metrics(const std::vector<MetricRecord>& rows) override {
        for (auto& r : rows)
            if (r.name == "train.loss") last_loss[r.node] = r.value;
    }
    void on_event(const EventRecord& e) override { events.push_back(e.node + ": " + e.text); }
};

// A port P with P..P+3 free (the node's control, metrics, data and store ports), below the kernel's
// ephemeral range: a port in it can be taken by any outgoing connection (this test's own coordinator
// and Gloo pairs among them) between two runs, and the store binds P+3 anew for each run.
int free_base_port(std::vector<int>& taken) {
    auto p = free_tcp_port_block(4, taken);
    if (!p) return 0;
    taken.push_back(*p);
    return *p;
}

TEST(EngineNode, GradientGroupsWithCurveKeysRunAgainOnTheSameNodes) {
    if (!curve_available()) GTEST_SKIP() << "libzmq without CURVE";
    const fs::path root = fs::temp_directory_path() / ("tw-engine-node-" + std::to_string(::getpid()));
    fs::remove_all(root);
    write_micro_corpus(root / "corpus");

    const CurveKeyPair coord_keys = unwrap(curve_keypair_new());
    std::vector<CurveKeyPair> node_keys;
    std::vector<std::string> endpoints;
    std::vector<std::unique_ptr<NodeServer>> nodes;
    std::vector<std::thread> serving;
    std::atomic<bool> quit{false};
    std::vector<int> taken;
    for (int i = 0; i < 4; ++i) {
        node_keys.push_back(unwrap(curve_keypair_new()));
        const int port = free_base_port(taken);
        ASSERT_GT(port, 0);
        NodeOptions o;
        o.listen = "tcp://127.0.0.1:" + std::to_string(port);
        o.ctx = std::make_shared<zmq::context_t>();
        o.keys = node_keys.back();
        o.allowed_coordinators = {coord_keys.public_key};
        o.data_root = root.string();
        o.log = [](const std::string&) {};
        nodes.push_back(unwrap(NodeServer::bind(o, cli::engine_worker_factory(o.ctx))));
        endpoints.push_back(o.listen);
    }
    for (auto& n : nodes) serving.emplace_back([&quit, s = n.get()] { EXPECT_TRUE(s->serve(&quit)); });

    // Paths relative to the nodes' data root (the coordinator's side resolves them under it too).
    const std::string toml = "[data]\ncorpus = \"corpus\"\ncache_dir = \"cache\""
                             "\nvocab_size = 200\n[model]\nd_model = 32\nn_layer = 2\nn_head = 2\nseq_len = 32\n"
                             "[train]\nbatch_size = 4\nwarmup_steps = 2\neval_every = 10\nsteps = 6\n"
                             "[outer]\nreplicas = 2\ninner_steps = 3\n";
    const RunConfig diloco = unwrap(parse_config(toml, "test", {"outer.algorithm=diloco", "cluster.nodes_per_replica=2"}));
    const RunConfig ddp = unwrap(parse_config(toml, "test", {"outer.algorithm=ddp"}));

    // The coordinator's side prepares the shared data cache once, as `thinwire run` does, so the
    // nodes do not race to train the tokenizer.
    RunConfig local = diloco;
    ASSERT_TRUE(confine_paths(local, std::filesystem::canonical(root).string()));
    ASSERT_TRUE(prepare_data(local.data));

    std::vector<std::map<std::string, double>> losses;
    for (int run = 1; run <= 3; ++run) {
        const RunConfig& cfg = run < 3 ? diloco : ddp;
        auto ctx = std::make_shared<zmq::context_t>();
        CoordinatorOptions co;
        co.keys = coord_keys;
        for (auto& k : node_keys) co.node_keys.push_back(k.public_key);
        auto coord = unwrap(Coordinator::connect(ctx, endpoints, co));
        auto roles = unwrap(assign_roles(cfg, endpoints, free_tcp_port));
        ASSERT_EQ(roles[0].grad_group.size, 2);
        if (run < 3) {
            ASSERT_EQ(roles[1].mesh_rank, -1);  // the replica's second node: group only
        }
        const Status configured = coord->configure(roles, to_toml(cfg));
        ASSERT_TRUE(configured) << "run " << run << ": " << configured.message();
        ASSERT_TRUE(coord->start());
        Sink sink;
        std::optional<RunOutcome> o;
        for (int i = 0; i < 3000 && !o; ++i) o = coord->poll(sink, 20);
        ASSERT_TRUE(o) << "run " << run << " did not end";
        std::string ev;
        for (auto& e : sink.events) ev += e + "\n";
        ASSERT_EQ(o->status, RunStatus::kFinished) << "run " << run << ": " << o->reason << "\n" << ev;
        EXPECT_EQ(sink.last_loss.size(), run < 3 ? 4u : 2u);
        losses.push_back(sink.last_loss);
    }
    EXPECT_EQ(losses[0], losses[1]);  // same seed, same numbers, on the reused nodes

    quit = true;
    for (auto& t : serving) t.join();
    nodes.clear();
    fs::remove_all(root);
}

}  // namespace
}  // namespace tw
