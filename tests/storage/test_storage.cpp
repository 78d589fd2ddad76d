// Tests of storage/: SQLite wrapper, schema migrations, RunStore and MetricBuffer against real temp files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/hash.h"
#include "storage/bench/ingest_bench.h"
#include "storage/metric_writer.h"
#include "storage/run_store.h"
#include "storage/run_writer.h"
#include "storage/schema.h"
#include "storage/sqlite.h"
#include "tests/storage/page_limit.h"

namespace tw {
namespace {

// A database path unique to this process and test, removed (with its -wal and -shm files) afterwards.
class TempDb {
  public:
    TempDb() {
        static int counter = 0;
        const auto* info = testing::UnitTest::GetInstance()->current_test_info();
        path_ = testing::TempDir() + "tw_storage_" + info->test_suite_name() + "_" + info->name() + "_" +
                std::to_string(getpid()) + "_" + std::to_string(counter++) + ".db";
        remove_files();
    }
    ~TempDb() { remove_files(); }
    const std::string& path() const { return path_; }

  private:
    void remove_files() {
        for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path_ + suffix).c_str());
    }
    std::string path_;
};

Database open_db(const std::string& path) {
    auto db = Database::open(path);
    EXPECT_TRUE(db.is_ok()) << db.message();
    return std::move(db).value();
}

RunStore open_store(const std::string& path) {
    auto store = RunStore::open(path);
    EXPECT_TRUE(store.is_ok()) << store.message();
    return std::move(store).value();
}

int64_t count(Database& db, const std::string& sql) {
    auto n = db.query_int64(sql);
    EXPECT_TRUE(n.is_ok()) << n.message();
    return n ? n.value() : -1;
}

MetricRecord metric(int64_t step, const std::string& name, double value, const std::string& node = "local") {
    MetricRecord r;
    r.node = node;
    r.step = step;
    r.outer_step = step / 10;
    r.wall_s = 0.5 * static_cast<double>(step);
    r.sim_s = 2.0 * static_cast<double>(step);
    r.name = name;
    r.value = value;
    return r;
}

// True for "YYYY-MM-DDTHH:MM:SS.mmmZ" (digits where the pattern has 9).
bool is_iso8601_utc_ms(const std::string& s) {
    const std::string pattern = "9999-99-99T99:99:99.999Z";
    if (s.size() != pattern.size()) return false;
    for (size_t i = 0; i < s.size(); ++i) {
        const bool digit = s[i] >= '0' && s[i] <= '9';
        if (pattern[i] == '9' ? !digit : s[i] != pattern[i]) return false;
    }
    return true;
}

// --- SQLite wrapper ----------------------------------------------------------------------------------------------

TEST(Sqlite, OpenSetsWalBusyTimeoutAndForeignKeys) {
    TempDb tmp;
    Database db = open_db(tmp.path());
    auto mode = db.prepare("PRAGMA journal_mode");
    ASSERT_TRUE(mode.is_ok()) << mode.message();
    ASSERT_TRUE(mode->step().value());
    EXPECT_EQ(mode->column_text(0), "wal");
    EXPECT_EQ(count(db, "PRAGMA busy_timeout"), 5000);
    EXPECT_EQ(count(db, "PRAGMA foreign_keys"), 1);
}

TEST(Sqlite, OpenFailureNamesThePath) {
    const std::string path = "/nonexistent_tw_dir/sub/run.db";
    auto db = Database::open(path);
    ASSERT_FALSE(db.is_ok());
    EXPECT_NE(db.message().find(path), std::string::npos) << db.message();
}

TEST(Sqlite, FileThatIsNotADatabaseIsAnErrorNamingThePath) {
    TempDb tmp;
    std::ofstream(tmp.path()) << std::string(4096, 'x');
    auto store = RunStore::open(tmp.path());
    ASSERT_FALSE(store.is_ok());
    EXPECT_NE(store.message().find(tmp.path()), std::string::npos) << store.message();
    EXPECT_NE(store.message().find("not a database"), std::string::npos) << store.message();
}

TEST(Sqlite, ErrorsCarrySqliteMessageAndSql) {
    Database db = open_db(":memory:");
    Status s = db.exec("CREATE TABLE t(a); INSERT INTO nope VALUES (1)");
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("no such table: nope"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("INSERT INTO nope"), std::string::npos) << s.message();

    auto st = db.prepare("SELEC 1");
    ASSERT_FALSE(st.is_ok());
    EXPECT_NE(st.message().find("syntax error"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("SELEC 1"), std::string::npos) << st.message();
}

TEST(Sqlite, StatementBindsEveryTypeAndReadsBack) {
    Database db = open_db(":memory:");
    ASSERT_TRUE(db.exec("CREATE TABLE t(i INTEGER, d REAL, s TEXT, n)").is_ok());
    auto ins = db.prepare("INSERT INTO t VALUES (?1, ?2, ?3, ?4)");
    ASSERT_TRUE(ins.is_ok()) << ins.message();
    ins->bind_int64(1, int64_t{1} << 40);
    ins->bind_double(2, 0.1);
    ins->bind_text(3, std::string("a\0b", 3));  // embedded NUL survives: length is bound, not strlen
    ins->bind_null(4);
    ASSERT_TRUE(ins->run().is_ok());

    auto sel = db.prepare("SELECT i, d, s, n FROM t");
    ASSERT_TRUE(sel.is_ok());
    ASSERT_TRUE(sel->step().value());
    EXPECT_EQ(sel->column_int64(0), int64_t{1} << 40);
    EXPECT_EQ(sel->column_double(1), 0.1);
    EXPECT_EQ(sel->column_text(2), std::string("a\0b", 3));
    EXPECT_TRUE(sel->column_is_null(3));
    EXPECT_FALSE(sel->column_is_null(0));
    EXPECT_FALSE(sel->step().value());
}

TEST(Sqlite, RunRewindsSoTheStatementCanBeRebound) {
    Database db = open_db(":memory:");
    ASSERT_TRUE(db.exec("CREATE TABLE t(a INTEGER)").is_ok());
    auto ins = db.prepare("INSERT INTO t VALUES (?1)");
    ASSERT_TRUE(ins.is_ok());
    for (int64_t a : {7, 8, 9}) {
        ins->bind_int64(1, a);
        ASSERT_TRUE(ins->run().is_ok());
    }
    EXPECT_EQ(count(db, "SELECT SUM(a) FROM t"), 24);
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM t"), 3);
}

TEST(Sqlite, FailedBindIsReportedByRunAndNothingIsInserted) {
    Database db = open_db(":memory:");
    ASSERT_TRUE(db.exec("CREATE TABLE t(a)").is_ok());
    auto ins = db.prepare("INSERT INTO t VALUES (?1)");
    ASSERT_TRUE(ins.is_ok());
    ins->bind_int64(2, 1);  // only ?1 exists: remembered, reported by run()
    Status s = ins->run();
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("parameter 2"), std::string::npos) << s.message();
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM t"), 0);
    ins->reset();  // clears the remembered bind error
    ins->bind_int64(1, 5);
    EXPECT_TRUE(ins->run().is_ok());
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM t"), 1);
}

