// SQLite RAII wrapper: turns SQLite return codes into tw::Status with the message and the SQL or path involved.
#include "storage/sqlite.h"

#include <sqlite3.h>

#include <chrono>
#include <thread>
#include <utility>

namespace tw {
namespace {

constexpr int kBusyTimeoutMs = 5000;  // how long a writer waits for another process's write lock
constexpr size_t kMaxSqlInMessage = 160;

// SQL quoted for an error message, shortened so a migration script does not flood the log.
std::string quote_sql(const std::string& sql) {
    if (sql.size() <= kMaxSqlInMessage) return "\"" + sql + "\"";
    return "\"" + sql.substr(0, kMaxSqlInMessage) + "...\"";
}

// SQLite's own message when it refers to `rc`, otherwise the generic text for the code.
std::string message_for(sqlite3* db, int rc) {
    if (db != nullptr && sqlite3_errcode(db) == (rc & 0xff)) return sqlite3_errmsg(db);
    return sqlite3_errstr(rc);
}

// Column 0 of the first row of `sql` as text ("" when there is no row).
Result<std::string> query_text(Database& db, const std::string& sql) {
    auto st = db.prepare(sql);
    if (!st) return st.status();
    auto row = st->step();
    if (!row) return row.status();
    return row.value() ? st->column_text(0) : std::string();
}

// Switches to WAL. Changing the journal mode of a fresh file needs an exclusive lock and SQLite reports
// SQLITE_BUSY for it without consulting the busy handler, so several processes opening a new file at once would
// fail; retry here for as long as the busy timeout would have waited. Returns the resulting journal mode.
Result<std::string> set_wal_mode(Database& db) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
    for (;;) {
        auto mode = query_text(db, "PRAGMA journal_mode=WAL");
        const bool busy =
            !mode && (sqlite3_errcode(db.handle()) == SQLITE_BUSY || sqlite3_errcode(db.handle()) == SQLITE_LOCKED);
        if (!busy || std::chrono::steady_clock::now() >= deadline) return mode;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

}  // namespace

// --- Database ----------------------------------------------------------------------------------------------------

Result<Database> Database::open(const std::string& path) {
    sqlite3* raw = nullptr;
    int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    if (rc != SQLITE_OK) {
        std::string msg = message_for(raw, rc);
        sqlite3_close_v2(raw);  // a handle is returned even on failure; harmless on null
        return Result<Database>::error("cannot open database '" + path + "': " + msg);
    }
    Database db(raw, path);
    sqlite3_busy_timeout(raw, kBusyTimeoutMs);

    // The first statement is where a corrupt or non-database file shows up, so errors name the path.
    auto mode = set_wal_mode(db);
    if (!mode) return Result<Database>::error("cannot open database '" + path + "': " + mode.message());
    if (mode.value() != "wal" && mode.value() != "memory") {
        return Result<Database>::error("cannot open database '" + path + "': journal_mode is '" + mode.value() +
                                       "', WAL is required (is the file on a filesystem without shared memory?)");
    }
    // In WAL mode NORMAL never corrupts the file and a process crash loses no committed transaction;
    // only a power loss can drop the last commits, which is the trade docs/architecture.md §5 accepts.
    if (Status s = db.exec("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON"); !s) {
        return Result<Database>::error("cannot open database '" + path + "': " + s.message());
    }
    return db;
}

Database::Database(Database&& other) noexcept : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

Database& Database::operator=(Database&& other) noexcept {
    if (this != &other) {
        close();
        db_ = std::exchange(other.db_, nullptr);
        path_ = std::move(other.path_);
    }
    return *this;
}

Database::~Database() { close(); }

void Database::close() noexcept {
    if (db_ != nullptr) sqlite3_close_v2(db_);
    db_ = nullptr;
}

Status Database::exec(const std::string& sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    if (rc == SQLITE_OK) return Status::ok();
    std::string msg = err != nullptr ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    return Status::error("sqlite: " + msg + " in " + quote_sql(sql) + " on '" + path_ + "'");
}

Result<Statement> Database::prepare(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size() + 1), &stmt, nullptr);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(stmt);
        return Result<Statement>::error("sqlite: cannot prepare " + quote_sql(sql) + " on '" + path_ +
                                        "': " + message_for(db_, rc));
    }
    if (stmt == nullptr) return Result<Statement>::error("sqlite: no statement in " + quote_sql(sql));
    return Statement(db_, stmt, sql);
}

