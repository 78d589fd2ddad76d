// The thinwire database schema: versioned by PRAGMA user_version, brought up to date by forward migrations.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "storage/sqlite.h"

namespace tw {

// One forward step of the schema. Migration k takes a database from user_version k-1 to k.
struct Migration {
    int version = 0;          // user_version after this migration has run
    std::string description;  // one line for logs and errors
    std::string sql;          // `;`-separated statements, run inside one transaction
};

// The migrations this build knows, ordered by version 1, 2, 3, ... Never edit a released one; append.
const std::vector<Migration>& schema_migrations();

// Highest schema version this build knows (the version of the last migration).
int latest_schema_version();

// Current PRAGMA user_version of `db` (0 for a fresh file).
Result<int> schema_version(Database& db);

// Applies the missing migrations of schema_migrations(), each in its own transaction that also bumps
// user_version, so a failure leaves the database at the last fully applied version. The version is re-read
// under the write lock, so two processes opening a fresh file at once do not both run a migration.
// A database newer than this build is an error: "database X has schema version N, this thinwire knows up to M".
Status migrate(Database& db);

// Same, with an explicit migration list (ordered, versions 1..n); for tests of the migration mechanism.
Status migrate(Database& db, const std::vector<Migration>& migrations);

}  // namespace tw
