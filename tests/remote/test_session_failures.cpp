// A coordinated run (coordinator/run_session.h) whose nodes cannot prepare the data, whose worker
// throws, or whose store fills up: the run is stored as failed with the reason, never left
// "running", and the process goes on. Thread nodes with scripted data preparations and workers (the engine's own are
// exercised end to end by tests/app/bad_inputs_test.sh).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <zmq.hpp>

#include "coordinator/run_session.h"
#include "core/data_fingerprint.h"
#include "storage/run_store.h"
#include "storage/run_writer.h"
#include "tests/storage/page_limit.h"

namespace tw {
namespace {
namespace fs = std::filesystem;

// Throws an int when run: something a worker must never let out, and the node must survive.
class ThrowingWorker : public Worker {
public:
    Result<WorkerSummary> run(WorkerControl&, MetricSink&) override { throw 42; }
};

// Reports 20 metric rows a step, a step a millisecond, until it is stopped or has done
// `kSteps` (minutes: a test that sees it finish has failed to stop it).
class MetricsUntilStopped : public Worker {
public:
    static constexpr int64_t kSteps = 100000;
    explicit MetricsUntilStopped(std::atomic<int64_t>& rows) : rows_(rows) {}
    Result<WorkerSummary> run(WorkerControl& ctl, MetricSink& sink) override {
        int64_t step = 0;
        while (step < kSteps && !ctl.stop.load()) {
            ++step;
            std::vector<MetricRecord> batch;
            for (int k = 0; k < 20; ++k)
                batch.push_back({"", step, -1, 0.001 * static_cast<double>(step), 0.0, "m" + std::to_string(k), 1.0});
            sink.metrics(std::move(batch));
            rows_ += 20;
            ctl.step = step;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        return WorkerSummary{{"steps", static_cast<double>(step)}};
    }

private:
    std::atomic<int64_t>& rows_;
};

struct Fixture {
    explicit Fixture(const std::string& name) {
        dir = (fs::path(::testing::TempDir()) / "tw_session_failures" / name).string();
        fs::remove_all(dir);
        fs::create_directories(dir);
        dir = fs::canonical(dir).string();
        db = dir + "/runs.db";
        cfg.run.name = name;
        cfg.cluster.mode = "threads";
        cfg.cluster.heartbeat_s = 0.05;
        cfg.cluster.heartbeat_timeout_s = 2;
        hooks.version = "test";
        hooks.worker_factory = [](std::shared_ptr<zmq::context_t>) -> WorkerFactory {
            return [](const RunConfig&, const NodeRole&, const NodeSite&) -> Result<std::unique_ptr<Worker>> {
                return std::unique_ptr<Worker>(std::make_unique<ThrowingWorker>());
            };
        };
    }
    SessionResult run() {
        Session s(cfg, db, "g", hooks, dir, /*print_progress=*/false);
        return s.wait();
    }
    RunSummary stored(int64_t id) {
        RunStore store = unwrap(RunStore::open(db));
        return unwrap(store.get_run(id));
    }
    std::string dir, db;
    RunConfig cfg;
    EngineHooks hooks;
};

TEST(SessionFailures, DataThatCannotBePreparedIsAFailedRunWithTheNodesReason) {
    Fixture f("prepare-error");
    const std::string why = "data.train_shard /d/a.bin: 10 tokens, a training window needs 129 (model.seq_len + 1)";
    f.hooks.prepare_data = [why](const RunConfig&, const NodeSite&) -> Result<DataReport> { return Status::error(why); };
    const SessionResult r = f.run();
    EXPECT_EQ(r.status, RunStatus::kFailed);
    EXPECT_FALSE(r.failed_to_start);
    ASSERT_GT(r.run_id, 0) << r.reason;
    EXPECT_NE(r.reason.find(why), std::string::npos) << r.reason;
    const RunSummary s = f.stored(r.run_id);
    EXPECT_EQ(s.status, RunStatus::kFailed);
    EXPECT_NE(s.reason.find(why), std::string::npos) << s.reason;
    EXPECT_TRUE(s.finished_at.has_value());
}

TEST(SessionFailures, APreparationThatThrowsAnythingIsAFailedRun) {
    Fixture f("prepare-throws");
    f.hooks.prepare_data = [](const RunConfig&, const NodeSite&) -> Result<DataReport> { throw 7; };
    const SessionResult r = f.run();
    ASSERT_GT(r.run_id, 0) << r.reason;
    EXPECT_NE(r.reason.find("an exception that is not a std::exception"), std::string::npos) << r.reason;
    EXPECT_EQ(f.stored(r.run_id).status, RunStatus::kFailed);
}

TEST(SessionFailures, AWorkerThatThrowsAnythingEndsTheStoredRunAsFailed) {
    Fixture f("worker-throws");
    f.hooks.prepare_data = [](const RunConfig&, const NodeSite&) -> Result<DataReport> {
        DataReport d;
        d.vocab_size = 64;
        d.fingerprint = to_wire(DataFingerprint{});
        return d;
    };
    const SessionResult r = f.run();
    ASSERT_GT(r.run_id, 0) << r.reason;
    EXPECT_EQ(r.status, RunStatus::kFailed);
    EXPECT_NE(r.reason.find("worker: an exception that is not a std::exception"), std::string::npos) << r.reason;
    const RunSummary s = f.stored(r.run_id);
    EXPECT_EQ(s.status, RunStatus::kFailed);
    EXPECT_NE(s.reason.find("worker: an exception that is not a std::exception"), std::string::npos) << s.reason;
}

// A store that runs out of room must not let the run train on with every flush failing, its rows
// held in memory and lost, the run never marked failed and the CLI's table without summaries.
// Here the store's page limit leaves less room than the writer's reserve after a few hundred
// rows: the session stops the run as a user's stop does, writes every row into the reserve, ends
// the run as failed saying why, and the result carries every node's summary.
TEST(SessionFailures, AStoreRunningOutOfRoomStopsTheRunAndEndsItFailedWithEveryRow) {
    Fixture f("store-full");
    std::atomic<int64_t> emitted{0};
    f.hooks.prepare_data = [](const RunConfig&, const NodeSite&) -> Result<DataReport> {
        DataReport d;
        d.vocab_size = 64;
        d.fingerprint = to_wire(DataFingerprint{});
        return d;
    };
    f.hooks.worker_factory = [&emitted](std::shared_ptr<zmq::context_t>) -> WorkerFactory {
        return [&emitted](const RunConfig&, const NodeRole&, const NodeSite&) -> Result<std::unique_ptr<Worker>> {
            return std::unique_ptr<Worker>(std::make_unique<MetricsUntilStopped>(emitted));
        };
    };
    f.cfg.train.steps = MetricsUntilStopped::kSteps;
    { ASSERT_TRUE(RunStore::open(f.db)); }  // the empty store, to cap it relative to its size
    const int64_t page_size = 4096;         // SQLite's default, which the store keeps
    test::PageLimit limit(f.db, test::PageLimit::pages_of(f.db) + RunWriter::kDefaultReserveBytes / page_size + 40);
    const auto t0 = std::chrono::steady_clock::now();
    const SessionResult r = f.run();
    const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_GT(r.run_id, 0) << r.reason;
    EXPECT_EQ(r.status, RunStatus::kFailed) << r.reason;
    EXPECT_NE(r.reason.find("the run store could not be written: the disk is nearly full"), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("every metric row was stored in the end"), std::string::npos) << r.reason;
    EXPECT_LT(took_s, 60) << "the run was not stopped";
    ASSERT_EQ(r.nodes.size(), 1u);
    ASSERT_EQ(r.summary.count(r.nodes.front()), 1u) << "no summary for the table";
    const double steps = r.summary.at(r.nodes.front()).at("steps");
    EXPECT_GT(steps, 0);
    EXPECT_LT(steps, static_cast<double>(MetricsUntilStopped::kSteps)) << "the run trained all its steps";
    const RunSummary s = f.stored(r.run_id);
    EXPECT_EQ(s.status, RunStatus::kFailed);
    EXPECT_EQ(s.reason, r.reason);
    // Every row the worker made is in the file: counted there, not through the session.
    RunStore store = unwrap(RunStore::open(f.db));
    int64_t stored = 0;
    for (const std::string& name : unwrap(store.metric_names(r.run_id))) stored += static_cast<int64_t>(unwrap(store.metrics(r.run_id, name)).size());
    EXPECT_EQ(stored, emitted.load());
    EXPECT_GT(stored, 1000) << "the cap was never reached";
}

}  // namespace
}  // namespace tw