TEST(Sqlite, TransactionNotCommittedLeavesNoRows) {
    TempDb tmp;
    Database db = open_db(tmp.path());
    ASSERT_TRUE(db.exec("CREATE TABLE t(a)").is_ok());
    {
        auto tx = Transaction::begin(db);
        ASSERT_TRUE(tx.is_ok()) << tx.message();
        ASSERT_TRUE(db.exec("INSERT INTO t VALUES (1), (2), (3)").is_ok());
        EXPECT_EQ(count(db, "SELECT COUNT(*) FROM t"), 3);  // visible inside the transaction
    }
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM t"), 0);
    // The connection is usable again: no transaction was left open.
    auto tx = Transaction::begin(db);
    ASSERT_TRUE(tx.is_ok()) << tx.message();
    ASSERT_TRUE(db.exec("INSERT INTO t VALUES (4)").is_ok());
    ASSERT_TRUE(tx->commit().is_ok());
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM t"), 1);
    // A second connection sees only committed rows.
    Database other = open_db(tmp.path());
    EXPECT_EQ(count(other, "SELECT SUM(a) FROM t"), 4);
}

TEST(Sqlite, CommitTwiceIsAnError) {
    Database db = open_db(":memory:");
    auto tx = Transaction::begin(db);
    ASSERT_TRUE(tx.is_ok());
    EXPECT_TRUE(tx->commit().is_ok());
    EXPECT_FALSE(tx->commit().is_ok());
}

// --- schema ------------------------------------------------------------------------------------------------------

TEST(Schema, MigratesEmptyDatabaseToLatestVersion) {
    TempDb tmp;
    Database db = open_db(tmp.path());
    EXPECT_EQ(schema_version(db).value(), 0);
    ASSERT_TRUE(migrate(db).is_ok());
    EXPECT_EQ(schema_version(db).value(), latest_schema_version());
    EXPECT_EQ(latest_schema_version(), static_cast<int>(schema_migrations().size()));
    EXPECT_EQ(count(db,
                    "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND "
                    "name IN ('runs', 'run_nodes', 'metrics', 'events')"),
              4);
    EXPECT_EQ(count(db,
                    "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND "
                    "name = 'metrics_run_name_step'"),
              1);
    // A second migrate is a no-op, not a "table already exists" error.
    EXPECT_TRUE(migrate(db).is_ok()) << migrate(db).message();
}

TEST(Schema, FutureVersionIsRefusedNamingBothVersions) {
    TempDb tmp;
    const int future = latest_schema_version() + 7;
    {
        Database db = open_db(tmp.path());
        ASSERT_TRUE(db.exec("PRAGMA user_version = " + std::to_string(future)).is_ok());
    }
    auto store = RunStore::open(tmp.path());
    ASSERT_FALSE(store.is_ok());
    const std::string expected = "database " + tmp.path() + " has schema version " + std::to_string(future) +
                                 ", this thinwire knows up to " + std::to_string(latest_schema_version());
    EXPECT_NE(store.message().find(expected), std::string::npos) << store.message();
    // Refusing must not touch the file.
    Database db = open_db(tmp.path());
    EXPECT_EQ(schema_version(db).value(), future);
}

TEST(Schema, FailedMigrationRollsBackToLastGoodVersion) {
    Database db = open_db(":memory:");
    const std::vector<Migration> migrations = {
        {1, "first", "CREATE TABLE a(x)"},
        {2, "broken", "CREATE TABLE b(x); INSERT INTO missing VALUES (1)"},
    };
    Status s = migrate(db, migrations);
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("migration 2 (broken)"), std::string::npos) << s.message();
    EXPECT_EQ(schema_version(db).value(), 1);
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'a'"), 1);
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'b'"), 0);  // partial DDL undone
}

TEST(Schema, AppliesOnlyMissingMigrationsInOrder) {
    Database db = open_db(":memory:");
    std::vector<Migration> migrations = {{1, "one", "CREATE TABLE log(v INTEGER); INSERT INTO log VALUES (1)"}};
    ASSERT_TRUE(migrate(db, migrations).is_ok());
    migrations.push_back({2, "two", "INSERT INTO log VALUES (2)"});
    migrations.push_back({3, "three", "INSERT INTO log VALUES (3)"});
    ASSERT_TRUE(migrate(db, migrations).is_ok());
    EXPECT_EQ(schema_version(db).value(), 3);
    auto st = db.prepare("SELECT group_concat(v, ',') FROM (SELECT v FROM log ORDER BY rowid)");
    ASSERT_TRUE(st.is_ok());
    ASSERT_TRUE(st->step().value());
    EXPECT_EQ(st->column_text(0), "1,2,3");
}

TEST(Schema, MisnumberedMigrationListIsRejected) {
    Database db = open_db(":memory:");
    Status s = migrate(db, {{1, "one", "CREATE TABLE a(x)"}, {3, "three", "CREATE TABLE c(x)"}});
    ASSERT_FALSE(s.is_ok());
    EXPECT_EQ(schema_version(db).value(), 0);
}

// Migration 1 is the v1 schema exactly as released builds created it: 1,475 bytes of SQL whose
// seeded_hash64 (core/hash.h) is pinned here. Editing it would give new files a different history
// from the files in the wild, so the test below fails on any change to it, and write_v1_file() can
// take the released schema from the migration itself.
constexpr size_t kReleasedSchemaV1Bytes = 1475;
constexpr uint64_t kReleasedSchemaV1Hash = 0xe71540c74268fc93ull;

