// PageLimit (tests only): caps the size of one database file with SQLite's own PRAGMA
// max_page_count, which fails a write that needs a page past the cap with SQLITE_FULL, "database
// or disk is full", as a full disk does. The pragma holds per connection, and the code under test
// opens its own, so the cap is set by an auto-extension, which SQLite runs on every connection it
// opens in this process while the PageLimit lives; it touches only connections to `path`.
// One PageLimit at a time; not thread-safe to construct or destroy while connections are opened.
#pragma once

#include <sqlite3.h>
#include <stdlib.h>

#include <cstdint>
#include <string>

namespace tw::test {

class PageLimit {
public:
    PageLimit(const std::string& path, int64_t pages) {
        char* real = ::realpath(path.c_str(), nullptr);
        target() = real != nullptr ? real : path;
        ::free(real);
        pages_limit() = pages;
        sqlite3_auto_extension(reinterpret_cast<void (*)()>(&PageLimit::on_open));
    }
    ~PageLimit() {
        sqlite3_cancel_auto_extension(reinterpret_cast<void (*)()>(&PageLimit::on_open));
        target().clear();
    }
    PageLimit(const PageLimit&) = delete;
    PageLimit& operator=(const PageLimit&) = delete;

    // Pages in the file at `path` now (for a cap relative to its size).
    static int64_t pages_of(const std::string& path) {
        sqlite3* db = nullptr;
        int64_t n = -1;
        if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
            sqlite3_stmt* st = nullptr;
            if (sqlite3_prepare_v2(db, "PRAGMA page_count", -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
                n = sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
        }
        sqlite3_close_v2(db);
        return n;
    }

private:
    static std::string& target() {
        static std::string t;
        return t;
    }
    static int64_t& pages_limit() {
        static int64_t n = 0;
        return n;
    }
    static int on_open(sqlite3* db, const char**, const sqlite3_api_routines*) {
        const char* file = sqlite3_db_filename(db, "main");
        if (file != nullptr && !target().empty() && target() == file) {
            const std::string sql = "PRAGMA max_page_count = " + std::to_string(pages_limit());
            sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
        }
        return SQLITE_OK;
    }
};

}  // namespace tw::test
