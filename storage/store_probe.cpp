// A read-only look at a file before RunStore opens it for writing (storage/store_probe.h).
#include "storage/store_probe.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <string>
#include <vector>

namespace tw {
namespace {

constexpr int kBusyMs = 5000;  // as long as RunStore's writers wait for each other (storage/sqlite.cpp)

// A connection that can only read: sqlite3_open_v2 without SQLITE_OPEN_CREATE never makes a file,
// and a read-only handle cannot change the journal mode.
class ReadOnly {
public:
    explicit ReadOnly(const std::string& path) {
        rc_ = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr);
        if (rc_ == SQLITE_OK) sqlite3_busy_timeout(db_, kBusyMs);
    }
    ~ReadOnly() { sqlite3_close_v2(db_); }
    ReadOnly(const ReadOnly&) = delete;
    ReadOnly& operator=(const ReadOnly&) = delete;

    std::string error() const { return db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc_); }
    bool opened() const { return rc_ == SQLITE_OK; }

    // Column 0 of every row of `sql` as text; false (error() says why) when SQLite refuses it.
    // Another process creating or migrating the file holds a lock for a moment (switching to WAL
    // does not consult the busy handler), so a busy answer is retried for as long as a writer
    // would wait.
    bool column(const char* sql, std::vector<std::string>& out) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyMs);
        for (;;) {
            out.clear();
            sqlite3_stmt* st = nullptr;
            int rc = sqlite3_prepare_v2(db_, sql, -1, &st, nullptr);
            if (rc == SQLITE_OK) {
                while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                    const unsigned char* t = sqlite3_column_text(st, 0);
                    out.emplace_back(t != nullptr ? reinterpret_cast<const char*>(t) : "");
                }
            }
            sqlite3_finalize(st);
            if (rc == SQLITE_DONE) return true;
            const int code = rc & 0xff;
            if ((code != SQLITE_BUSY && code != SQLITE_LOCKED) || std::chrono::steady_clock::now() >= deadline)
                return false;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }

private:
    sqlite3* db_ = nullptr;
    int rc_ = SQLITE_OK;
};

std::string joined(const std::vector<std::string>& names, size_t most) {
    std::string s;
    for (size_t i = 0; i < names.size() && i < most; ++i) s += (i ? ", " : "") + names[i];
    if (names.size() > most) s += ", ... (" + std::to_string(names.size()) + " tables)";
    return s;
}

}  // namespace

Status probe_store(const std::string& path, StoreAccess access, int latest_schema) {
    if (path == ":memory:") return Status::ok();
    const std::string where = "run store '" + path + "': ";
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) {
        if (access == StoreAccess::kCreate) return Status::ok();
        return Status::error(where + "no such file (a run store is created by the first run stored in it; "
                                     "check --db)");
    }
    if (S_ISDIR(info.st_mode)) return Status::error(where + "is a directory, not a database file");
    if (info.st_size == 0) return Status::ok();  // an empty file is an empty database to SQLite
    ReadOnly db(path);
    if (!db.opened()) return Status::error(where + "cannot be read: " + db.error());
    std::vector<std::string> version, tables;
    // The first read is where a file that is not a database shows up ("file is not a database").
    if (!db.column("PRAGMA user_version", version) || version.empty())
        return Status::error(where + "cannot be read as a database: " + db.error());
    if (!db.column("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
                   tables))
        return Status::error(where + "cannot be read as a database: " + db.error());
    bool has_runs = false;
    for (auto& t : tables) has_runs = has_runs || t == "runs";
    if (!tables.empty() && !has_runs)
        return Status::error(where + "is not a thinwire run store (it holds the tables " + joined(tables, 6) +
                             " and no 'runs' table); refused before anything was written to it");
    const long long v = std::strtoll(version.front().c_str(), nullptr, 10);
    if (v > latest_schema)
        return Status::error("database " + path + " has schema version " + std::to_string(v) + ", this thinwire knows up to " +
                             std::to_string(latest_schema) + " (written by a newer thinwire); refused before "
                             "anything was written to it");
    return Status::ok();
}

}  // namespace tw