// Writes a version-1 file the way a v1 build left it: one finished run with two nodes, three metrics (one NaN,
// stored as NULL) and an event, all through plain SQL so nothing of this build's RunStore is involved.
void write_v1_file(const std::string& path) {
    Database db = open_db(path);
    ASSERT_TRUE(db.exec(schema_migrations()[0].sql).is_ok());
    ASSERT_TRUE(db.exec("PRAGMA user_version = 1").is_ok());
    ASSERT_TRUE(db.exec("INSERT INTO runs (id, name, status, created_at, finished_at, reason, config_toml, "
                        "config_hash, seed, kind, notes, tags) VALUES (7, 'old run', 'finished', "
                        "'2025-01-31T12:00:00.000Z', '2025-01-31T12:05:00.000Z', 'done', '[train]\nsteps = 2\n', "
                        "'h7', 42, 'train', 'a note', 'a,b')")
                    .is_ok());
    ASSERT_TRUE(db.exec("INSERT INTO run_nodes VALUES (7, 'replica-0', '', 'trainer', 0, -1), "
                        "(7, 'replica-1', 'tcp://10.0.0.2:5555', 'trainer', 1, 2)")
                    .is_ok());
    ASSERT_TRUE(db.exec("INSERT INTO metrics VALUES (7, 'replica-0', 1, 0, 0.5, 0.75, 'train.loss', 3.25), "
                        "(7, 'replica-0', 2, 0, 1.0, 1.5, 'train.loss', 2.5), "
                        "(7, 'replica-1', 2, 0, 1.0, 1.5, 'val.loss', NULL)")
                    .is_ok());
    ASSERT_TRUE(db.exec("INSERT INTO events VALUES (7, 0.25, 'replica-0', 1, 'checkpoint', 'step 2')").is_ok());
}

// Checks every row write_v1_file() wrote, read through this build's RunStore, with defaults in the new fields.
void expect_v1_rows_with_defaults(RunStore& store) {
    auto runs = store.list_runs();
    ASSERT_TRUE(runs.is_ok()) << runs.message();
    ASSERT_EQ(runs->size(), 1u);
    const RunSummary& r = runs.value()[0];
    EXPECT_EQ(r.id, 7);
    EXPECT_EQ(r.name, "old run");
    EXPECT_EQ(r.status, RunStatus::kFinished);
    EXPECT_EQ(r.created_at, "2025-01-31T12:00:00.000Z");
    EXPECT_EQ(r.finished_at, "2025-01-31T12:05:00.000Z");
    EXPECT_EQ(r.reason, "done");
    EXPECT_EQ(r.config_hash, "h7");
    EXPECT_EQ(r.seed, 42);
    EXPECT_EQ(r.notes, "a note");
    EXPECT_EQ(r.tags, "a,b");
    EXPECT_EQ(r.last_step, 2);
    EXPECT_EQ(r.last_train_loss, 2.5);
    ASSERT_TRUE(r.last_val_loss.has_value());
    EXPECT_TRUE(std::isnan(*r.last_val_loss));
    EXPECT_EQ(r.group, "");
    EXPECT_EQ(r.cluster, "");
    EXPECT_EQ(store.config_toml(7).value(), "[train]\nsteps = 2\n");

    auto nodes = store.nodes(7);
    ASSERT_TRUE(nodes.is_ok()) << nodes.message();
    ASSERT_EQ(nodes->size(), 2u);
    const RunNode& n = nodes.value()[1];
    EXPECT_EQ(n.node, "replica-1");
    EXPECT_EQ(n.endpoint, "tcp://10.0.0.2:5555");
    EXPECT_EQ(n.role, "trainer");
    EXPECT_EQ(n.replica, 1);
    EXPECT_EQ(n.stage, 2);
    for (const RunNode& each : nodes.value()) {
        EXPECT_EQ(each.kind, "") << each.node;
        EXPECT_EQ(each.host, "") << each.node;
        EXPECT_EQ(each.version, "") << each.node;
        EXPECT_EQ(each.threads, 0) << each.node;
        EXPECT_EQ(each.rank, -1) << each.node;
    }

    auto loss = store.metrics(7, "train.loss");
    ASSERT_TRUE(loss.is_ok()) << loss.message();
    ASSERT_EQ(loss->size(), 2u);
    EXPECT_EQ(loss.value()[0].value, 3.25);
    EXPECT_EQ(loss.value()[0].sim_s, 0.75);
    EXPECT_EQ(loss.value()[1].step, 2);
    EXPECT_EQ(store.metrics(7, "val.loss")->size(), 1u);
    auto events = store.events(7);
    ASSERT_TRUE(events.is_ok()) << events.message();
    ASSERT_EQ(events->size(), 1u);
    EXPECT_EQ(events.value()[0].level, EventLevel::kWarning);
    EXPECT_EQ(events.value()[0].text, "step 2");
}

TEST(Schema, MigrationOneIsTheReleasedV1Schema) {
    ASSERT_GE(schema_migrations().size(), 2u);
    const std::string& sql = schema_migrations()[0].sql;
    EXPECT_EQ(schema_migrations()[0].version, 1);
    EXPECT_EQ(sql.size(), kReleasedSchemaV1Bytes);
    EXPECT_EQ(seeded_hash64(sql), kReleasedSchemaV1Hash) << "migration 1 changed:\n" << sql;
}

TEST(Schema, V1FileMigratesToV2KeepingEveryRowWithDefaultsInNewColumns) {
    TempDb tmp;
    write_v1_file(tmp.path());
    {
        RunStore store = open_store(tmp.path());
        expect_v1_rows_with_defaults(store);
    }
    Database db = open_db(tmp.path());
    EXPECT_EQ(schema_version(db).value(), latest_schema_version());
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM runs"), 1);
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM run_nodes"), 2);
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM metrics"), 3);
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM events"), 1);
    EXPECT_EQ(count(db,
                    "SELECT COUNT(*) FROM pragma_table_info('runs') WHERE name IN ('group_name', 'cluster') AND "
                    "type = 'TEXT' AND \"notnull\" = 1 AND dflt_value = ''''''"),
              2);
    EXPECT_EQ(count(db,
                    "SELECT COUNT(*) FROM pragma_table_info('run_nodes') WHERE \"notnull\" = 1 AND "
                    "((name IN ('kind', 'host', 'version') AND type = 'TEXT' AND dflt_value = '''''') OR "
                    "(name = 'threads' AND type = 'INTEGER' AND dflt_value = '0') OR "
                    "(name = 'rank' AND type = 'INTEGER' AND dflt_value = '-1'))"),
              5);
    // Rows written after the migration by SQL that names no new column get the same defaults.
    ASSERT_TRUE(db.exec("INSERT INTO run_nodes (run_id, node) VALUES (7, 'late')").is_ok());
    EXPECT_EQ(count(db, "SELECT threads * 10 + rank FROM run_nodes WHERE node = 'late'"), -1);
}

TEST(Schema, MigratedV1RunCopiesToAFreshFile) {
    TempDb src;
    TempDb dest;
    write_v1_file(src.path());
    RunStore store = open_store(src.path());
    ASSERT_TRUE(store.copy_run_to(7, dest.path()).is_ok());
    RunStore copy = open_store(dest.path());
    expect_v1_rows_with_defaults(copy);
}

// --- RunStore ----------------------------------------------------------------------------------------------------

