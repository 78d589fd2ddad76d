// Coordinator ⇄ node servers on threads over inproc://, driving a scripted worker (the engine's
// worker is exercised end to end by tests/app/run_test.sh): metrics relay, pause/resume, stop.
#include <gtest/gtest.h>

#include <thread>
#include <zmq.hpp>

#include "core/layout.h"
#include "remote/cluster.h"
#include "remote/coordinator.h"

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

struct CollectSink : CoordinatorSink {
    void on_metrics(const std::vector<MetricRecord>& r) override { rows.insert(rows.end(), r.begin(), r.end()); }
    void on_event(const EventRecord& e) override { events.push_back(e); }
    std::vector<MetricRecord> rows;
    std::vector<EventRecord> events;
};

struct Cluster {
    explicit Cluster(int n, int64_t steps) {
        ctx = std::make_shared<zmq::context_t>();
        NodeOptions o;
        o.ctx = ctx;
        local = unwrap(LocalCluster::start_threads(n, o, [steps](const RunConfig&, const NodeRole& r, const NodeSite&) {
            return Result<std::unique_ptr<Worker>>(std::make_unique<CountingWorker>(r, steps));
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

TEST(Coordinator, ConnectNamesAnEndpointThatDoesNotAnswer) {
    auto ctx = std::make_shared<zmq::context_t>();
    CoordinatorOptions co;
    co.reply_timeout_ms = 300;
    auto c = Coordinator::connect(ctx, {"inproc://nobody-here"}, co);
    ASSERT_FALSE(c);
    EXPECT_NE(c.message().find("inproc://nobody-here did not answer \"hello\""), std::string::npos) << c.message();
}

}  // namespace
}  // namespace tw
