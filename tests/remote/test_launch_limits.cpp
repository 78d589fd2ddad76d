// Launch limits (coordinator/launch_limits.h): the verdict on fixed machine figures, and a Session
// refused before any node exists. Torch-free; no process is started.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <zmq.hpp>

#include "coordinator/launch_limits.h"
#include "coordinator/run_session.h"
#include "storage/run_store.h"

namespace tw {
namespace {
namespace fs = std::filesystem;

// The micro model's shape (tests/app/micro_corpus.sh), DiLoCo.
RunConfig micro(const std::string& mode, int64_t replicas) {
    RunConfig c;
    c.model.vocab_size = 200;
    c.model.d_model = 32;
    c.model.n_layer = 2;
    c.model.n_head = 2;
    c.model.seq_len = 32;
    c.train.batch_size = 4;
    c.outer.algorithm = "diloco";
    c.outer.replicas = replicas;
    c.cluster.mode = mode;
    return c;
}

MachineMemory machine(int64_t bytes) { return {bytes, "MemAvailable", 2}; }

std::string joined(const std::vector<std::string>& lines) {
    std::string s;
    for (auto& l : lines) s += l + "\n";
    return s;
}

TEST(LaunchLimits, BytesReadAsPeopleReadThem) {
    EXPECT_EQ(human_bytes(1023), "1023 B");
    EXPECT_EQ(human_bytes(310ll << 20), "310 MiB");
    EXPECT_EQ(human_bytes(static_cast<int64_t>(19.4 * (1ll << 30))), "19.4 GiB");
    EXPECT_EQ(human_bytes(static_cast<int64_t>(2.9 * (1ll << 30))), "2.9 GiB");
    EXPECT_EQ(human_bytes(1536), "1.5 KiB");
}

TEST(LaunchLimits, ThousandsOfChildProcessesAreRefusedNamingTheCapAndTheMemoryWithFigures) {
    const RunConfig c = micro("local", 1024);
    const LaunchVerdict v = check_launch_limits(c, 1024, machine(3ll << 30));
    ASSERT_EQ(v.refusals.size(), 2u) << joined(v.refusals);
    EXPECT_NE(v.refusals[0].find("1024 local processes, more than cluster.max_local_processes = 64"), std::string::npos)
        << v.refusals[0];
    // 1024 × (the estimate per process) with the machine's figure and where it comes from.
    const std::string figures = "1024 local processes × ~" + human_bytes(v.estimate.per_node_bytes) +
                                " estimated = " + human_bytes(1024 * v.estimate.per_node_bytes) +
                                ", more than the 3.0 GiB available (MemAvailable)";
    EXPECT_NE(v.refusals[1].find(figures), std::string::npos) << v.refusals[1];
    EXPECT_NE(v.refusals[1].find("cluster.memory_check = \"warn\""), std::string::npos) << v.refusals[1];
    EXPECT_NE(v.refusals[1].find("run on threads"), std::string::npos) << v.refusals[1];
    EXPECT_NE(v.detail.find("LibTorch process " + human_bytes(kProcessBaseBytes)), std::string::npos) << v.detail;
}

TEST(LaunchLimits, TheCapAloneRefusesEvenWithMemoryToSpareAndIsTheKeysValue) {
    RunConfig c = micro("local", 3);
    c.cluster.max_local_processes = 2;
    const LaunchVerdict v = check_launch_limits(c, 3, machine(1ll << 40));
    ASSERT_EQ(v.refusals.size(), 1u) << joined(v.refusals);
    EXPECT_NE(v.refusals[0].find("3 local processes, more than cluster.max_local_processes = 2"), std::string::npos);
    c.cluster.max_local_processes = 3;
    EXPECT_TRUE(check_launch_limits(c, 3, machine(1ll << 40)).ok());
    // memory_check = "off" does not lift the cap.
    c.cluster.max_local_processes = 2;
    c.cluster.memory_check = "off";
    EXPECT_FALSE(check_launch_limits(c, 3, machine(1ll << 40)).ok());
}

TEST(LaunchLimits, MemoryCheckWarnStartsWithAWarningAndOffChecksNothing) {
    RunConfig c = micro("local", 8);
    c.cluster.memory_check = "warn";
    LaunchVerdict v = check_launch_limits(c, 8, machine(1 << 20));
    EXPECT_TRUE(v.ok()) << joined(v.refusals);
    ASSERT_EQ(v.warnings.size(), 1u);
    EXPECT_NE(v.warnings[0].find("more than the 1.0 MiB available"), std::string::npos) << v.warnings[0];
    EXPECT_NE(v.warnings[0].find("starting anyway"), std::string::npos) << v.warnings[0];
    c.cluster.memory_check = "off";
    v = check_launch_limits(c, 8, machine(1 << 20));
    EXPECT_TRUE(v.ok());
    EXPECT_TRUE(v.warnings.empty());
    EXPECT_TRUE(v.summary.empty());
    c.cluster.memory_check = "refuse";
    EXPECT_FALSE(check_launch_limits(c, 8, machine(1 << 20)).ok());
}

TEST(LaunchLimits, AboveEightyPercentOfTheAvailableMemoryARunStartsWithAWarning) {
    const RunConfig c = micro("threads", 4);
    const int64_t total = estimate_launch_memory(c, 4).total_bytes;
    // 90%: a warning naming the share; 50%: nothing to say; exactly all of it still fits.
    LaunchVerdict v = check_launch_limits(c, 4, machine(static_cast<int64_t>(total / 0.9)));
    EXPECT_TRUE(v.ok());
    ASSERT_EQ(v.warnings.size(), 1u);
    EXPECT_NE(v.warnings[0].find("4 thread nodes × ~"), std::string::npos) << v.warnings[0];
    EXPECT_NE(v.warnings[0].find(", 90% of the"), std::string::npos) << v.warnings[0];
    EXPECT_TRUE(check_launch_limits(c, 4, machine(2 * total)).warnings.empty());
    EXPECT_TRUE(check_launch_limits(c, 4, machine(total)).ok());
    EXPECT_FALSE(check_launch_limits(c, 4, machine(total - 1)).ok());
}

TEST(LaunchLimits, ThreadNodesHaveNoProcessCapAndRemoteNodesAreNotCheckedHere) {
    RunConfig c = micro("threads", 1024);
    LaunchVerdict v = check_launch_limits(c, 1024, machine(1ll << 50));
    EXPECT_TRUE(v.ok()) << joined(v.refusals);
    EXPECT_EQ(v.estimate.process_base_bytes, 0);
    EXPECT_FALSE(check_launch_limits(c, 1024, machine(1 << 20)).ok());  // but their memory is
    c.cluster.mode = "remote";
    v = check_launch_limits(c, 1024, machine(1 << 20));
    EXPECT_TRUE(v.ok());
    EXPECT_TRUE(v.summary.empty());
}

struct SessionFixture {
    explicit SessionFixture(const std::string& name) {
        dir = (fs::path(::testing::TempDir()) / "tw_launch_limits" / name).string();
        fs::remove_all(dir);
        fs::create_directories(dir);
        dir = fs::canonical(dir).string();
        db = dir + "/runs.db";
        hooks.version = "test";
        hooks.exe = dir + "/no-such-thinwire";  // a child process would fail to start, differently
        hooks.prepare_data = [this](const RunConfig&, const NodeSite&) -> Result<DataReport> {
            ++prepared;
            return Status::error("no data in this test");
        };
        hooks.worker_factory = [this](std::shared_ptr<zmq::context_t>) -> WorkerFactory {
            ++factories;
            return [](const RunConfig&, const NodeRole&, const NodeSite&) -> Result<std::unique_ptr<Worker>> {
                return Status::error("no worker in this test");
            };
        };
    }
    SessionResult run(const RunConfig& cfg) {
        Session s(cfg, db, "g", hooks, dir, /*print_progress=*/false);
        return s.wait();
    }
    std::string dir, db;
    EngineHooks hooks;
    std::atomic<int> prepared{0}, factories{0};
};

TEST(LaunchLimits, ASessionOfTooManyChildProcessesIsRefusedBeforeAnyNodeAndStoresNoRun) {
    SessionFixture f("cap");
    RunConfig c = micro("local", 1024);
    c.run.name = "too-many";
    const SessionResult r = f.run(c);
    EXPECT_EQ(r.status, RunStatus::kFailed);
    EXPECT_TRUE(r.failed_to_start);
    EXPECT_EQ(r.run_id, 0);
    EXPECT_NE(r.reason.find("launch refused before any node started: 1024 local processes, more than "
                            "cluster.max_local_processes = 64"),
              std::string::npos)
        << r.reason;
    EXPECT_EQ(r.reason.find("no-such-thinwire"), std::string::npos) << r.reason;  // nothing was started
    RunStore store = unwrap(RunStore::open(f.db));
    EXPECT_TRUE(unwrap(store.list_runs()).empty());
}

TEST(LaunchLimits, ASessionOfThreadNodesThatCannotFitIsRefusedBeforeAnyNodeStarts) {
    SessionFixture f("memory");
    RunConfig c = micro("threads", 64);
    // paper1b's shape: ~1.03 B parameters, 16 bytes each before the outer copies, 64 nodes: terabytes.
    c.model.d_model = 2048;
    c.model.n_layer = 18;
    c.model.n_head = 16;
    c.model.d_ff = 5632;
    c.model.vocab_size = 50257;
    const SessionResult r = f.run(c);
    EXPECT_TRUE(r.failed_to_start);
    EXPECT_NE(r.reason.find("64 thread nodes × ~"), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("available"), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("cluster.memory_check"), std::string::npos) << r.reason;
    EXPECT_EQ(f.factories.load(), 0);  // no thread node was built
    EXPECT_EQ(f.prepared.load(), 0);
}

}  // namespace
}  // namespace tw