TEST(RunStore, ParseRunStatusInvertsToString) {
    for (RunStatus s : {RunStatus::kRunning, RunStatus::kFinished, RunStatus::kFailed, RunStatus::kInterrupted}) {
        EXPECT_EQ(parse_run_status(to_string(s)), s);
    }
    EXPECT_FALSE(parse_run_status("Finished").has_value());
    EXPECT_FALSE(parse_run_status("").has_value());
}

TEST(RunStore, CreateFinishListRoundTrip) {
    TempDb tmp;
    RunStore store = open_store(tmp.path());
    auto a = store.create_run("baseline", "train", "[model]\nd_model = 64\n", "hash-a", 1337);
    auto b = store.create_run("sparse", "train", "[model]\nd_model = 32\n", "hash-b", 7);
    ASSERT_TRUE(a.is_ok()) << a.message();
    ASSERT_TRUE(b.is_ok()) << b.message();
    EXPECT_LT(a.value(), b.value());

    auto runs = store.list_runs();
    ASSERT_TRUE(runs.is_ok()) << runs.message();
    ASSERT_EQ(runs->size(), 2u);
    const RunSummary& r0 = runs.value()[0];
    EXPECT_EQ(r0.id, a.value());
    EXPECT_EQ(r0.name, "baseline");
    EXPECT_EQ(r0.status, RunStatus::kRunning);
    EXPECT_EQ(r0.kind, "train");
    EXPECT_EQ(r0.config_hash, "hash-a");
    EXPECT_EQ(r0.seed, 1337);
    EXPECT_FALSE(r0.finished_at.has_value());
    EXPECT_FALSE(r0.last_step.has_value());
    EXPECT_FALSE(r0.last_train_loss.has_value());
    EXPECT_EQ(r0.reason, "");
    EXPECT_TRUE(is_iso8601_utc_ms(r0.created_at)) << r0.created_at;
    EXPECT_EQ(runs.value()[1].name, "sparse");

    ASSERT_TRUE(store.finish_run(a.value(), RunStatus::kFinished, "completed 100 steps").is_ok());
    ASSERT_TRUE(store.finish_run(b.value(), RunStatus::kFailed, "loss is NaN").is_ok());
    auto fa = store.get_run(a.value());
    ASSERT_TRUE(fa.is_ok()) << fa.message();
    EXPECT_EQ(fa->status, RunStatus::kFinished);
    EXPECT_EQ(fa->reason, "completed 100 steps");
    ASSERT_TRUE(fa->finished_at.has_value());
    EXPECT_GE(*fa->finished_at, fa->created_at);  // ISO-8601 UTC text sorts chronologically
    auto fb = store.get_run(b.value());
    ASSERT_TRUE(fb.is_ok());
    EXPECT_EQ(fb->status, RunStatus::kFailed);
    EXPECT_EQ(fb->reason, "loss is NaN");

    auto cfg = store.config_toml(a.value());
    ASSERT_TRUE(cfg.is_ok());
    EXPECT_EQ(cfg.value(), "[model]\nd_model = 64\n");
}

TEST(RunStore, UnknownRunIdIsAnErrorNamingIt) {
    RunStore store = open_store(":memory:");
    auto r = store.get_run(42);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.message(), "no run with id 42");
    EXPECT_EQ(store.finish_run(42, RunStatus::kFinished, "").message(), "no run with id 42");
    EXPECT_EQ(store.set_notes(42, "x").message(), "no run with id 42");
    EXPECT_EQ(store.set_tags(42, "x").message(), "no run with id 42");
    EXPECT_EQ(store.metrics(42, "train.loss").message(), "no run with id 42");
    EXPECT_EQ(store.config_toml(42).message(), "no run with id 42");
    EXPECT_NE(store.add_metrics(42, {metric(1, "train.loss", 1.0)}).message().find("no run with id 42"),
              std::string::npos);
    EXPECT_FALSE(store.add_event(42, EventRecord{}).is_ok());
}

TEST(RunStore, FinishWithRunningStatusIsRejected) {
    RunStore store = open_store(":memory:");
    int64_t id = store.create_run("r", "train", "", "", 0).value();
    EXPECT_FALSE(store.finish_run(id, RunStatus::kRunning, "").is_ok());
    EXPECT_EQ(store.get_run(id)->status, RunStatus::kRunning);
    EXPECT_FALSE(store.get_run(id)->finished_at.has_value());
}

TEST(RunStore, MetricsReadBackInStepOrderWithExactValues) {
    RunStore store = open_store(":memory:");
    int64_t id = store.create_run("r", "train", "", "", 0).value();
    // Inserted out of order and interleaved with another metric and another node.
    std::vector<MetricRecord> batch = {
        metric(3, "train.loss", 2.25), metric(1, "train.loss", 4.125),
        metric(2, "val.loss", 3.5),    metric(2, "train.loss", 3.0625, "worker-1"),
        metric(2, "train.loss", 3.0),
    };
    ASSERT_TRUE(store.add_metrics(id, batch).is_ok());

    auto loss = store.metrics(id, "train.loss");
    ASSERT_TRUE(loss.is_ok()) << loss.message();
    ASSERT_EQ(loss->size(), 4u);
    const std::vector<int64_t> steps = {1, 2, 2, 3};
    const std::vector<double> values = {4.125, 3.0625, 3.0, 2.25};  // step ties keep insertion order
    const std::vector<std::string> nodes = {"local", "worker-1", "local", "local"};
    for (size_t i = 0; i < loss->size(); ++i) {
        const MetricRecord& r = loss.value()[i];
        EXPECT_EQ(r.step, steps[i]) << i;
        EXPECT_EQ(r.value, values[i]) << i;
        EXPECT_EQ(r.node, nodes[i]) << i;
        EXPECT_EQ(r.name, "train.loss");
        EXPECT_EQ(r.outer_step, steps[i] / 10);
        EXPECT_EQ(r.wall_s, 0.5 * static_cast<double>(steps[i]));
        EXPECT_EQ(r.sim_s, 2.0 * static_cast<double>(steps[i]));
    }
    auto val = store.metrics(id, "val.loss");
    ASSERT_TRUE(val.is_ok());
    ASSERT_EQ(val->size(), 1u);
    EXPECT_EQ(val.value()[0].value, 3.5);
    EXPECT_TRUE(store.metrics(id, "no.such.metric")->empty());
}

