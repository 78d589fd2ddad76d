// Coordinator ⇄ node servers on threads over inproc://, driving a scripted worker (the engine's
// worker is exercised end to end by tests/app/run_test.sh): metrics relay, pause/resume, stop,
// which failure names a failed run.
#include <gtest/gtest.h>

#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "core/config_io.h"
#include "core/layout.h"
#include "remote/cluster.h"
#include "remote/coordinator.h"
#include "remote/node_server.h"
#include "remote/protocol.h"
#include "tests/remote/node_request.h"

namespace tw {
namespace {

// Reports one train.loss per step, `steps` steps 5 ms apart, honouring pause and stop.
class CountingWorker : public Worker {
public:
    CountingWorker(NodeRole role, int64_t steps) : role_(std::move(role)), steps_(steps) {}
    Result<WorkerSummary> run(WorkerControl& ctl, MetricSink& sink) override {
        int64_t s = 0;
        sink.event({0, role_.name, EventLevel::kWarning, "start", "counting to " + std::to_string(steps_)});
        while (s < steps_ && ctl.wait_while_paused()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            ++s;
            sink.metrics({{role_.name, s, -1, 0, 0, "train.loss", 1.0 / static_cast<double>(s)}});
            ctl.step = s;
        }
        return WorkerSummary{{"steps", static_cast<double>(s)}};
    }

private:
    NodeRole role_;
    int64_t steps_;
};

// Fails after `delay_ms` with `error`.
class FailingWorker : public Worker {
public:
    FailingWorker(int delay_ms, std::string error) : delay_ms_(delay_ms), error_(std::move(error)) {}
    Result<WorkerSummary> run(WorkerControl&, MetricSink&) override {
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
        return Status::error(error_);
    }

private:
    int delay_ms_;
    std::string error_;
};

using MakeWorker = std::function<std::unique_ptr<Worker>(const NodeRole&)>;

struct CollectSink : CoordinatorSink {
    void on_metrics(const std::vector<MetricRecord>& r) override { rows.insert(rows.end(), r.begin(), r.end()); }
    void on_event(const EventRecord& e) override { events.push_back(e); }
    std::vector<MetricRecord> rows;
    std::vector<EventRecord> events;
};

struct Cluster {
    explicit Cluster(int n, int64_t steps)
        : Cluster(n, [steps](const NodeRole& r) { return std::make_unique<CountingWorker>(r, steps); }) {}
    Cluster(int n, MakeWorker make) {
        ctx = std::make_shared<zmq::context_t>();
        NodeOptions o;
        o.ctx = ctx;
        local = unwrap(LocalCluster::start_threads(n, o, [make](const RunConfig&, const NodeRole& r, const NodeSite&) {
            return Result<std::unique_ptr<Worker>>(make(r));
        }));
        CoordinatorOptions co;
        co.heartbeat_s = 0.05;
        co.heartbeat_timeout_s = 2;
        coord = unwrap(Coordinator::connect(ctx, local->endpoints(), co));
        RunConfig cfg;
        cfg.outer.algorithm = "diloco";
        cfg.outer.replicas = n;
        roles = unwrap(assign_roles(cfg, local->endpoints(), free_tcp_port));
        check(coord->configure(roles, ""));
    }
    RunOutcome wait(CollectSink& sink) {
        for (int i = 0; i < 500; ++i)
            if (auto o = coord->poll(sink, 20)) return *o;
        return {RunStatus::kFailed, "test timed out"};
    }
    std::shared_ptr<zmq::context_t> ctx;
    std::unique_ptr<LocalCluster> local;
    std::unique_ptr<Coordinator> coord;
    std::vector<NodeRole> roles;
};

TEST(Coordinator, RelaysEveryMetricAndTheSummaries) {
    Cluster c(3, 20);
    EXPECT_EQ(c.coord->nodes()[0].state, "configured");
    ASSERT_TRUE(c.coord->start());
    CollectSink sink;
    const RunOutcome o = c.wait(sink);
    EXPECT_EQ(o.status, RunStatus::kFinished) << o.reason;
    EXPECT_EQ(sink.rows.size(), 60u);
    for (auto& n : c.coord->nodes()) EXPECT_EQ(n.summary.at("steps"), 20);
    EXPECT_EQ(c.coord->nodes()[2].name, "replica-2");
    ASSERT_EQ(sink.events.size(), 3u);  // an event keeps its kind, level and text across the wire
    EXPECT_EQ(sink.events[0].kind, "start");
    EXPECT_EQ(sink.events[0].level, EventLevel::kWarning);
    EXPECT_EQ(sink.events[0].text, "counting to 20");
}

TEST(Coordinator, PauseHoldsTheStepAndResumeFinishes) {
    Cluster c(2, 60);
    ASSERT_TRUE(c.coord->start());
    CollectSink sink;
    (void)c.coord->poll(sink, 60);
    ASSERT_TRUE(c.coord->pause());
    (void)c.coord->poll(sink, 100);  // whatever was in flight arrives
    const size_t held = sink.rows.size();
    (void)c.coord->poll(sink, 300);
    EXPECT_EQ(sink.rows.size(), held) << "a paused node kept stepping";
    EXPECT_LT(held, 120u);
    ASSERT_TRUE(c.coord->resume());
    EXPECT_EQ(c.wait(sink).status, RunStatus::kFinished);
    EXPECT_EQ(sink.rows.size(), 120u);
}

TEST(Coordinator, StopEndsTheRunAsInterrupted) {
    Cluster c(2, 100000);
    ASSERT_TRUE(c.coord->start());
    CollectSink sink;
    (void)c.coord->poll(sink, 50);
    ASSERT_TRUE(c.coord->stop());
    const RunOutcome o = c.wait(sink);
    EXPECT_EQ(o.status, RunStatus::kInterrupted);
    EXPECT_LT(c.coord->nodes()[0].summary.at("steps"), 100000);
}

// The first failure to arrive is the run's reason, whatever the nodes' order: a node whose own
// check failed, not the peer that failed later because it left the mesh.
TEST(Coordinator, TheFirstFailureToArriveIsTheReason) {
    Cluster c(3, [](const NodeRole& r) -> std::unique_ptr<Worker> {
        if (r.name == "replica-1") return std::make_unique<FailingWorker>(0, "its data differ");
        if (r.name == "replica-0") return std::make_unique<FailingWorker>(100, "mesh member 1 left the run");
        return std::make_unique<CountingWorker>(r, 100000);
    });
    ASSERT_TRUE(c.coord->start());
    CollectSink sink;
    // Both failures arrive within one poll; the nodes are checked in order 0, 1, 2 afterwards.
    std::optional<RunOutcome> o = c.coord->poll(sink, 400);
    ASSERT_TRUE(o);
    EXPECT_EQ(o->status, RunStatus::kFailed);
    EXPECT_EQ(o->reason, "replica-1: its data differ");
    EXPECT_TRUE(c.coord->nodes()[0].done) << "replica-0's failure did not arrive in the same poll";
    (void)c.coord->stop();
}

// A coordinator stalled past the heartbeat timeout (SIGSTOP, a VM stall): every node stops
// itself for want of its word, and the run is interrupted (the nodes lost their coordinator) — the
// coordinator counts none of them lost, since the silence was its own.
TEST(Coordinator, ACoordinatorStalledPastTheTimeoutEndsTheRunInterruptedLosingNoNode) {
    Cluster c(3, 100000);
    c.coord->set_loss_policy({0, 1, 2}, 1);
    ASSERT_TRUE(c.coord->start());
    CollectSink sink;
    for (int i = 0; i < 10; ++i) ASSERT_FALSE(c.coord->poll(sink, 20));
    std::this_thread::sleep_for(std::chrono::milliseconds(2600));  // no poll: no heartbeat goes out
    const RunOutcome o = c.wait(sink);
    EXPECT_EQ(o.status, RunStatus::kInterrupted) << o.reason;
    // The reason names a node and why it stopped, not a stop nobody asked for.
    EXPECT_NE(o.reason.find("stopped at step"), std::string::npos) << o.reason;
    EXPECT_NE(o.reason.find("hearing nothing from the coordinator while it stalled"), std::string::npos) << o.reason;
    for (auto& n : c.coord->nodes()) {
        EXPECT_FALSE(n.lost) << n.name;
        EXPECT_TRUE(n.coordinator_lost) << n.name;
    }
    for (auto& e : sink.events) EXPECT_NE(e.kind, "node-lost") << e.text;
}

// A node's end says whether it stopped itself for want of its coordinator's word (the coordinator
// tells a one-way link failure from a stop it asked for by it) or was stopped on request.
TEST(NodeServer, ANodeThatHearsNothingFromItsCoordinatorStopsAndSaysSo) {
    auto ctx = std::make_shared<zmq::context_t>();
    NodeOptions o;
    o.listen = "inproc://deaf-node";
    o.ctx = ctx;
    auto server = unwrap(NodeServer::bind(o, [](const RunConfig&, const NodeRole& r, const NodeSite&) {
        return Result<std::unique_ptr<Worker>>(std::make_unique<CountingWorker>(r, 1000000));
    }));
    std::atomic<bool> stop{false};
    std::thread serving([&] { (void)server->serve(&stop); });
    zmq::socket_t dealer(*ctx, zmq::socket_type::dealer), sub(*ctx, zmq::socket_type::sub);
    dealer.set(zmq::sockopt::rcvtimeo, 5000);
    dealer.connect(o.listen);
    sub.set(zmq::sockopt::subscribe, "");
    sub.set(zmq::sockopt::rcvtimeo, 5000);
    sub.connect(unwrap(derive_endpoints(o.listen)).metrics);
    const auto ask = [&](MsgKind k, nlohmann::json body) { return unwrap(request_node(dealer, k, std::move(body))); };
    const auto done = [&]() -> nlohmann::json {  // the node's `done`, as its coordinator reads it
        for (;;) {
            std::vector<zmq::message_t> frames;
            if (!zmq::recv_multipart(sub, std::back_inserter(frames))) return nullptr;
            auto m = decode(frames);
            if (m && m->kind == MsgKind::kDone) return m->body;
        }
    };
    NodeRole role;
    role.name = "replica-1";
    const auto run = [&](double timeout_s) {
        Message ok = ask(MsgKind::kConfigure, {{"config_toml", ""}, {"role", role_to_json(role)},
                                               {"heartbeat_s", 0.05}, {"heartbeat_timeout_s", timeout_s}});
        EXPECT_EQ(ok.kind, MsgKind::kOk) << ok.body.dump();
        const std::string token = ok.body.value("token", "");
        EXPECT_EQ(ask(MsgKind::kStart, {{"token", token}}).kind, MsgKind::kOk);
        return token;
    };
    // Stopped on request, with its coordinator's word all along.
    const std::string token = run(30);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(ask(MsgKind::kStop, {{"token", token}}).kind, MsgKind::kOk);
    nlohmann::json d = done();
    EXPECT_EQ(d.value("stopped", false), true) << d.dump();
    EXPECT_EQ(d.value("coordinator_lost", true), false) << d.dump();
    // Configured again and left without a word past its timeout: it stops itself and says why.
    (void)run(0.3);
    d = done();
    EXPECT_EQ(d.value("stopped", false), true) << d.dump();
    EXPECT_EQ(d.value("coordinator_lost", false), true) << d.dump();
    stop = true;
    serving.join();
}

TEST(Coordinator, ConnectNamesAnEndpointThatDoesNotAnswer) {
    auto ctx = std::make_shared<zmq::context_t>();
    CoordinatorOptions co;
    co.reply_timeout_ms = 300;
    auto c = Coordinator::connect(ctx, {"inproc://nobody-here"}, co);
    ASSERT_FALSE(c);
    EXPECT_NE(c.message().find("inproc://nobody-here did not answer \"hello\""), std::string::npos) << c.message();
}

// prepare: node 0 answers before any other node is asked (nodes sharing its data root then find the
// data cached), every node gets the config it was sent (paths confined to its root), each report
// comes back by node, and a node's failure or a node without a preparer is an error naming it.
TEST(Coordinator, PrepareAsksNodeZeroFirstThenTheOthers) {
    auto ctx = std::make_shared<zmq::context_t>();
    std::mutex mu;
    std::vector<std::string> order;  // listen endpoints in the order preparations started
    NodeOptions o;
    o.ctx = ctx;
    o.prepare_data = [&](const RunConfig& cfg, const NodeSite& site) -> Result<DataReport> {
        {
            std::lock_guard<std::mutex> lock(mu);
            order.push_back(site.listen);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (cfg.data.corpus == "missing") return Status::error("corpus missing not found");
        DataReport r;
        r.vocab_size = cfg.data.vocab_size + static_cast<int64_t>(order.size());
        r.fingerprint = "none:0123456789abcdef:0123456789abcdef";
        r.unigram_loss = 6.5;
        r.log = {"prepared on " + site.listen};
        return r;
    };
    auto local = unwrap(LocalCluster::start_threads(3, o, [](const RunConfig&, const NodeRole& r, const NodeSite&) {
        return Result<std::unique_ptr<Worker>>(std::make_unique<CountingWorker>(r, 1));
    }));
    auto coord = unwrap(Coordinator::connect(ctx, local->endpoints(), {}));
    RunConfig cfg;
    cfg.data.vocab_size = 100;
    auto reports = coord->prepare(to_toml(cfg), 3, 10000);
    ASSERT_TRUE(reports) << reports.message();
    ASSERT_EQ(reports->size(), 3u);
    ASSERT_EQ(order.size(), 3u);
    EXPECT_EQ(order[0], local->endpoints()[0]);     // node 0 alone first
    EXPECT_EQ((*reports)[0].vocab_size, 101);        // it was the first to prepare
    EXPECT_EQ((*reports)[0].log.at(0), "prepared on " + local->endpoints()[0]);
    EXPECT_EQ((*reports)[2].unigram_loss, 6.5);
    EXPECT_EQ((*reports)[1].fingerprint, "none:0123456789abcdef:0123456789abcdef");

    cfg.data.corpus = "missing";
    auto bad = coord->prepare(to_toml(cfg), 3, 10000);
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.message().find(local->endpoints()[0]), std::string::npos) << bad.message();
    EXPECT_NE(bad.message().find("corpus missing not found"), std::string::npos) << bad.message();

    // A node that cannot prepare data says so; the node keeps serving.
    NodeOptions plain;
    plain.ctx = ctx;
    auto other = unwrap(LocalCluster::start_threads(1, plain, [](const RunConfig&, const NodeRole& r, const NodeSite&) {
        return Result<std::unique_ptr<Worker>>(std::make_unique<CountingWorker>(r, 1));
    }));
    auto c2 = unwrap(Coordinator::connect(ctx, other->endpoints(), {}));
    auto none = c2->prepare(to_toml(RunConfig{}), 1, 10000);
    ASSERT_FALSE(none);
    EXPECT_NE(none.message().find("cannot prepare data"), std::string::npos) << none.message();
    Message hello;
    hello.kind = MsgKind::kHello;
    EXPECT_TRUE(c2->request(0, hello));
}

}  // namespace
}  // namespace tw
