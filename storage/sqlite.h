// Thin RAII wrapper over the SQLite C API: connection, prepared statement, transaction.
// Every failure comes back as tw::Status / tw::Result carrying SQLite's message and the SQL or path involved.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace tw {

class Statement;

// ---------------------------------------------------------------------------------------------------------------
// Database: one connection. Move-only; closing is quiet (sqlite3_close_v2 lets live statements finish first).
// A connection is not meant to be shared between threads without outside locking (RunStore locks for you).
// ---------------------------------------------------------------------------------------------------------------
class Database {
  public:
    // Opens (creating if missing) the file at `path` (":memory:" for a private in-memory DB) and sets
    // journal_mode=WAL (in-memory DBs keep "memory"), synchronous=NORMAL, busy_timeout=5000 ms, foreign_keys=ON.
    static Result<Database> open(const std::string& path);

    Database(Database&& other) noexcept;
    Database& operator=(Database&& other) noexcept;
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;
    ~Database();

    // Runs one or more `;`-separated statements, discarding any rows they return.
    Status exec(const std::string& sql);
    // Compiles a single statement; bind, step, reset and reuse it.
    Result<Statement> prepare(const std::string& sql);
    // Runs `sql` and returns column 0 of its first row as an integer (for PRAGMAs and COUNT/MAX queries);
    // an error if it yields no row.
    Result<int64_t> query_int64(const std::string& sql);

    // Rowid of the most recent successful INSERT on this connection.
    int64_t last_insert_rowid() const;
    // Rows changed by the most recent INSERT/UPDATE/DELETE on this connection.
    int64_t changes() const;
    // The path given to open().
    const std::string& path() const { return path_; }
    // Raw handle, for the rare call this wrapper does not cover.
    sqlite3* handle() const { return db_; }

  private:
    Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
    void close() noexcept;

    sqlite3* db_ = nullptr;
    std::string path_;
};

// ---------------------------------------------------------------------------------------------------------------
// Statement: one prepared statement. Parameter and column indices follow SQLite: bind from 1, columns from 0.
// Move-only. Destroy it before its Database; if it lives longer, the connection stays open until it goes.
// ---------------------------------------------------------------------------------------------------------------
class Statement {
  public:
    Statement(Statement&& other) noexcept;
    Statement& operator=(Statement&& other) noexcept;
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    ~Statement();

    // Binds parameter `index` (1-based). Distinct names avoid int → int64/double overload ambiguity.
    // A failed bind is remembered and returned by the next step()/run() (the first one since the
    // last reset()), so a run of binds needs one check, not one each, and none can pass unnoticed.
    void bind_int64(int index, int64_t value);
    void bind_double(int index, double value);
    void bind_text(int index, std::string_view value);  // copied by SQLite
    void bind_null(int index);

    // Advances: true when a row is ready to read, false when the statement has finished.
    Result<bool> step();
    // Steps once for a statement run for its effect (INSERT, UPDATE, DELETE, DDL; a result row is ignored),
    // then rewinds keeping the bindings, so the caller can rebind and run it again.
    Status run();
    // Rewinds so the statement can run again and clears all bindings to NULL. Cannot fail.
    void reset();

    // Steps to the end, calling `row(*this)` on every result row (read it with the column getters).
    // `row` returns void or a Status, whose first error ends the walk and is returned; otherwise the
    // first failed step's error, or ok.
    template <class F>
    Status each_row(F&& row) {
        for (;;) {
            auto more = step();
            if (!more) return more.status();
            if (!more.value()) return Status::ok();
            if constexpr (std::is_void_v<std::invoke_result_t<F&, const Statement&>>) {
                row(static_cast<const Statement&>(*this));
            } else if (Status s = row(static_cast<const Statement&>(*this)); !s) {
                return s;
            }
        }
    }

    // Column getters for the current row (0-based). NULL reads as 0, 0.0 or "".
    int64_t column_int64(int index) const;
    double column_double(int index) const;
    std::string column_text(int index) const;
    bool column_is_null(int index) const;
    // Reads columns 0, 1, 2, ... of the current row into `out...` in that order, each by its type
    // (int64_t, double or std::string): one call for a row that maps onto a struct's fields.
    template <class... T>
    void columns(T&... out) const {
        int index = 0;
        (column_into(index++, out), ...);
    }

    // The SQL text this statement was compiled from.
    const std::string& sql() const { return sql_; }

  private:
    friend class Database;
    Statement(sqlite3* db, sqlite3_stmt* stmt, std::string sql) : db_(db), stmt_(stmt), sql_(std::move(sql)) {}
    Status error(int rc, const char* what) const;
    void column_into(int index, int64_t& out) const { out = column_int64(index); }
    void column_into(int index, double& out) const { out = column_double(index); }
    void column_into(int index, std::string& out) const { out = column_text(index); }
    void check_bind(int rc, int index);

    sqlite3* db_ = nullptr;
    sqlite3_stmt* stmt_ = nullptr;
    std::string sql_;
    Status bind_error_;  // first failed bind since the last reset()
};

// ---------------------------------------------------------------------------------------------------------------
// Transaction: BEGIN IMMEDIATE on creation; commit() makes it durable; destruction without commit rolls back
// quietly (never throws). IMMEDIATE takes the write lock up front, so a concurrent writer waits on busy_timeout
// instead of failing with SQLITE_BUSY when a read transaction tries to upgrade.
// ---------------------------------------------------------------------------------------------------------------
class Transaction {
  public:
    // Starts a write transaction on `db`, which must outlive the Transaction.
    static Result<Transaction> begin(Database& db);

    Transaction(Transaction&& other) noexcept;
    Transaction& operator=(Transaction&&) = delete;
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    ~Transaction();

    // Commits. After success the destructor does nothing; after failure it still rolls back.
    Status commit();

  private:
    explicit Transaction(Database* db) : db_(db) {}
    Database* db_ = nullptr;  // null once committed or moved from
};

// Intended usage:
//   auto db = Database::open("thinwire.db");            if (!db) return db.status();
//   auto tx = Transaction::begin(*db);                   if (!tx) return tx.status();
//   auto st = db->prepare("INSERT INTO t(a) VALUES (?1)"); if (!st) return st.status();
//   for (int64_t a : values) { st->bind_int64(1, a); if (Status s = st->run(); !s) return s; }
//   return tx->commit();                                 // any early return above rolls back

}  // namespace tw
