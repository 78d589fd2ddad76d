// Tests of storage/store_probe.h and RunStore::delete_run: a file that is not thinwire's (even one
// with a `runs` table or view), a damaged store, or a newer thinwire's store is refused with its
// bytes, modification time and journal mode untouched; a missing or empty file becomes a fresh
// store; a missing file is never created by a reader; a deleted run leaves no rows behind.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "storage/run_store.h"
#include "storage/schema.h"
#include "storage/store_probe.h"

namespace tw {
namespace {

std::string temp_path(const std::string& tag) {
    static int counter = 0;
    const std::string p = testing::TempDir() + "tw_probe_" + tag + "_" + std::to_string(getpid()) + "_" +
                          std::to_string(counter++) + ".db";
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((p + suffix).c_str());
    return p;
}

bool exists(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0;
}

std::string bytes_of(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// A database written by plain SQLite (rollback journal, as most applications leave it).
void make_db(const std::string& p, const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
}

// A file's bytes and modification time (to the nanosecond): what "untouched" means.
struct Snapshot {
    std::string bytes;
    long long mtime_ns = 0;
    bool operator==(const Snapshot& o) const { return bytes == o.bytes && mtime_ns == o.mtime_ns; }
};
Snapshot snapshot(const std::string& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    return {bytes_of(p), static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec};
}

// Opens `p` as a store both ways and expects a refusal whose message holds every one of `names`,
// with the file exactly as it was and no -wal or -journal made beside it. A file already in WAL
// mode (`wal`) may gain an empty -wal and -shm: any reader of it, the sqlite3 shell's too, makes
// them; nothing may be written into them.
void expect_refused_untouched(const std::string& p, const std::vector<std::string>& names, bool wal = false) {
    const Snapshot before = snapshot(p);
    for (StoreAccess access : {StoreAccess::kExisting, StoreAccess::kCreate}) {
        auto r = RunStore::open(p, access);
        ASSERT_FALSE(r) << p << " was opened as a run store";
        for (const std::string& n : names) EXPECT_NE(r.status().message().find(n), std::string::npos) << r.status().message();
        EXPECT_NE(r.status().message().find(p), std::string::npos) << r.status().message();
        EXPECT_NE(r.status().message().find("refused before anything was written"), std::string::npos)
            << r.status().message();
    }
    EXPECT_TRUE(snapshot(p) == before) << p << " changed (bytes or modification time)";
    if (wal) EXPECT_EQ(bytes_of(p + "-wal"), "") << "something was written to the -wal";
    else EXPECT_FALSE(exists(p + "-wal")) << "switched to WAL";
    EXPECT_FALSE(exists(p + "-journal"));
}

TEST(StoreProbe, AMissingFileIsCreatedOnlyWhenAskedTo) {
    const std::string p = temp_path("missing");
    Status st = probe_store(p, StoreAccess::kExisting, latest_schema_version());
    ASSERT_FALSE(st);
    EXPECT_NE(st.message().find("no such file"), std::string::npos) << st.message();
    auto r = RunStore::open(p, StoreAccess::kExisting);
    ASSERT_FALSE(r);
    EXPECT_FALSE(exists(p)) << "a reader created the store";
    EXPECT_TRUE(probe_store(p, StoreAccess::kCreate, latest_schema_version()));
    ASSERT_TRUE(RunStore::open(p, StoreAccess::kCreate));
    EXPECT_TRUE(exists(p));
    EXPECT_TRUE(RunStore::open(p, StoreAccess::kExisting));
}

TEST(StoreProbe, AnotherApplicationsDatabaseIsRefusedUntouched) {
    const std::string p = temp_path("foreign");
    make_db(p, "CREATE TABLE users(id INTEGER, name TEXT); CREATE TABLE orders(id INTEGER); "
               "INSERT INTO users VALUES (1, 'ada');");
    const std::string before = bytes_of(p);
    auto r = RunStore::open(p);
    ASSERT_FALSE(r);
    EXPECT_NE(r.status().message().find("not a thinwire run store"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("orders, users"), std::string::npos) << r.status().message();
    EXPECT_EQ(bytes_of(p), before) << "the file changed (journal mode or tables)";
    EXPECT_FALSE(exists(p + "-wal"));
}

TEST(StoreProbe, ANewerSchemaIsRefusedBeforeTheJournalModeChanges) {
    const std::string p = temp_path("newer");
    {
        auto s = RunStore::open(p);
        ASSERT_TRUE(s);
        ASSERT_TRUE(s->create_run("r", "train", "", "h", 1));
    }
    // As a newer thinwire would leave it: one version up, back in rollback-journal mode.
    make_db(p, "PRAGMA journal_mode=DELETE; PRAGMA user_version=" + std::to_string(latest_schema_version() + 1));
    const std::string before = bytes_of(p);
    auto r = RunStore::open(p);
    ASSERT_FALSE(r);
    EXPECT_NE(r.status().message().find("schema version " + std::to_string(latest_schema_version() + 1)),
              std::string::npos)
        << r.status().message();
    EXPECT_EQ(bytes_of(p), before);
    EXPECT_FALSE(exists(p + "-wal")) << "the file was switched to WAL before it was refused";
}

TEST(StoreProbe, NotADatabaseAndADirectoryAreNamed) {
    const std::string p = temp_path("text");
    std::ofstream(p) << "this is a text file, long enough to be looked at as a database header........";
    Status st = probe_store(p, StoreAccess::kCreate, latest_schema_version());
    ASSERT_FALSE(st);
    EXPECT_NE(st.message().find("not a database"), std::string::npos) << st.message();
    Status dir = probe_store(testing::TempDir(), StoreAccess::kCreate, latest_schema_version());
    ASSERT_FALSE(dir);
    EXPECT_NE(dir.message().find("directory"), std::string::npos) << dir.message();
    std::remove(p.c_str());
}

// Another program's database with a `runs` table of its own is refused by what it holds, before
// any write: not its journal mode (WAL), not a table, not user_version changes.
TEST(StoreProbe, AForeignDatabaseWithARunsTableIsRefusedUntouched) {
    const std::string p = temp_path("foreign_runs");
    make_db(p, "CREATE TABLE runs(id INTEGER PRIMARY KEY, who TEXT); INSERT INTO runs VALUES (1, 'marathon');");
    expect_refused_untouched(p, {"not a thinwire run store", "the table runs", "user_version 0"});
    // The same table under a thinwire version number: its columns are not thinwire's.
    const std::string q = temp_path("foreign_runs_v");
    make_db(q, "CREATE TABLE runs(id INTEGER PRIMARY KEY, who TEXT); PRAGMA user_version = " +
                   std::to_string(latest_schema_version()));
    expect_refused_untouched(q, {"not a thinwire run store", "'runs' has the columns (id, who)"});
}

// A database holding only a view named `runs` is not an empty store to adopt: it is refused by name.
TEST(StoreProbe, AViewNamedRunsIsRefusedByName) {
    const std::string p = temp_path("view");
    make_db(p, "CREATE VIEW runs AS SELECT 1 AS id, 'x' AS name;");
    expect_refused_untouched(p, {"not a thinwire run store", "the view runs"});
    // A thinwire store whose `runs` table was swapped for a view.
    const std::string q = temp_path("view_in_store");
    { ASSERT_TRUE(RunStore::open(q)); }
    make_db(q, "PRAGMA journal_mode=DELETE; ALTER TABLE runs RENAME TO runs_old; "
               "CREATE VIEW runs AS SELECT * FROM runs_old;");
    expect_refused_untouched(q, {"'runs' is a view", "thinwire's schema version " + std::to_string(latest_schema_version())});
}

// Tables thinwire's schema does not have, or one it needs missing, are named.
TEST(StoreProbe, ASchemaThatDiffersFromThinwiresIsRefusedNamingTheObject) {
    const std::string extra = temp_path("extra");
    { ASSERT_TRUE(RunStore::open(extra)); }
    make_db(extra, "PRAGMA journal_mode=DELETE; CREATE TABLE notes_of_mine(x);");
    expect_refused_untouched(extra, {"the table 'notes_of_mine'"});
    const std::string missing = temp_path("missing_index");
    { ASSERT_TRUE(RunStore::open(missing)); }
    make_db(missing, "PRAGMA journal_mode=DELETE; DROP INDEX metrics_run_step;");
    expect_refused_untouched(missing, {"lacks the index 'metrics_run_step'"});
}

// The files a store starts from: none, an empty file, a database with nothing in it. Each becomes
// a fresh store that takes a run; a thinwire store of every earlier version still opens.
TEST(StoreProbe, AMissingEmptyOrBlankFileBecomesAFreshStore) {
    const std::string empty = temp_path("empty");
    std::ofstream(empty).close();
    const std::string blank = temp_path("blank");
    make_db(blank, "PRAGMA page_size = 8192; VACUUM;");  // a header, no schema objects
    for (const std::string& p : {temp_path("none"), empty, blank}) {
        ASSERT_TRUE(probe_store(p, StoreAccess::kCreate, latest_schema_version())) << p;
        auto s = RunStore::open(p);
        ASSERT_TRUE(s) << s.status().message();
        EXPECT_TRUE(s->create_run("r", "train", "", "h", 1)) << p;
    }
    for (int v = 1; v < latest_schema_version(); ++v) {
        const std::string old = temp_path("v" + std::to_string(v));
        std::string sql;
        for (int i = 0; i < v; ++i) sql += schema_migrations()[static_cast<size_t>(i)].sql;
        make_db(old, sql + "PRAGMA user_version = " + std::to_string(v) + ";");
        auto s = RunStore::open(old);
        ASSERT_TRUE(s) << "version " << v << ": " << s.status().message();
    }
}

// 4 KiB of random bytes written into the middle of a store: PRAGMA quick_check refuses it before
// anything is written, naming the file and the first problem, and the file keeps its bytes and
// modification time.
TEST(StoreProbe, ADamagedStoreIsRefusedBeforeAnythingIsWritten) {
    const std::string p = temp_path("damaged");
    {
        auto s = RunStore::open(p);
        ASSERT_TRUE(s);
        const int64_t id = s->create_run("r", "train", "", "h", 1).value();
        std::vector<MetricRecord> rows;
        for (int64_t step = 0; step < 20000; ++step) rows.push_back({"replica-0", step, -1, 0.0, 0.0, "train.loss", 1.0});
        ASSERT_TRUE(s->add_metrics(id, rows));
    }  // closed: checkpointed into the file, -wal gone
    ASSERT_FALSE(exists(p + "-wal"));
    std::string bytes = bytes_of(p);
    ASSERT_GT(bytes.size(), 200000u);
    std::mt19937 gen(20261128);
    for (size_t i = 0; i < 4096; ++i) bytes[bytes.size() / 2 + i] = static_cast<char>(gen() & 0xff);
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
    // Independent evidence that the file is damaged: SQLite's full integrity_check says so.
    {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open_v2(p.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
        sqlite3_stmt* st = nullptr;
        ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr), SQLITE_OK);
        const int rc = sqlite3_step(st);
        const std::string first = rc == SQLITE_ROW ? reinterpret_cast<const char*>(sqlite3_column_text(st, 0)) : "";
        EXPECT_TRUE(rc != SQLITE_ROW || first != "ok") << "the damage went unnoticed by integrity_check";
        sqlite3_finalize(st);
        sqlite3_close(db);
    }
    expect_refused_untouched(p, {"is damaged: PRAGMA quick_check"}, /*wal=*/true);
    auto r = RunStore::open(p, StoreAccess::kExisting);
    ASSERT_FALSE(r);
    // The first problem quick_check reports is named (a page, a cell or an offset).
    const std::string m = r.status().message();
    EXPECT_TRUE(m.find("Page") != std::string::npos || m.find("page") != std::string::npos ||
                m.find("malformed") != std::string::npos)
        << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << "not one line: " << m;
}

TEST(RunStoreDelete, RemovesEveryRowOfTheRunAndNoOther) {
    const std::string p = temp_path("delete");
    auto s = RunStore::open(p);
    ASSERT_TRUE(s);
    const int64_t a = s->create_run("a", "train", "", "h", 1).value();
    const int64_t b = s->create_run("b", "train", "", "h", 2).value();
    for (int64_t id : {a, b}) {
        ASSERT_TRUE(s->add_metrics(id, {{"n", 1, -1, 0.0, 0.0, "train.loss", 2.5}}));
        ASSERT_TRUE(s->add_event(id, EventRecord{0.0, "n", EventLevel::kInfo, "note", "x"}));
    }
    Status running = s->delete_run(a);
    ASSERT_FALSE(running) << "a running run was deleted";
    EXPECT_NE(running.message().find("running"), std::string::npos);
    ASSERT_TRUE(s->finish_run(a, RunStatus::kFinished, ""));
    ASSERT_TRUE(s->delete_run(a));
    EXPECT_FALSE(s->get_run(a));
    auto m = s->metrics(a, "train.loss");  // no run: an error or nothing, never the old rows
    EXPECT_TRUE(!m || m->empty());
    auto e = s->events(a);
    EXPECT_TRUE(!e || e->empty());
    EXPECT_EQ(s->metrics(b, "train.loss").value().size(), 1u);
    EXPECT_EQ(s->events(b).value().size(), 1u);
    EXPECT_FALSE(s->delete_run(a)) << "a second delete of the same run succeeded";
    // Counted in the file itself, not through the store's run checks.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
    for (const char* table : {"metrics", "events", "run_nodes"}) {
        const std::string sql = std::string("SELECT count(*) FROM ") + table + " WHERE run_id = " + std::to_string(a);
        sqlite3_stmt* st = nullptr;
        ASSERT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK);
        ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
        EXPECT_EQ(sqlite3_column_int(st, 0), 0) << table << " still holds rows of the deleted run";
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
}

}  // namespace
}  // namespace tw
