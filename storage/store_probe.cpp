// A read-only look at a file before RunStore opens it for writing (storage/store_probe.h).
#include "storage/store_probe.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "storage/schema.h"

namespace tw {
namespace {

constexpr int kBusyMs = 5000;  // as long as RunStore's writers wait for each other (storage/sqlite.cpp)

using Rows = std::vector<std::vector<std::string>>;

// One connection of the probe: the file, read-only (sqlite3_open_v2 without SQLITE_OPEN_CREATE
// never makes a file, and a read-only handle cannot change the journal mode or anything else), or
// a private in-memory database that holds thinwire's own schema for comparison.
class Handle {
public:
    Handle(const std::string& path, int flags) {
        rc_ = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
        if (rc_ == SQLITE_OK) sqlite3_busy_timeout(db_, kBusyMs);
    }
    ~Handle() { sqlite3_close_v2(db_); }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;

    std::string error() const { return db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc_); }
    bool opened() const { return rc_ == SQLITE_OK; }
    sqlite3* raw() const { return db_; }

    // Every row of `sql` (each column as text) with `arg`, if given, bound to ?1; false (error()
    // says why) when SQLite refuses it. Another process creating or migrating the file holds a lock
    // for a moment (switching to WAL does not consult the busy handler), so a busy answer is
    // retried for as long as a writer would wait.
    bool rows(const char* sql, Rows& out, const std::string* arg = nullptr) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyMs);
        for (;;) {
            out.clear();
            sqlite3_stmt* st = nullptr;
            int rc = sqlite3_prepare_v2(db_, sql, -1, &st, nullptr);
            if (rc == SQLITE_OK && arg != nullptr)
                rc = sqlite3_bind_text(st, 1, arg->data(), static_cast<int>(arg->size()), SQLITE_TRANSIENT);
            if (rc == SQLITE_OK) {
                while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                    std::vector<std::string> row;
                    for (int c = 0; c < sqlite3_column_count(st); ++c) {
                        const unsigned char* t = sqlite3_column_text(st, c);
                        row.emplace_back(t != nullptr ? reinterpret_cast<const char*>(t) : "");
                    }
                    out.push_back(std::move(row));
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

// A database's schema objects (sqlite_master without SQLite's own sqlite_* ones) by name: their
// type, and for a table its column names in order ("a, b, c").
struct Object {
    std::string type, columns;
};
using Schema = std::map<std::string, Object>;

bool read_schema(Handle& db, Schema& out) {
    Rows objects;
    if (!db.rows("SELECT name, type FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'", objects))
        return false;
    out.clear();
    for (auto& o : objects) {
        Object obj{o[1], ""};
        if (obj.type == "table") {
            Rows cols;
            if (!db.rows("SELECT name FROM pragma_table_info(?1) ORDER BY cid", cols, &o[0])) return false;
            for (auto& c : cols) obj.columns += (obj.columns.empty() ? "" : ", ") + c[0];
        }
        out[o[0]] = obj;
    }
    return true;
}

// Thinwire's schema at `version`: migrations 1..version run on a private in-memory database.
bool thinwire_schema(int version, Schema& out, std::string& error) {
    Handle mem(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY);
    const auto& migrations = schema_migrations();
    for (int v = 1; v <= version && v <= static_cast<int>(migrations.size()); ++v) {
        char* err = nullptr;
        if (sqlite3_exec(mem.raw(), migrations[static_cast<size_t>(v - 1)].sql.c_str(), nullptr, nullptr, &err) !=
            SQLITE_OK) {
            error = "thinwire's own migration " + std::to_string(v) + " failed in memory: " + (err ? err : "?");
            sqlite3_free(err);
            return false;
        }
    }
    if (!read_schema(mem, out)) {
        error = mem.error();
        return false;
    }
    return true;
}

std::string list(const std::vector<std::string>& names, size_t most) {
    std::string s;
    for (size_t i = 0; i < names.size() && i < most; ++i) s += (i ? ", " : "") + names[i];
    if (names.size() > most) s += ", ... (" + std::to_string(names.size()) + " in all)";
    return s;
}

// "the tables a, b and the view v": what a foreign file holds, by kind.
std::string holdings(const Schema& s) {
    std::map<std::string, std::vector<std::string>> by_type;
    for (auto& [name, o] : s) by_type[o.type].push_back(name);
    std::string out;
    for (auto& [type, names] : by_type) {
        out += out.empty() ? "the " : " and the ";
        out += type + (names.size() == 1 ? " " : type == "index" ? "es " : "s ") + list(names, 6);
    }
    return out;
}

// The first difference between the file's schema and thinwire's at the file's version; "" = none.
// What the file holds wrongly comes first (a `runs` view tells more than the tables it lacks).
std::string schema_difference(const Schema& file, const Schema& ours, int version) {
    const std::string at = "thinwire's schema version " + std::to_string(version);
    for (auto& [name, have] : file) {
        auto it = ours.find(name);
        if (it == ours.end()) return "it holds the " + have.type + " '" + name + "', which " + at + " does not have";
        if (have.type != it->second.type)
            return "'" + name + "' is a " + have.type + ", in " + at + " it is a " + it->second.type;
        if (have.columns != it->second.columns)
            return "the table '" + name + "' has the columns (" + have.columns + "), " + at + " has (" +
                   it->second.columns + ")";
    }
    for (auto& [name, want] : ours)
        if (!file.count(name)) return "it lacks the " + want.type + " '" + name + "' of " + at;
    return "";
}

// quick_check's first problem on one line, without the "*** in database main ***" heading
// SQLite puts before the problems of each database.
std::string one_line(std::string text) {
    const std::string heading = "*** in database main ***";
    if (text.rfind(heading, 0) == 0) text.erase(0, heading.size());
    std::string out;
    for (char c : text) {
        if (c == '\n') {
            if (!out.empty() && out.back() != ' ') out += "; ";
        } else {
            out += c;
        }
    }
    return out;
}

}  // namespace

Status probe_store(const std::string& path, StoreAccess access, int latest_schema) {
    if (path == ":memory:") return Status::ok();
    const std::string where = "run store '" + path + "': ";
    const std::string untouched = "; refused before anything was written to it";
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) {
        if (access == StoreAccess::kCreate) return Status::ok();
        return Status::error(where + "no such file (a run store is created by the first run stored in it; "
                                     "check --db)");
    }
    if (S_ISDIR(info.st_mode)) return Status::error(where + "is a directory, not a database file");
    if (info.st_size == 0) return Status::ok();  // an empty file is an empty database to SQLite
    Handle db(path, SQLITE_OPEN_READONLY);
    if (!db.opened()) return Status::error(where + "cannot be read: " + db.error());
    Rows version_row;
    Schema schema;
    // The version and the schema from one snapshot: another process may be creating the store
    // (migration 1 writes both in one transaction), and two separate reads could see tables from
    // after it with the version from before. BEGIN on a read-only connection starts a read.
    // The first read is where a file that is not a database shows up ("file is not a database").
    Rows none;
    const bool read = db.rows("BEGIN", none) && db.rows("PRAGMA user_version", version_row) && !version_row.empty() &&
                      read_schema(db, schema);
    const std::string read_error = db.error();
    (void)db.rows("COMMIT", none);  // ends the read; nothing to commit
    if (!read) return Status::error(where + "cannot be read as a database: " + read_error);
    const long long version = std::strtoll(version_row.front().front().c_str(), nullptr, 10);
    const bool runs_table = schema.count("runs") && schema.at("runs").type == "table";
    const std::string foreign = where + "is not a thinwire run store (";

    // Identify the file from its version and schema alone, cheapest first.
    if (version > latest_schema) {
        if (!schema.empty() && !runs_table)
            return Status::error(foreign + "it holds " + holdings(schema) + " and no 'runs' table)" + untouched);
        return Status::error("database " + path + " has schema version " + std::to_string(version) +
                             ", this thinwire knows up to " + std::to_string(latest_schema) +
                             " (written by a newer thinwire)" + untouched);
    }
    if (version <= 0) {
        if (schema.empty()) return Status::ok();  // a database nothing was created in: a fresh store
        // Migration 1 sets user_version in the transaction that creates the tables, so a thinwire
        // store with tables never reads 0: these are another application's, whatever their names.
        return Status::error(foreign + "it holds " + holdings(schema) +
                             (runs_table ? " under user_version 0, which no thinwire store has)"
                                         : " and no 'runs' table)") +
                             untouched);
    }
    Schema ours;
    std::string error;
    if (!thinwire_schema(static_cast<int>(version), ours, error)) return Status::error(where + error);
    if (std::string diff = schema_difference(schema, ours, static_cast<int>(version)); !diff.empty())
        return Status::error(foreign + diff + ")" + untouched);

    // A damaged file: quick_check walks every page (B-trees, record formats, NOT NULL; unlike
    // integrity_check it does not match indexes against their tables), so its cost is one read of
    // the file. quick_check(1) stops at the first problem.
    Rows check;
    if (!db.rows("PRAGMA quick_check(1)", check))
        return Status::error(where + "is damaged: PRAGMA quick_check failed: " + db.error() + untouched +
                             " (restore a copy, or try sqlite3's .recover into a new file)");
    if (check.empty() || check.front().front() != "ok")
        return Status::error(where + "is damaged: PRAGMA quick_check reports: " +
                             (check.empty() ? std::string("nothing") : one_line(check.front().front())) + untouched +
                             " (restore a copy, or try sqlite3's .recover into a new file)");
    return Status::ok();
}

}  // namespace tw
