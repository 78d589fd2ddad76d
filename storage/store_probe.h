// What a file is before thinwire writes to it (issue 17, "nothing overwritten or lost"): a store
// thinwire may open, one that does not exist yet, or one to refuse. Opening a SQLite file for
// writing switches it to WAL and a migration adds tables, so a file that is another application's
// database, or a run store of a newer thinwire, is refused by this read-only look first.
// Torch-free; thread-safe (no shared state).
#pragma once

#include <string>

#include "core/status.h"

namespace tw {

enum class StoreAccess {
    kCreate,    // a missing file becomes a new, empty run store (run, train, sweep, the workbench)
    kExisting,  // the file must exist already (runs list/show/compare/export, report): never created
};

// Checks `path` without writing to it (a read-only connection; nothing is created, no journal mode
// changed). Fails, naming the path and the reason, when:
//  * the file does not exist and `access` is kExisting;
//  * it is not a SQLite database (SQLite's own reason);
//  * it holds tables but no thinwire `runs` table: another application's database;
//  * its schema version (PRAGMA user_version) is newer than `latest_schema` (this build's).
// ":memory:" and a missing file with kCreate pass.
Status probe_store(const std::string& path, StoreAccess access, int latest_schema);

}  // namespace tw
