// What a file is before thinwire writes to it: a store thinwire may open, one that does not exist
// yet, or one to refuse. Opening a SQLite file for writing switches it to WAL and a migration adds
// tables, so a file that is another application's database (even one with a `runs` table of its
// own), a damaged store, or a store of a newer thinwire is refused by this read-only look first,
// before any pragma or statement that writes. Torch-free; thread-safe (no shared state).
#pragma once

#include <string>

#include "core/status.h"

namespace tw {

enum class StoreAccess {
    kCreate,    // a missing file becomes a new, empty run store (run, train, sweep, the workbench)
    kExisting,  // the file must exist already (runs list/show/compare/export, report): never created
};

// Checks `path` without writing to it (a read-only connection: nothing is created, no journal
// mode changed). A missing file (with kCreate), an empty file, or a database with no schema objects
// and user_version 0 is a fresh store; ":memory:" passes. Fails, naming the path and the reason,
// when:
//  * the file does not exist and `access` is kExisting; it is a directory;
//  * it is not a SQLite database (SQLite's own reason);
//  * its schema version (PRAGMA user_version) is newer than `latest_schema` (this build's);
//  * it is not thinwire's: schema objects under user_version 0 (another application's database,
//    `runs` table or not), or at version 1..latest_schema, tables, views, indexes or triggers that
//    differ from thinwire's schema at that version (storage/schema.h, built in memory): a `runs`
//    view, a table with other columns, an object thinwire's schema lacks or one it needs missing;
//    the message names the object;
//  * `PRAGMA quick_check` reports a problem (a damaged file): the first problem is named. This
//    reads every page of the file (B-tree structure, record formats, NOT NULL; not the index
//    contents integrity_check also compares), so it costs one read of the file: under 1 ms for a
//    store of a few runs, about 0.3 s per million metric rows (100 MB) from the page cache, where
//    integrity_check took 1.4-1.6 s (storage/README.md "Opening a store").
Status probe_store(const std::string& path, StoreAccess access, int latest_schema);

}  // namespace tw
