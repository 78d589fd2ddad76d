// Tests of storage/store_probe.h and RunStore::delete_run: a file that is not thinwire's, or is a
// newer thinwire's, is refused with its bytes and journal mode untouched; a missing file is never
// created by a reader; a deleted run leaves no rows behind.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

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