TEST(RunStore, ManyMetricsInOneBatchKeepFullPrecision) {
    RunStore store = open_store(":memory:");
    int64_t id = store.create_run("r", "train", "", "", 0).value();
    std::vector<MetricRecord> batch;
    for (int64_t s = 1000; s >= 1; --s) batch.push_back(metric(s, "train.loss", 1.0 / static_cast<double>(s)));
    ASSERT_TRUE(store.add_metrics(id, batch).is_ok());
    auto loss = store.metrics(id, "train.loss");
    ASSERT_TRUE(loss.is_ok());
    ASSERT_EQ(loss->size(), 1000u);
    for (int64_t s = 1; s <= 1000; ++s) {
        ASSERT_EQ(loss.value()[s - 1].step, s);
        ASSERT_EQ(loss.value()[s - 1].value, 1.0 / static_cast<double>(s));  // bit-exact REAL round trip
    }
}

TEST(RunStore, SummaryShowsLastStepAndLossAtHighestStep) {
    RunStore store = open_store(":memory:");
    int64_t id = store.create_run("r", "train", "", "", 0).value();
    ASSERT_TRUE(store
                    .add_metrics(id, {metric(10, "train.loss", 1.5), metric(5, "train.loss", 2.5),
                                      metric(12, "train.tokens_per_s", 900.0)})
                    .is_ok());
    auto r = store.get_run(id);
    ASSERT_TRUE(r.is_ok()) << r.message();
    EXPECT_EQ(r->last_step, 12);                 // any metric counts
    EXPECT_EQ(r->last_train_loss, 1.5);          // highest step, not last inserted
    EXPECT_FALSE(r->last_val_loss.has_value());  // never reported
    ASSERT_TRUE(store.add_metrics(id, {metric(12, "val.loss", 1.75)}).is_ok());
    auto listed = store.list_runs();
    ASSERT_TRUE(listed.is_ok());
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_EQ(listed.value()[0].last_val_loss, 1.75);
}

TEST(RunStore, NanLossRoundTripsAsNan) {
    RunStore store = open_store(":memory:");
    int64_t id = store.create_run("diverged", "train", "", "", 0).value();
    ASSERT_TRUE(store.add_metrics(id, {metric(1, "train.loss", 3.0), metric(2, "train.loss", std::nan(""))}).is_ok());
    auto loss = store.metrics(id, "train.loss");
    ASSERT_TRUE(loss.is_ok());
    ASSERT_EQ(loss->size(), 2u);
    EXPECT_TRUE(std::isnan(loss.value()[1].value));
    auto r = store.get_run(id);
    ASSERT_TRUE(r.is_ok());
    ASSERT_TRUE(r->last_train_loss.has_value());  // reported, even though the value is NaN
    EXPECT_TRUE(std::isnan(*r->last_train_loss));
}

TEST(RunStore, NotesTagsEventsAndNodesRoundTrip) {
    RunStore store = open_store(":memory:");
    int64_t id = store.create_run("r", "train", "", "", 0).value();
    ASSERT_TRUE(store.set_notes(id, "lr too high?").is_ok());
    ASSERT_TRUE(store.set_tags(id, "ablation,topk").is_ok());
    EXPECT_EQ(store.get_run(id)->notes, "lr too high?");
    EXPECT_EQ(store.get_run(id)->tags, "ablation,topk");

    EventRecord e1{1.5, "local", EventLevel::kInfo, "start", "seed 0"};
    EventRecord e2{9.25, "worker-1", EventLevel::kError, "error", "out of memory"};
    ASSERT_TRUE(store.add_event(id, e1).is_ok());
    ASSERT_TRUE(store.add_event(id, e2).is_ok());
    auto events = store.events(id);
    ASSERT_TRUE(events.is_ok()) << events.message();
    ASSERT_EQ(events->size(), 2u);
    EXPECT_EQ(events.value()[1].wall_s, 9.25);
    EXPECT_EQ(events.value()[1].node, "worker-1");
    EXPECT_EQ(events.value()[1].level, EventLevel::kError);
    EXPECT_EQ(events.value()[1].kind, "error");
    EXPECT_EQ(events.value()[1].text, "out of memory");
    EXPECT_EQ(events.value()[0].kind, "start");

    ASSERT_TRUE(store.add_node(id, {"worker-1", "tcp://10.0.0.2:5555", "trainer", 1, 0}).is_ok());
    auto nodes = store.nodes(id);
    ASSERT_TRUE(nodes.is_ok());
    ASSERT_EQ(nodes->size(), 1u);
    EXPECT_EQ(nodes.value()[0].endpoint, "tcp://10.0.0.2:5555");
    EXPECT_EQ(nodes.value()[0].replica, 1);
    EXPECT_EQ(nodes.value()[0].stage, 0);
}

TEST(RunStore, GroupAndClusterRoundTripThroughGetAndList) {
    RunStore store = open_store(":memory:");
    int64_t ddp = store.create_run("quickstart-ddp", "train", "", "", 0).value();
    int64_t diloco = store.create_run("quickstart-diloco", "train", "", "", 0).value();
    int64_t alone = store.create_run("alone", "train", "", "", 0).value();
    EXPECT_EQ(store.get_run(alone)->group, "");  // a new run belongs to no group
    EXPECT_EQ(store.get_run(alone)->cluster, "");
    ASSERT_TRUE(store.set_run_group(ddp, "quickstart-1", "threads").is_ok());
    ASSERT_TRUE(store.set_run_group(diloco, "quickstart-1", "local").is_ok());
    auto r = store.get_run(diloco);
    ASSERT_TRUE(r.is_ok()) << r.message();
    EXPECT_EQ(r->group, "quickstart-1");
    EXPECT_EQ(r->cluster, "local");
    auto runs = store.list_runs();
    ASSERT_TRUE(runs.is_ok()) << runs.message();
    ASSERT_EQ(runs->size(), 3u);
    EXPECT_EQ(runs.value()[0].group, "quickstart-1");
    EXPECT_EQ(runs.value()[0].cluster, "threads");
    EXPECT_EQ(runs.value()[1].cluster, "local");
    EXPECT_EQ(runs.value()[2].group, "");
    EXPECT_EQ(store.set_run_group(99, "g", "remote").message(), "no run with id 99");
    ASSERT_TRUE(store.set_run_group(ddp, "", "").is_ok());  // clearing is allowed
    EXPECT_EQ(store.get_run(ddp)->group, "");
    EXPECT_EQ(store.get_run(ddp)->cluster, "");
}

