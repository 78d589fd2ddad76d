// Schema migrations for the run store; migration 1 is the v1 schema (docs/architecture.md §5).
#include "storage/schema.h"

namespace tw {
namespace {

// Timestamps are ISO-8601 UTC text ("2025-01-31T12:00:00.000Z"); status is to_string(RunStatus).
// AUTOINCREMENT: a run id is never reused, even if runs are deleted later (logs and files may refer to runs by id).
// metrics(run_id, step) serves MAX(step) per run for the run list without scanning every metric of a run.
// metrics.value is nullable because SQLite stores a NaN double as NULL; readers turn NULL back into NaN.
const char* const kSchemaV1 = R"sql(
CREATE TABLE runs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT NOT NULL,
    status      TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    finished_at TEXT,
    reason      TEXT NOT NULL DEFAULT '',
    config_toml TEXT NOT NULL DEFAULT '',
    config_hash TEXT NOT NULL DEFAULT '',
    seed        INTEGER NOT NULL DEFAULT 0,
    kind        TEXT NOT NULL DEFAULT 'train',
    notes       TEXT NOT NULL DEFAULT '',
    tags        TEXT NOT NULL DEFAULT ''
);
CREATE TABLE run_nodes (
    run_id   INTEGER NOT NULL REFERENCES runs(id),
    node     TEXT NOT NULL,
    endpoint TEXT NOT NULL DEFAULT '',
    role     TEXT NOT NULL DEFAULT '',
    replica  INTEGER NOT NULL DEFAULT -1,
    stage    INTEGER NOT NULL DEFAULT -1
);
CREATE INDEX run_nodes_run ON run_nodes(run_id);
CREATE TABLE metrics (
    run_id     INTEGER NOT NULL REFERENCES runs(id),
    node       TEXT NOT NULL,
    step       INTEGER NOT NULL,
    outer_step INTEGER NOT NULL DEFAULT -1,
    wall_s     REAL NOT NULL,
    sim_s      REAL NOT NULL,
    name       TEXT NOT NULL,
    value      REAL
);
CREATE INDEX metrics_run_name_step ON metrics(run_id, name, step);
CREATE INDEX metrics_run_step ON metrics(run_id, step);
CREATE TABLE events (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    wall_s REAL NOT NULL,
    node   TEXT NOT NULL,
    level  INTEGER NOT NULL,
    kind   TEXT NOT NULL,
    text   TEXT NOT NULL
);
CREATE INDEX events_run ON events(run_id);
)sql";

// Who ran together and where: a run's group (the runs one command started, e.g. the DDP and DiLoCo variants
// of the quickstart, later a sweep) and cluster kind ("threads", "local", "remote"; "" for single-process), and per
// node its kind ("full" replica or "pipeline" stage), host, thinwire version, thread count and rank inside its
// replica's DDP group (-1: none). ADD COLUMN with a constant default rewrites no row, so this is instant on big files.
const char* const kSchemaV2 = R"sql(
ALTER TABLE runs ADD COLUMN group_name TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN cluster TEXT NOT NULL DEFAULT '';
ALTER TABLE run_nodes ADD COLUMN kind TEXT NOT NULL DEFAULT '';
ALTER TABLE run_nodes ADD COLUMN host TEXT NOT NULL DEFAULT '';
ALTER TABLE run_nodes ADD COLUMN version TEXT NOT NULL DEFAULT '';
ALTER TABLE run_nodes ADD COLUMN threads INTEGER NOT NULL DEFAULT 0;
ALTER TABLE run_nodes ADD COLUMN rank INTEGER NOT NULL DEFAULT -1;
)sql";

// Coordinator liveness and resume: who coordinates a running run (pid and host) and when
// it last said so (heartbeat_at, Unix seconds; 0 = never), so a run whose coordinator died reads as
// interrupted instead of running forever (storage/run_liveness.h); and the config the run was
// launched with (launch_toml: the layout's resolved config before the session adapted it to its
// cluster), which `thinwire run --resume` restarts from and compares a given file against, with the
// run's uid (random hex), which names its checkpoints' folder: run ids repeat across databases.
const char* const kSchemaV3 = R"sql(
ALTER TABLE runs ADD COLUMN coordinator_pid INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN coordinator_host TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN heartbeat_at REAL NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN launch_toml TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN uid TEXT NOT NULL DEFAULT '';
)sql";

// What each node computed on: its CPU model and the BLAS library its process mapped.
// Re-runs are bit-identical on one machine; across CPUs the BLAS kernels differ, so a stored run
// says which ones produced its numbers.
const char* const kSchemaV4 = R"sql(
ALTER TABLE run_nodes ADD COLUMN cpu TEXT NOT NULL DEFAULT '';
ALTER TABLE run_nodes ADD COLUMN blas TEXT NOT NULL DEFAULT '';
)sql";

// Applies `m` if the database is still at m.version - 1. Returns the version found under the write lock.
Result<int> apply_one(Database& db, const Migration& m) {
    auto tx = Transaction::begin(db);
    if (!tx) return tx.status();
    auto current = schema_version(db);
    if (!current) return current.status();
    if (current.value() != m.version - 1) return current.value();  // someone else moved it; caller re-checks
    if (Status s = db.exec(m.sql); !s) {
        return Result<int>::error("migration " + std::to_string(m.version) + " (" + m.description + ") of '" +
                                  db.path() + "' failed: " + s.message());
    }
    // PRAGMA arguments cannot be bound; the version is an int we control.
    if (Status s = db.exec("PRAGMA user_version = " + std::to_string(m.version)); !s) return s;
    if (Status s = tx->commit(); !s) return s;
    return m.version;
}

}  // namespace

const std::vector<Migration>& schema_migrations() {
    static const std::vector<Migration> kMigrations = {
        {1, "runs, run_nodes, metrics, events", kSchemaV1},
        {2, "run groups and clusters, node kind, host, version, threads, rank", kSchemaV2},
        {3, "coordinator pid, host and heartbeat; launch config", kSchemaV3},
        {4, "nodes' CPU model and BLAS library", kSchemaV4},
    };
    return kMigrations;
}

int latest_schema_version() { return schema_migrations().back().version; }

Result<int> schema_version(Database& db) {
    auto v = db.query_int64("PRAGMA user_version");
    if (!v) return v.status();
    return static_cast<int>(v.value());
}

Status migrate(Database& db) { return migrate(db, schema_migrations()); }

Status migrate(Database& db, const std::vector<Migration>& migrations) {
    for (size_t i = 0; i < migrations.size(); ++i) {
        if (migrations[i].version != static_cast<int>(i) + 1) {
            return Status::error("migration list is not numbered 1..n: entry " + std::to_string(i) + " has version " +
                                 std::to_string(migrations[i].version));
        }
    }
    const int latest = static_cast<int>(migrations.size());
    auto version = schema_version(db);
    if (!version) return version.status();
    if (version.value() > latest) {
        return Status::error("database " + db.path() + " has schema version " + std::to_string(version.value()) +
                             ", this thinwire knows up to " + std::to_string(latest) +
                             "; use a newer thinwire or another --db file");
    }
    while (version.value() < latest) {
        const int found = version.value();
        version = apply_one(db, migrations[static_cast<size_t>(found)]);
        if (!version) return version.status();
        if (version.value() < found) {
            return Status::error("database " + db.path() + " went from schema version " + std::to_string(found) +
                                 " back to " + std::to_string(version.value()) + " while migrating");
        }
        if (version.value() > latest) return migrate(db, migrations);  // a newer build got there first: report it
    }
    return Status::ok();
}

}  // namespace tw
