// Coordinator liveness in the store: schema v3's coordinator columns, the rule that tells a dead coordinator
// from a live one, marking such runs interrupted, and what a resume needs (launch record, metrics
// deleted after a step, the latest step every node reported).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "core/metric_names.h"
#include "storage/run_liveness.h"
#include "storage/run_store.h"
#include "storage/schema.h"

namespace tw {
namespace {

struct TempStore {
    TempStore() {
        static int n = 0;
        path = testing::TempDir() + "tw_liveness_" + std::to_string(getpid()) + "_" + std::to_string(n++) + ".db";
        remove();
        auto s = RunStore::open(path);
        EXPECT_TRUE(s.is_ok()) << s.message();
        store = std::make_unique<RunStore>(std::move(s).value());
    }
    ~TempStore() {
        store.reset();
        remove();
    }
    void remove() {
        for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
    }
    std::string path;
    std::unique_ptr<RunStore> store;
};

double now_s() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

LivenessProbe probe(const std::string& host, double now, bool alive) {
    LivenessProbe p;
    p.this_host = host;
    p.now_s = now;
    p.pid_alive = [alive](int64_t) { return alive; };
    return p;
}

RunSummary running(int64_t pid, const std::string& host, double heartbeat) {
    RunSummary r;
    r.status = RunStatus::kRunning;
    r.coordinator_pid = pid;
    r.coordinator_host = host;
    r.heartbeat_at = heartbeat;
    r.created_at = "2026-11-24T12:00:00.000Z";
    return r;
}

TEST(Liveness, SchemaV3AddsTheCoordinatorColumns) {
    EXPECT_EQ(latest_schema_version(), 4);
    EXPECT_NE(schema_migrations()[2].sql.find("coordinator_pid"), std::string::npos);
    EXPECT_NE(schema_migrations()[2].sql.find("heartbeat_at"), std::string::npos);
}

TEST(Liveness, DeadPidOnThisHostIsGoneAtOnce) {
    const double t = 1e9;
    EXPECT_NE(coordinator_gone(running(42, "here", t), probe("here", t + 1, false)).find("process 42 on here"),
              std::string::npos);
    EXPECT_EQ(coordinator_gone(running(42, "here", t), probe("here", t + 1, true)), "");
    // Another host's pid cannot be checked here: only the heartbeat counts.
    EXPECT_EQ(coordinator_gone(running(42, "there", t), probe("here", t + 1, false)), "");
}

TEST(Liveness, StaleHeartbeatIsGoneOnAnyHost) {
    const double t = 1e9;
    EXPECT_EQ(coordinator_gone(running(42, "there", t), probe("here", t + kCoordinatorStaleS - 1, true)), "");
    EXPECT_NE(coordinator_gone(running(42, "there", t), probe("here", t + kCoordinatorStaleS + 1, true))
                  .find("no heartbeat for"),
              std::string::npos);
    // On its own host a live process is the coordinator, however old its heartbeat (blocked in a
    // node's reply timeout); a dead one is gone however fresh.
    EXPECT_EQ(coordinator_gone(running(42, "here", t), probe("here", t + 2 * kCoordinatorStaleS, true)), "");
    EXPECT_NE(coordinator_gone(running(42, "here", t), probe("here", t, false)), "");
}

TEST(Liveness, FinishedRunsAndOldRunsWithoutACoordinator) {
    RunSummary done = running(42, "here", 1e9);
    done.status = RunStatus::kFinished;
    EXPECT_EQ(coordinator_gone(done, probe("here", 2e9, false)), "");
    // An older build's run records no coordinator: gone once its creation is stale.
    RunSummary old = running(0, "", 0);
    EXPECT_NE(coordinator_gone(old, probe("here", 1.8e9, true)).find("older build"), std::string::npos);
}

TEST(Liveness, MarkLostRunsRecordsInterruptedWithTheReasonAndSparesLiveOnes) {
    TempStore t;
    RunStore& s = *t.store;
    const int64_t dead = s.create_run("dead", "run", "", "", 1).value();
    const int64_t live = s.create_run("live", "run", "", "", 1).value();
    ASSERT_TRUE(s.set_coordinator(dead, 999999, "this-host").is_ok());
    ASSERT_TRUE(s.set_coordinator(live, getpid(), "this-host").is_ok());
    LivenessProbe p = probe("this-host", now_s(), true);
    p.pid_alive = [](int64_t pid) { return pid == getpid(); };
    auto marked = mark_lost_runs(s, p);
    ASSERT_TRUE(marked.is_ok()) << marked.message();
    ASSERT_EQ(marked->size(), 1u);
    EXPECT_EQ(marked->front(), dead);
    auto d = s.get_run(dead).value();
    EXPECT_EQ(d.status, RunStatus::kInterrupted);
    EXPECT_NE(d.reason.find("coordinator gone (process 999999"), std::string::npos);
    EXPECT_EQ(s.get_run(live).value().status, RunStatus::kRunning);
    // The local probe agrees: this process runs.
    EXPECT_EQ(coordinator_gone(s.get_run(live).value(), local_probe()), "");
}

TEST(Liveness, HeartbeatMovesForward) {
    TempStore t;
    RunStore& s = *t.store;
    const int64_t id = s.create_run("r", "run", "", "", 1).value();
    EXPECT_EQ(s.get_run(id).value().heartbeat_at, 0);
    ASSERT_TRUE(s.heartbeat(id).is_ok());
    const double beat = s.get_run(id).value().heartbeat_at;
    EXPECT_NEAR(beat, now_s(), 5);
    EXPECT_FALSE(s.heartbeat(id + 100).is_ok());
    // A live coordinator whose run a reader on another host took for dead reclaims it with its
    // next heartbeat; a run interrupted for another reason stays interrupted.
    ASSERT_TRUE(s.finish_run(id, RunStatus::kInterrupted, "coordinator gone (no heartbeat for 61 s)").is_ok());
    ASSERT_TRUE(s.heartbeat(id).is_ok());
    EXPECT_EQ(s.get_run(id).value().status, RunStatus::kRunning);
    EXPECT_FALSE(s.get_run(id).value().finished_at.has_value());
    ASSERT_TRUE(s.finish_run(id, RunStatus::kInterrupted, "stopped on request").is_ok());
    ASSERT_TRUE(s.heartbeat(id).is_ok());
    EXPECT_EQ(s.get_run(id).value().status, RunStatus::kInterrupted);
}

TEST(Resume, LaunchRecordReopenAndMetricsAfterAStepDeleted) {
    TempStore t;
    RunStore& s = *t.store;
    const int64_t id = s.create_run("r", "run", "cfg", "h", 1).value();
    EXPECT_EQ(s.launch(id).value().toml, "");
    ASSERT_TRUE(s.set_launch(id, {"[train]\nsteps = 9\n", "abcd"}).is_ok());
    EXPECT_EQ(s.launch(id).value().toml, "[train]\nsteps = 9\n");
    EXPECT_EQ(s.launch(id).value().uid, "abcd");
    std::vector<MetricRecord> rows;
    for (int64_t step = 1; step <= 6; ++step) rows.push_back({"a", step, -1, 0, 0, metric::kTrainLoss, 1.0 * step});
    ASSERT_TRUE(s.add_metrics(id, rows).is_ok());
    ASSERT_TRUE(s.finish_run(id, RunStatus::kInterrupted, "killed").is_ok());
    EXPECT_EQ(s.delete_metrics_after(id, 4).value(), 2);
    ASSERT_TRUE(s.reopen_run(id).is_ok());
    auto r = s.get_run(id).value();
    EXPECT_EQ(r.status, RunStatus::kRunning);
    EXPECT_EQ(r.reason, "");
    EXPECT_FALSE(r.finished_at.has_value());
    EXPECT_EQ(r.last_step, 4);
    ASSERT_TRUE(s.set_config(id, "new", "h2").is_ok());
    EXPECT_EQ(s.config_toml(id).value(), "new");
    EXPECT_EQ(s.get_run(id).value().config_hash, "h2");
}

TEST(Resume, TheLatestStepEveryNodeReported) {
    TempStore t;
    RunStore& s = *t.store;
    const int64_t id = s.create_run("r", "run", "", "", 1).value();
    for (const char* n : {"replica-0", "replica-1"}) {
        RunNode node;
        node.node = n;
        ASSERT_TRUE(s.add_node(id, node).is_ok());
    }
    EXPECT_FALSE(s.step_every_node_reported(id, metric::kCkptBytes).value().has_value());
    // Both wrote 40 and 80; only replica-0's 120 reached the store before the coordinator died.
    ASSERT_TRUE(s.add_metrics(id, {{"replica-0", 40, -1, 0, 0, metric::kCkptBytes, 1},
                                   {"replica-1", 40, -1, 0, 0, metric::kCkptBytes, 1},
                                   {"replica-1", 80, -1, 0, 0, metric::kCkptBytes, 1},
                                   {"replica-0", 80, -1, 0, 0, metric::kCkptBytes, 1},
                                   {"replica-0", 120, -1, 0, 0, metric::kCkptBytes, 1},
                                   {"replica-0", 160, -1, 0, 0, metric::kTrainLoss, 1}})
                    .is_ok());
    EXPECT_EQ(s.step_every_node_reported(id, metric::kCkptBytes).value(), std::optional<int64_t>(80));
}

// HDEE experts resume from their own latest checkpoints: the store answers per node, and deletes
// one node's rows after its own step, leaving every other node's alone.
TEST(Resume, EachNodesLatestStepAndItsOwnRowsDeleted) {
    TempStore t;
    RunStore& s = *t.store;
    const int64_t id = s.create_run("r", "run", "", "", 1).value();
    ASSERT_TRUE(s.add_metrics(id, {{"expert-a", 50, -1, 0, 0, metric::kCkptBytes, 1},
                                   {"expert-a", 100, -1, 0, 0, metric::kCkptBytes, 1},
                                   {"expert-b", 50, -1, 0, 0, metric::kCkptBytes, 1},
                                   {"expert-a", 101, -1, 0, 0, metric::kTrainLoss, 1},
                                   {"expert-b", 51, -1, 0, 0, metric::kTrainLoss, 1},
                                   {"expert-b", 101, -1, 0, 0, metric::kTrainLoss, 1},
                                   {"expert-c", 3, -1, 0, 0, metric::kTrainLoss, 1}})
                    .is_ok());
    const auto latest = s.latest_step_by_node(id, metric::kCkptBytes).value();
    EXPECT_EQ(latest, (std::map<std::string, int64_t>{{"expert-a", 100}, {"expert-b", 50}}));  // c wrote none
    EXPECT_EQ(s.delete_metrics_after(id, 50, "expert-b").value(), 2);
    EXPECT_EQ(s.delete_metrics_after(id, -1, "expert-c").value(), 1);  // starts over: every row
    EXPECT_EQ(s.metrics(id, metric::kTrainLoss).value().size(), 1u);        // expert-a's 101 stays
    EXPECT_FALSE(s.delete_metrics_after(id + 1, 0, "expert-a"));
}

}  // namespace
}  // namespace tw