TEST(RunStore, NodeKindHostVersionThreadsAndRankRoundTrip) {
    RunStore store = open_store(":memory:");
    int64_t id = store.create_run("r", "train", "", "", 0).value();
    RunNode full;
    full.node = "replica-0/rank-1";
    full.endpoint = "tcp://10.0.0.3:5555";
    full.role = "trainer";
    full.replica = 0;
    full.kind = "full";
    full.host = "gpu-box-3";
    full.version = "0.3.0-dev";
    full.threads = 6;
    full.rank = 1;
    RunNode stage;
    stage.node = "replica-1/stage-2";
    stage.replica = 1;
    stage.stage = 2;
    stage.kind = "pipeline";
    stage.host = "laptop";
    stage.threads = 2;
    ASSERT_TRUE(store.add_node(id, full).is_ok());
    ASSERT_TRUE(store.add_node(id, stage).is_ok());
    EXPECT_FALSE(store.add_node(id + 1, full).is_ok());
    auto nodes = store.nodes(id);
    ASSERT_TRUE(nodes.is_ok()) << nodes.message();
    ASSERT_EQ(nodes->size(), 2u);
    const RunNode& a = nodes.value()[0];
    EXPECT_EQ(a.node, "replica-0/rank-1");
    EXPECT_EQ(a.endpoint, "tcp://10.0.0.3:5555");
    EXPECT_EQ(a.role, "trainer");
    EXPECT_EQ(a.replica, 0);
    EXPECT_EQ(a.stage, -1);
    EXPECT_EQ(a.kind, "full");
    EXPECT_EQ(a.host, "gpu-box-3");
    EXPECT_EQ(a.version, "0.3.0-dev");
    EXPECT_EQ(a.threads, 6);
    EXPECT_EQ(a.rank, 1);
    const RunNode& b = nodes.value()[1];
    EXPECT_EQ(b.kind, "pipeline");
    EXPECT_EQ(b.stage, 2);
    EXPECT_EQ(b.host, "laptop");
    EXPECT_EQ(b.version, "");
    EXPECT_EQ(b.threads, 2);
    EXPECT_EQ(b.rank, -1);  // RunNode's default: the replica is one process
}

TEST(RunStore, StandaloneCopyKeepsGroupClusterAndNodeFields) {
    TempDb src;
    TempDb dest;
    RunStore store = open_store(src.path());
    (void)store.create_run("other", "train", "", "", 0).value();
    int64_t id = store.create_run("grouped", "train", "", "", 0).value();
    ASSERT_TRUE(store.set_run_group(id, "sweep-lr", "remote").is_ok());
    RunNode n;
    n.node = "replica-3";
    n.kind = "full";
    n.host = "box-9";
    n.version = "0.3.0";
    n.threads = 8;
    n.rank = 0;
    ASSERT_TRUE(store.add_node(id, n).is_ok());
    ASSERT_TRUE(store.copy_run_to(id, dest.path()).is_ok());
    RunStore copy = open_store(dest.path());
    auto r = copy.get_run(id);
    ASSERT_TRUE(r.is_ok()) << r.message();
    EXPECT_EQ(r->group, "sweep-lr");
    EXPECT_EQ(r->cluster, "remote");
    ASSERT_EQ(copy.list_runs()->size(), 1u);
    auto nodes = copy.nodes(id);
    ASSERT_TRUE(nodes.is_ok()) << nodes.message();
    ASSERT_EQ(nodes->size(), 1u);
    EXPECT_EQ(nodes.value()[0].node, "replica-3");
    EXPECT_EQ(nodes.value()[0].kind, "full");
    EXPECT_EQ(nodes.value()[0].host, "box-9");
    EXPECT_EQ(nodes.value()[0].version, "0.3.0");
    EXPECT_EQ(nodes.value()[0].threads, 8);
    EXPECT_EQ(nodes.value()[0].rank, 0);
}

TEST(RunStore, ReopeningTheFileKeepsEarlierRuns) {
    TempDb tmp;
    int64_t first = 0;
    {
        RunStore store = open_store(tmp.path());
        first = store.create_run("before restart", "train", "a = 1\n", "h1", 3).value();
        ASSERT_TRUE(store.add_metrics(first, {metric(1, "train.loss", 5.5), metric(2, "train.loss", 4.5)}).is_ok());
        ASSERT_TRUE(store.finish_run(first, RunStatus::kInterrupted, "SIGINT").is_ok());
    }
    RunStore store = open_store(tmp.path());
    auto runs = store.list_runs();
    ASSERT_TRUE(runs.is_ok()) << runs.message();
    ASSERT_EQ(runs->size(), 1u);
    EXPECT_EQ(runs.value()[0].id, first);
    EXPECT_EQ(runs.value()[0].name, "before restart");
    EXPECT_EQ(runs.value()[0].status, RunStatus::kInterrupted);
    EXPECT_EQ(runs.value()[0].reason, "SIGINT");
    EXPECT_EQ(runs.value()[0].last_step, 2);
    EXPECT_EQ(runs.value()[0].last_train_loss, 4.5);
    int64_t second = store.create_run("after restart", "train", "", "", 0).value();
    EXPECT_GT(second, first);
}

TEST(RunStore, TwoConnectionsOnOneFileSeeEachOthersCommits) {
    TempDb tmp;
    RunStore writer = open_store(tmp.path());
    RunStore reader = open_store(tmp.path());  // second open of a migrated file must not re-run migrations
    int64_t id = writer.create_run("shared", "train", "", "", 0).value();
    ASSERT_TRUE(writer.add_metrics(id, {metric(1, "train.loss", 2.0)}).is_ok());
    auto r = reader.get_run(id);
    ASSERT_TRUE(r.is_ok()) << r.message();
    EXPECT_EQ(r->last_train_loss, 2.0);
}

TEST(RunStore, ConcurrentFirstOpensOfAFreshFileBothSucceed) {
    // Two processes (here: threads with their own connections) starting on a new file race to migrate it;
    // the loser must find the schema already there, not fail with "table runs already exists".
    for (int round = 0; round < 20; ++round) {
        TempDb tmp;
        Status results[4];
        std::vector<std::thread> threads;
        for (Status& result : results) {
            threads.emplace_back([&tmp, &result] { result = RunStore::open(tmp.path()).status(); });
        }
        for (std::thread& t : threads) t.join();
        for (const Status& result : results) {
            ASSERT_TRUE(result.is_ok()) << "round " << round << ": " << result.message();
        }
        Database db = open_db(tmp.path());
        EXPECT_EQ(schema_version(db).value(), latest_schema_version());
    }
}

// --- MetricBuffer ------------------------------------------------------------------------------------------------

TEST(MetricBuffer, FlushesWhenThresholdIsReached) {
    RunStore store = open_store(":memory:");
    int64_t id = store.create_run("r", "train", "", "", 0).value();
    MetricBuffer buffer(store, id, 4);
    for (int64_t s = 1; s <= 3; ++s) buffer.add(metric(s, "train.loss", 1.0));
    EXPECT_EQ(buffer.pending(), 3u);
    EXPECT_TRUE(store.metrics(id, "train.loss")->empty());  // nothing written below the threshold
    buffer.add(metric(4, "train.loss", 1.0));
    EXPECT_EQ(buffer.pending(), 0u);
    EXPECT_EQ(store.metrics(id, "train.loss")->size(), 4u);
    buffer.add(metric(5, "train.loss", 1.0));
    EXPECT_EQ(store.metrics(id, "train.loss")->size(), 4u);
    ASSERT_TRUE(buffer.flush().is_ok());
    EXPECT_EQ(buffer.pending(), 0u);
    EXPECT_EQ(store.metrics(id, "train.loss")->size(), 5u);
}