Result<int64_t> Database::query_int64(const std::string& sql) {
    auto st = prepare(sql);
    if (!st) return st.status();
    auto row = st->step();
    if (!row) return row.status();
    if (!row.value()) return Result<int64_t>::error("sqlite: no row from " + quote_sql(sql));
    return st->column_int64(0);
}

int64_t Database::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

int64_t Database::changes() const { return sqlite3_changes(db_); }

// --- Statement ---------------------------------------------------------------------------------------------------

Statement::Statement(Statement&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      stmt_(std::exchange(other.stmt_, nullptr)),
      sql_(std::move(other.sql_)),
      bind_error_(std::move(other.bind_error_)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
    if (this != &other) {
        sqlite3_finalize(stmt_);
        db_ = std::exchange(other.db_, nullptr);
        stmt_ = std::exchange(other.stmt_, nullptr);
        sql_ = std::move(other.sql_);
        bind_error_ = std::move(other.bind_error_);
    }
    return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }  // finalize(nullptr) is a no-op

Status Statement::error(int rc, const char* what) const {
    return Status::error(std::string("sqlite: ") + what + " failed: " + message_for(db_, rc) + " in " +
                         quote_sql(sql_));
}

void Statement::check_bind(int rc, int index) {
    if (rc != SQLITE_OK && bind_error_.is_ok()) bind_error_ = error(rc, ("bind of parameter " + std::to_string(index)).c_str());
}

void Statement::bind_int64(int index, int64_t value) { check_bind(sqlite3_bind_int64(stmt_, index, value), index); }

void Statement::bind_double(int index, double value) { check_bind(sqlite3_bind_double(stmt_, index, value), index); }

void Statement::bind_text(int index, std::string_view value) {
    check_bind(sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8), index);
}

void Statement::bind_null(int index) { check_bind(sqlite3_bind_null(stmt_, index), index); }

Result<bool> Statement::step() {
    if (!bind_error_.is_ok()) return bind_error_;
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return error(rc, "step");
}

Status Statement::run() {
    auto row = step();
    sqlite3_reset(stmt_);  // its return code repeats the step error, already captured above
    return row.status();
}

void Statement::reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    bind_error_ = Status::ok();
}

int64_t Statement::column_int64(int index) const { return sqlite3_column_int64(stmt_, index); }

double Statement::column_double(int index) const { return sqlite3_column_double(stmt_, index); }

std::string Statement::column_text(int index) const {
    const unsigned char* text = sqlite3_column_text(stmt_, index);
    if (text == nullptr) return {};
    return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_column_bytes(stmt_, index)));
}

bool Statement::column_is_null(int index) const { return sqlite3_column_type(stmt_, index) == SQLITE_NULL; }

// --- Transaction -------------------------------------------------------------------------------------------------

Result<Transaction> Transaction::begin(Database& db) {
    if (Status s = db.exec("BEGIN IMMEDIATE"); !s) return s;
    return Transaction(&db);
}

Transaction::Transaction(Transaction&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}

Transaction::~Transaction() {
    // Only roll back if the transaction is still open: a failed statement may already have ended it.
    if (db_ != nullptr && db_->handle() != nullptr && sqlite3_get_autocommit(db_->handle()) == 0) {
        sqlite3_exec(db_->handle(), "ROLLBACK", nullptr, nullptr, nullptr);
    }
}

Status Transaction::commit() {
    if (db_ == nullptr) return Status::error("sqlite: commit of a transaction that is not open");
    if (Status s = db_->exec("COMMIT"); !s) return s;
    db_ = nullptr;
    return Status::ok();
}

}  // namespace tw
