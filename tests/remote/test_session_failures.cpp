// A coordinated run (coordinator/run_session.h) whose nodes cannot prepare the data or whose worker
// throws: the run is stored as failed with the node's reason, never left "running", and the process
// goes on. Thread nodes with scripted data preparations and workers (the engine's own are
// exercised end to end by tests/app/bad_inputs_test.sh).
#include <gtest/gtest.h>

#include <filesystem>
#include <zmq.hpp>

#include "coordinator/run_session.h"
#include "core/data_fingerprint.h"
#include "storage/run_store.h"

namespace tw {
namespace {
namespace fs = std::filesystem;

// Throws an int when run: something a worker must never let out, and the node must survive.
class ThrowingWorker : public Worker {
public:
    Result<WorkerSummary> run(WorkerControl&, MetricSink&) override { throw 42; }
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

}  // namespace
}  // namespace tw