TEST(MetricBuffer, DefaultThresholdIs256) {
    RunStore store = open_store(":memory:");
    int64_t id = store.create_run("r", "train", "", "", 0).value();
    MetricBuffer buffer(store, id);
    for (int64_t s = 1; s <= 255; ++s) buffer.add(metric(s, "train.loss", 1.0));
    EXPECT_EQ(buffer.pending(), 255u);
    buffer.add(metric(256, "train.loss", 1.0));
    EXPECT_EQ(buffer.pending(), 0u);
    EXPECT_EQ(store.metrics(id, "train.loss")->size(), 256u);
}

TEST(MetricBuffer, DestructorFlushesPendingRecords) {
    TempDb tmp;
    RunStore store = open_store(tmp.path());
    int64_t id = store.create_run("r", "train", "", "", 0).value();
    {
        MetricBuffer buffer(store, id, 100);
        buffer.add(metric(1, "train.loss", 0.75));
        buffer.add(metric(2, "train.loss", 0.5));
        EXPECT_TRUE(store.metrics(id, "train.loss")->empty());
    }
    auto loss = store.metrics(id, "train.loss");
    ASSERT_EQ(loss->size(), 2u);
    EXPECT_EQ(loss.value()[1].value, 0.5);
}

TEST(MetricBuffer, FailedAutomaticWriteIsKeptForFlushAndRecordsStayPending) {
    RunStore store = open_store(":memory:");
    MetricBuffer buffer(store, 999, 2);  // no such run: every write fails
    buffer.add(metric(1, "train.loss", 1.0));
    buffer.add(metric(2, "train.loss", 1.0));  // automatic write fails here
    EXPECT_EQ(buffer.pending(), 2u);
    buffer.add(metric(3, "train.loss", 1.0));  // no retry until another 2 records arrive
    EXPECT_EQ(buffer.pending(), 3u);
    Status s = buffer.flush();
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("no run with id 999"), std::string::npos) << s.message();
    EXPECT_EQ(buffer.pending(), 3u);
}

TEST(MetricBuffer, RecordsOfAFailedWriteAreRetriedByTheNextFlush) {
    RunStore store = open_store(":memory:");
    MetricBuffer buffer(store, 1, 2);  // run 1 does not exist yet
    buffer.add(metric(1, "train.loss", 1.0));
    buffer.add(metric(2, "train.loss", 2.0));
    EXPECT_EQ(buffer.pending(), 2u);
    ASSERT_EQ(store.create_run("late", "train", "", "", 0).value(), 1);
    Status s = buffer.flush();
    EXPECT_FALSE(s.is_ok());          // the kept error is still reported once...
    EXPECT_EQ(buffer.pending(), 0u);  // ...but the retried records are now saved
    EXPECT_EQ(store.metrics(1, "train.loss")->size(), 2u);
    EXPECT_TRUE(buffer.flush().is_ok());
}

// --- ingest benchmark --------------------------------------------------------------------------------------------

TEST(IngestBench, WritesTheRowsInBatchesAndRemovesItsFile) {
    TempDb tmp;
    IngestBenchOptions o;
    o.rows = 1000;
    o.batch = 300;  // the last batch is short: 300, 300, 300, 100
    o.single_rows = 40;
    o.db_path = tmp.path();
    auto r = bench_ingest(o);
    ASSERT_TRUE(r.is_ok()) << r.message();
    EXPECT_EQ(r->db_path, tmp.path());
    EXPECT_EQ(r->batched.rows, 1000);
    EXPECT_EQ(r->batched.transactions, 4);
    EXPECT_EQ(r->single.rows, 40);
    EXPECT_EQ(r->single.transactions, 40);
    EXPECT_GT(r->batched.rows_per_s, 0);
    EXPECT_GT(r->batched.file_bytes, 0);
    EXPECT_DOUBLE_EQ(r->ratio, r->batched.rows_per_s / r->single.rows_per_s);
    for (const char* suffix : {"", "-wal", "-shm"}) EXPECT_FALSE(std::ifstream(tmp.path() + suffix).good()) << suffix;
}

TEST(IngestBench, RefusesAnExistingFileAndLeavesItAlone) {
    TempDb tmp;
    std::ofstream(tmp.path()) << "keep me";
    IngestBenchOptions o;
    o.rows = 10;
    o.db_path = tmp.path();
    auto r = bench_ingest(o);
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.message().find("exists already"), std::string::npos) << r.message();
    std::string text;
    std::getline(std::ifstream(tmp.path()), text);
    EXPECT_EQ(text, "keep me");
    o.db_path.clear();
    o.batch = 0;
    EXPECT_FALSE(bench_ingest(o).is_ok());
}

}  // namespace
}  // namespace tw

// --- RunWriter -----------------------------------------------------------------------------------------------------

namespace tw {
namespace {

// While another process-like connection holds the write lock, handing rows, events and heartbeats
// to the writer returns at once (the caller never waits on the disk); once the lock is released,
// drain() sees everything written, in full.
TEST(RunWriter, CallersNeverWaitOnALockedStore) {
    TempDb tmp;
    RunStore store = open_store(tmp.path());
    int64_t id = store.create_run("r", "run", "", "", 0).value();
    ASSERT_EQ(store.get_run(id)->heartbeat_at, 0);
    auto other = Database::open(tmp.path());
    ASSERT_TRUE(other.is_ok()) << other.message();
    {
        RunWriter writer(store, id, 0.01);
        ASSERT_TRUE(other->exec("BEGIN IMMEDIATE").is_ok());  // the write lock, held by someone else
        for (int64_t s = 1; s <= 300; ++s) writer.add_metrics({metric(s, "train.loss", 1.0 / s)});
        writer.add_event({0.5, "replica-1", EventLevel::kWarning, "node-lost", "gone"});
        writer.heartbeat();
        // Reaching here with the lock still held shows the calls returned without writing (a write
        // made by the caller would have waited the busy timeout and lost the event to SQLITE_BUSY).
        ASSERT_TRUE(other->exec("COMMIT").is_ok());
        ASSERT_TRUE(writer.drain().is_ok());
        auto rows = store.metrics(id, "train.loss");
        ASSERT_EQ(rows->size(), 300u);
        EXPECT_EQ(rows.value()[299].value, 1.0 / 300);
        auto events = store.events(id);
        ASSERT_TRUE(events.is_ok());
        bool lost = false;
        for (const EventRecord& e : events.value()) lost = lost || (e.kind == "node-lost" && e.node == "replica-1");
        EXPECT_TRUE(lost);
        EXPECT_GT(store.get_run(id)->heartbeat_at, 0);
        writer.add_metrics({metric(301, "train.loss", 0.25)});
    }  // the destructor writes what is still queued
    EXPECT_EQ(store.metrics(id, "train.loss")->size(), 301u);
}

// A full batch (MetricBuffer::kDefaultFlushAt rows) is committed without a drain and without the
// periodic flush (an hour here): readers see a fast run's rows batch by batch, as before the
// writer thread existed.
TEST(RunWriter, AFullBatchIsCommittedAtOnce) {
    TempDb tmp;
    RunStore store = open_store(tmp.path());
    int64_t id = store.create_run("r", "run", "", "", 0).value();
    RunWriter writer(store, id, 3600);
    std::vector<MetricRecord> rows;
    for (int64_t s = 1; s <= static_cast<int64_t>(MetricBuffer::kDefaultFlushAt); ++s) rows.push_back(metric(s, "train.loss", 1.0));
    writer.add_metrics(rows);
    size_t seen = 0;
    for (int i = 0; i < 2000 && seen < rows.size(); ++i) {  // up to 20 s on a loaded machine
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        seen = store.metrics(id, "train.loss")->size();
    }
    EXPECT_EQ(seen, rows.size());
}

}  // namespace
}  // namespace tw

// --- a store that fills up -------------------------------------------------------------------------------------------

namespace tw {
namespace {

using test::PageLimit;

std::vector<MetricRecord> steps(int64_t from, int64_t n) {
    std::vector<MetricRecord> rows;
    for (int64_t s = from; s < from + n; ++s) rows.push_back(metric(s, "train.loss", 1.0 / static_cast<double>(s + 1)));
    return rows;
}

// Rows of the run counted in the file by a connection of its own, and their steps 0..n-1 in full.
int64_t stored_prefix(const std::string& path, int64_t id) {
    Database db = open_db(path);
    const std::string where = " FROM metrics WHERE run_id = " + std::to_string(id);
    const int64_t n = count(db, "SELECT COUNT(*)" + where);
    EXPECT_EQ(count(db, "SELECT COUNT(DISTINCT step)" + where), n);
    if (n > 0) {
        EXPECT_EQ(count(db, "SELECT MAX(step)" + where), n - 1) << "a row of a later batch without an earlier one";
    }
    return n;
}

// The room a store reports is what SQLite's page limit leaves, when that is less than the disk's.
TEST(RunStore, RoomIsWhatThePageLimitLeavesWhenTheDiskHasMore) {
    TempDb tmp;
    { RunStore first = open_store(tmp.path()); }
    const int64_t pages = PageLimit::pages_of(tmp.path());
    ASSERT_GT(pages, 0);
    PageLimit limit(tmp.path(), pages + 10);
    RunStore store = open_store(tmp.path());
    auto room = store.room_bytes();
    ASSERT_TRUE(room.is_ok()) << room.message();
    Database db = open_db(tmp.path());
    const int64_t page_size = count(db, "PRAGMA page_size");
    EXPECT_EQ(room.value(), (pages + 10 - count(db, "PRAGMA page_count")) * page_size);
}

// A failed write is never only a warning while rows pile up in memory: the first one (SQLITE_FULL
// here, from the page limit) is failure() at once, every row committed before it stays, the rows
// not stored are counted exactly, and a small row (the run's end) still fits where a batch did not.
TEST(RunWriter, AFailedWriteIsReportedAtOnceAndKeepsEveryRowAlreadyWritten) {
    TempDb tmp;
    int64_t id = 0;
    {
        RunStore first = open_store(tmp.path());
        id = first.create_run("r", "run", "", "", 0).value();
    }
    PageLimit limit(tmp.path(), PageLimit::pages_of(tmp.path()) + 12);  // room for a few batches, not ten
    RunStore store = open_store(tmp.path());
    RunWriter writer(store, id, 0.01, /*reserve_bytes=*/0);
    int64_t handed = 0;
    for (int i = 0; i < 4000 && writer.failure().is_ok(); ++i) {
        writer.add_metrics(steps(handed, 100));
        handed += 100;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    const Status failure = writer.failure();
    ASSERT_FALSE(failure.is_ok()) << "no failure after " << handed << " rows";
    EXPECT_NE(failure.message().find("database or disk is full"), std::string::npos) << failure.message();
    EXPECT_FALSE(writer.drain().is_ok()) << "drain() hid the failure";
    const int64_t stored = stored_prefix(tmp.path(), id);
    EXPECT_GT(stored, 0) << "the rows written before the store filled up are gone";
    EXPECT_EQ(stored + static_cast<int64_t>(writer.unstored()), handed);
    EXPECT_GT(writer.unstored(), 0u);
    ASSERT_TRUE(store.finish_run(id, RunStatus::kFailed, "the store could not be written").is_ok());
    EXPECT_FALSE(writer.failure().is_ok()) << "the failure was forgotten after a write that succeeded";
    EXPECT_EQ(store.get_run(id)->status, RunStatus::kFailed);
}

// Under the reserve the writer stops committing and says so (before SQLite has no room left for
// the run's end), holds the rows, and drain() writes every one of them into the reserve.
TEST(RunWriter, UnderTheReserveRowsAreHeldAndDrainWritesThem) {
    TempDb tmp;
    RunStore store = open_store(tmp.path());
    const int64_t id = store.create_run("r", "run", "", "", 0).value();
    // More than any disk of a test machine has free: the store is always under it.
    RunWriter writer(store, id, 0.01, /*reserve_bytes=*/int64_t{1} << 60);
    writer.add_metrics(steps(0, 600));
    Status failure;
    for (int i = 0; i < 2000 && failure.is_ok(); ++i) {  // up to 20 s on a loaded machine
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        failure = writer.failure();
    }
    ASSERT_FALSE(failure.is_ok());
    EXPECT_NE(failure.message().find("the disk is nearly full"), std::string::npos) << failure.message();
    EXPECT_NE(failure.message().find(tmp.path()), std::string::npos) << failure.message();
    EXPECT_EQ(stored_prefix(tmp.path(), id), 0) << "rows were committed under the reserve";
    EXPECT_EQ(writer.unstored(), 600u);
    EXPECT_TRUE(writer.drain().is_ok());
    EXPECT_EQ(stored_prefix(tmp.path(), id), 600);
    EXPECT_EQ(writer.unstored(), 0u);
}

}  // namespace
}  // namespace tw
