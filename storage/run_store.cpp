// RunStore: SQL for runs, nodes, metrics and events on top of the SQLite wrapper and the migrated schema.
#include "storage/run_store.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>

#include <limits>
#include <utility>

#include "core/metric_names.h"
#include "core/output_file.h"
#include "storage/schema.h"

namespace tw {
namespace {

// Statement binds below are not checked one by one: a failed bind is remembered by the Statement and returned
// by the following run()/step(), which is checked.

#define TW_NOW_UTC "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"

// Latest value of one metric (highest step, then latest insert), followed by whether it was ever reported, which
// tells "never reported" apart from a NULL value (how SQLite stores NaN). Metric names are the project's own
// constants (core/metric_names.h), never user text, so they are spliced into the SQL.
std::string last_value_sql(const char* metric) {
    const std::string m = metric;
    return "(SELECT m.value FROM metrics m WHERE m.run_id = r.id AND m.name = '" + m +
           "' ORDER BY m.step DESC, m.rowid DESC LIMIT 1), "
           "EXISTS (SELECT 1 FROM metrics m WHERE m.run_id = r.id AND m.name = '" + m + "')";
}

const std::string kSelectSummary =
    "SELECT r.id, r.name, r.status, r.created_at, r.finished_at, r.kind, r.config_hash, r.seed, r.reason, r.notes, "
    "r.tags, (SELECT MAX(m.step) FROM metrics m WHERE m.run_id = r.id), " +
    last_value_sql(metric::kTrainLoss) + ", " + last_value_sql(metric::kValLoss) +
    ", r.group_name, r.cluster, r.coordinator_pid, r.coordinator_host, r.heartbeat_at FROM runs r";

double unix_now_s() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string no_run(int64_t id) { return "no run with id " + std::to_string(id); }

double nan_if_null(const Statement& st, int column) {
    return st.column_is_null(column) ? std::numeric_limits<double>::quiet_NaN() : st.column_double(column);
}

// Reads one row of kSelectSummary.
Result<RunSummary> read_summary(const Statement& st) {
    RunSummary r;
    r.id = st.column_int64(0);
    r.name = st.column_text(1);
    std::string status = st.column_text(2);
    auto parsed = parse_run_status(status);
    if (!parsed) {
        return Result<RunSummary>::error("run " + std::to_string(r.id) + " has unknown status '" + status + "'");
    }
    r.status = *parsed;
    r.created_at = st.column_text(3);
    if (!st.column_is_null(4)) r.finished_at = st.column_text(4);
    r.kind = st.column_text(5);
    r.config_hash = st.column_text(6);
    r.seed = st.column_int64(7);
    r.reason = st.column_text(8);
    r.notes = st.column_text(9);
    r.tags = st.column_text(10);
    if (!st.column_is_null(11)) r.last_step = st.column_int64(11);
    if (st.column_int64(13) != 0) r.last_train_loss = nan_if_null(st, 12);
    if (st.column_int64(15) != 0) r.last_val_loss = nan_if_null(st, 14);
    r.group = st.column_text(16);
    r.cluster = st.column_text(17);
    r.coordinator_pid = st.column_int64(18);
    r.coordinator_host = st.column_text(19);
    r.heartbeat_at = st.column_double(20);
    return r;
}

// The columns of `table` in the main database as a quoted, comma-separated list for INSERT ... SELECT.
Result<std::string> column_list(Database& db, const char* table) {
    auto st = db.prepare("SELECT name FROM pragma_table_info(?1, 'main') ORDER BY cid");
    if (!st) return st.status();
    st->bind_text(1, table);
    std::string out;
    Status rows = st->each_row([&](const Statement& q) {
        out += (out.empty() ? "\"" : ", \"") + q.column_text(0) + "\"";
    });
    if (!rows) return rows;
    if (out.empty()) return Result<std::string>::error(std::string("no table ") + table + " to copy");
    return out;
}

}  // namespace

std::optional<RunStatus> parse_run_status(std::string_view text) { return enum_value(kRunStatusNames, text); }

Result<RunStore> RunStore::open(const std::string& path, StoreAccess access) {
    if (Status s = probe_store(path, access, latest_schema_version()); !s) return s;
    auto db = Database::open(path);
    if (!db) return db.status();
    if (Status s = migrate(*db); !s) return s;
    return RunStore(std::move(db).value());
}

// --- writing -----------------------------------------------------------------------------------------------------

Result<int64_t> RunStore::create_run(const std::string& name, const std::string& kind, const std::string& config_toml,
                                     const std::string& config_hash, int64_t seed) {
    std::lock_guard<std::mutex> lock(*mu_);
    auto st = db_.prepare(
        "INSERT INTO runs (name, status, created_at, kind, config_toml, config_hash, seed) "
        "VALUES (?1, ?2, " TW_NOW_UTC ", ?3, ?4, ?5, ?6)");
    if (!st) return st.status();
    st->bind_text(1, name);
    st->bind_text(2, to_string(RunStatus::kRunning));
    st->bind_text(3, kind);
    st->bind_text(4, config_toml);
    st->bind_text(5, config_hash);
    st->bind_int64(6, seed);
    if (Status s = st->run(); !s) return s;
    return db_.last_insert_rowid();
}

Status RunStore::finish_run(int64_t id, RunStatus status, const std::string& reason) {
    if (status == RunStatus::kRunning) {
        return Status::error("finish_run of run " + std::to_string(id) + " needs a final status, got running");
    }
    return update_run(id, "UPDATE runs SET status = ?2, finished_at = " TW_NOW_UTC ", reason = ?3 WHERE id = ?1",
                      {to_string(status), reason});
}

Status RunStore::add_node(int64_t id, const RunNode& node) {
    std::lock_guard<std::mutex> lock(*mu_);
    auto st = run_statement(id, "INSERT INTO run_nodes (run_id, node, endpoint, role, replica, stage, kind, host, "
                                "version, threads, rank, cpu, blas) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
    if (!st) return st.status();
    st->bind_text(2, node.node);
    st->bind_text(3, node.endpoint);
    st->bind_text(4, node.role);
    st->bind_int64(5, node.replica);
    st->bind_int64(6, node.stage);
    st->bind_text(7, node.kind);
    st->bind_text(8, node.host);
    st->bind_text(9, node.version);
    st->bind_int64(10, node.threads);
    st->bind_int64(11, node.rank);
    st->bind_text(12, node.cpu);
    st->bind_text(13, node.blas);
    return st->run();
}

Status RunStore::add_metrics(int64_t id, const std::vector<MetricRecord>& records) {
    std::lock_guard<std::mutex> lock(*mu_);
    auto tx = Transaction::begin(db_);
    if (!tx) return tx.status();
    // run() keeps bindings, so only the per-record ones are rebound
    auto st = run_statement(id, "INSERT INTO metrics (run_id, node, step, outer_step, wall_s, sim_s, name, value) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    if (!st) return st.status();
    for (const MetricRecord& r : records) {
        st->bind_text(2, r.node);
        st->bind_int64(3, r.step);
        st->bind_int64(4, r.outer_step);
        st->bind_double(5, r.wall_s);
        st->bind_double(6, r.sim_s);
        st->bind_text(7, r.name);
        st->bind_double(8, r.value);  // NaN is stored as NULL by SQLite
        if (Status s = st->run(); !s) {
            return Status::error("add_metrics for run " + std::to_string(id) + ": " + s.message());
        }
    }
    return tx->commit();
}

Status RunStore::add_event(int64_t id, const EventRecord& event) {
    std::lock_guard<std::mutex> lock(*mu_);
    auto st = run_statement(
        id, "INSERT INTO events (run_id, wall_s, node, level, kind, text) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    if (!st) return st.status();
    st->bind_double(2, event.wall_s);
    st->bind_text(3, event.node);
    st->bind_int64(4, static_cast<int64_t>(event.level));
    st->bind_text(5, event.kind);
    st->bind_text(6, event.text);
    return st->run();
}

Status RunStore::set_notes(int64_t id, const std::string& text) {
    return update_run(id, "UPDATE runs SET notes = ?2 WHERE id = ?1", {text});
}

Status RunStore::set_tags(int64_t id, const std::string& text) {
    return update_run(id, "UPDATE runs SET tags = ?2 WHERE id = ?1", {text});
}

Status RunStore::set_run_group(int64_t id, const std::string& group, const std::string& cluster) {
    return update_run(id, "UPDATE runs SET group_name = ?2, cluster = ?3 WHERE id = ?1", {group, cluster});
}

Status RunStore::set_coordinator(int64_t id, int64_t pid, const std::string& host) {
    return update_run(id,
                      "UPDATE runs SET coordinator_pid = ?2, coordinator_host = ?3, heartbeat_at = ?4 WHERE id = ?1",
                      {pid, host, unix_now_s()});
}

Status RunStore::heartbeat(int64_t id) {
    std::lock_guard<std::mutex> lock(*mu_);
    auto tx = Transaction::begin(db_);
    if (!tx) return tx.status();
    auto st = db_.prepare("UPDATE runs SET heartbeat_at = ?2 WHERE id = ?1");
    if (!st) return st.status();
    st->bind_int64(1, id);
    st->bind_double(2, unix_now_s());
    if (Status s = st->run(); !s) return s;
    if (db_.changes() == 0) return Status::error(no_run(id));
    // A reader elsewhere took this live coordinator for dead (storage/run_liveness.h): reclaim the run.
    auto back = db_.prepare(
        "UPDATE runs SET status = ?2, finished_at = NULL, reason = '' WHERE id = ?1 AND status = ?3 AND "
        "reason LIKE 'coordinator gone%'");
    if (!back) return back.status();
    back->bind_int64(1, id);
    back->bind_text(2, to_string(RunStatus::kRunning));
    back->bind_text(3, to_string(RunStatus::kInterrupted));
    if (Status s = back->run(); !s) return s;
    return tx->commit();
}

Status RunStore::set_launch(int64_t id, const LaunchRecord& launch) {
    return update_run(id, "UPDATE runs SET launch_toml = ?2, uid = ?3 WHERE id = ?1", {launch.toml, launch.uid});
}

Status RunStore::set_config(int64_t id, const std::string& config_toml, const std::string& config_hash) {
    return update_run(id, "UPDATE runs SET config_toml = ?2, config_hash = ?3 WHERE id = ?1",
                      {config_toml, config_hash});
}

Status RunStore::reopen_run(int64_t id) {
    return update_run(id, "UPDATE runs SET status = ?2, finished_at = NULL, reason = '' WHERE id = ?1",
                      {to_string(RunStatus::kRunning)});
}

Result<int64_t> RunStore::delete_metrics_after(int64_t id, int64_t step, const std::string& node) {
    std::lock_guard<std::mutex> lock(*mu_);
    auto st = run_statement(id, "DELETE FROM metrics WHERE run_id = ?1 AND step > ?2 AND (?3 = '' OR node = ?3)");
    if (!st) return st.status();
    st->bind_int64(2, step);
    st->bind_text(3, node);
    if (Status s = st->run(); !s) return s;
    return static_cast<int64_t>(db_.changes());
}

Result<RunStore::Totals> RunStore::totals(int64_t id) {
    std::lock_guard<std::mutex> lock(*mu_);
    if (Status s = require_run(id); !s) return s;
    Totals t;
    t.sim_s = std::numeric_limits<double>::quiet_NaN();
    auto bytes = db_.prepare(
        "SELECT node, name, max(value) FROM metrics WHERE run_id = ?1 AND name IN ('bytes.outer.sent', "
        "'bytes.intra.sent', 'bytes.stage.sent') GROUP BY node, name");
    if (!bytes) return bytes.status();
    bytes->bind_int64(1, id);
    Status rows = bytes->each_row([&](const Statement& q) {
        t.bytes_sent += q.column_double(2);
    });
    if (!rows) return rows;
    auto sim = db_.prepare("SELECT max(sim_s), count(*) FROM metrics WHERE run_id = ?1");
    if (!sim) return sim.status();
    sim->bind_int64(1, id);
    auto row = sim->step();
    if (!row) return row.status();
    if (row.value() && sim->column_int64(1) > 0) t.sim_s = sim->column_double(0);
    return t;
}

Result<int64_t> RunStore::room_bytes() {
    std::lock_guard<std::mutex> lock(*mu_);
    auto pages = db_.query_int64("PRAGMA page_count");
    if (!pages) return pages.status();
    auto most = db_.query_int64("PRAGMA max_page_count");
    if (!most) return most.status();
    auto size = db_.query_int64("PRAGMA page_size");
    if (!size) return size.status();
    int64_t room = std::max<int64_t>(0, most.value() - pages.value()) * size.value();
    if (db_.path() != ":memory:") {
        struct statvfs fs {};
        if (::statvfs(db_.path().c_str(), &fs) != 0)
            return Result<int64_t>::error("cannot read the free space of " + db_.path() + ": " + std::strerror(errno));
        room = std::min(room, static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize));
    }
    return room;
}

Status RunStore::delete_run(int64_t id) {
    auto run = get_run(id);
    if (!run) return run.status();
    if (run->status == RunStatus::kRunning)
        return Status::error("run " + std::to_string(id) + " is running; stop it first (or wait until a reader marks "
                             "it interrupted)");
    std::lock_guard<std::mutex> lock(*mu_);
    auto tx = Transaction::begin(db_);
    if (!tx) return tx.status();
    for (const char* sql : {"DELETE FROM run_nodes WHERE run_id = ?1", "DELETE FROM metrics WHERE run_id = ?1",
                            "DELETE FROM events WHERE run_id = ?1", "DELETE FROM runs WHERE id = ?1"}) {
        auto st = db_.prepare(sql);
        if (!st) return st.status();
        st->bind_int64(1, id);
        if (Status s = st->run(); !s) return s;
    }
    return tx->commit();
}

Status RunStore::update_run(int64_t id, const char* sql, std::initializer_list<RunValue> values) {
    std::lock_guard<std::mutex> lock(*mu_);
    auto st = db_.prepare(sql);
    if (!st) return st.status();
    st->bind_int64(1, id);
    int index = 2;
    for (const RunValue& v : values) {
        if (const auto* i = std::get_if<int64_t>(&v)) st->bind_int64(index, *i);
        else if (const auto* d = std::get_if<double>(&v)) st->bind_double(index, *d);
        else st->bind_text(index, std::get<std::string_view>(v));
        ++index;
    }
    if (Status s = st->run(); !s) return s;
    return db_.changes() == 0 ? Status::error(no_run(id)) : Status::ok();
}

// --- reading -----------------------------------------------------------------------------------------------------

Status RunStore::require_run(int64_t id) {
    auto st = db_.prepare("SELECT 1 FROM runs WHERE id = ?1");
    if (!st) return st.status();
    st->bind_int64(1, id);
    auto row = st->step();
    if (!row) return row.status();
    return row.value() ? Status::ok() : Status::error(no_run(id));
}

Result<Statement> RunStore::run_statement(int64_t id, const std::string& sql) {
    if (Status s = require_run(id); !s) return s;
    auto st = db_.prepare(sql);
    if (!st) return st.status();
    st->bind_int64(1, id);
    return st;
}

Result<std::vector<RunSummary>> RunStore::list_runs() {
    std::lock_guard<std::mutex> lock(*mu_);
    auto st = db_.prepare(std::string(kSelectSummary) + " ORDER BY r.id");
    if (!st) return st.status();
    std::vector<RunSummary> runs;
    Status rows = st->each_row([&](const Statement& q) {
        auto summary = read_summary(q);
        if (!summary) return summary.status();
        runs.push_back(std::move(summary).value());
        return Status::ok();
    });
    if (!rows) return rows;
    return runs;
}

Result<RunSummary> RunStore::get_run(int64_t id) {
    std::lock_guard<std::mutex> lock(*mu_);
    auto st = db_.prepare(std::string(kSelectSummary) + " WHERE r.id = ?1");
    if (!st) return st.status();
    st->bind_int64(1, id);
    auto row = st->step();
    if (!row) return row.status();
    if (!row.value()) return Result<RunSummary>::error(no_run(id));
    return read_summary(*st);
}

Result<std::string> RunStore::config_toml(int64_t id) {
    std::lock_guard<std::mutex> lock(*mu_);
    auto st = db_.prepare("SELECT config_toml FROM runs WHERE id = ?1");
    if (!st) return st.status();
    st->bind_int64(1, id);
    auto row = st->step();
    if (!row) return row.status();
    if (!row.value()) return Result<std::string>::error(no_run(id));
    return st->column_text(0);
}

Result<LaunchRecord> RunStore::launch(int64_t id) {
    std::lock_guard<std::mutex> lock(*mu_);
    auto st = db_.prepare("SELECT launch_toml, uid FROM runs WHERE id = ?1");
    if (!st) return st.status();
    st->bind_int64(1, id);
    auto row = st->step();
    if (!row) return row.status();
    if (!row.value()) return Result<LaunchRecord>::error(no_run(id));
    return LaunchRecord{st->column_text(0), st->column_text(1)};
}

Result<std::optional<int64_t>> RunStore::step_every_node_reported(int64_t id, const std::string& name) {
    using R = Result<std::optional<int64_t>>;
    std::lock_guard<std::mutex> lock(*mu_);
    auto st = run_statement(id, "SELECT step FROM metrics WHERE run_id = ?1 AND name = ?2 GROUP BY step "
                                "HAVING COUNT(DISTINCT node) = (SELECT COUNT(*) FROM run_nodes WHERE run_id = ?1) "
                                "ORDER BY step DESC LIMIT 1");
    if (!st) return st.status();
    st->bind_text(2, name);
    auto row = st->step();
    if (!row) return row.status();
    if (!row.value()) return R(std::optional<int64_t>());
    return R(std::optional<int64_t>(st->column_int64(0)));
}

Result<std::map<std::string, int64_t>> RunStore::latest_step_by_node(int64_t id, const std::string& name) {
    std::lock_guard<std::mutex> lock(*mu_);
    auto st = run_statement(id, "SELECT node, MAX(step) FROM metrics WHERE run_id = ?1 AND name = ?2 GROUP BY node");
    if (!st) return st.status();
    st->bind_text(2, name);
    std::map<std::string, int64_t> out;
    Status rows = st->each_row([&](const Statement& q) {
        out[q.column_text(0)] = q.column_int64(1);
    });
    if (!rows) return rows;
    return out;
}

Result<std::vector<RunNode>> RunStore::nodes(int64_t id) {
    std::lock_guard<std::mutex> lock(*mu_);
    auto st = run_statement(id, "SELECT node, endpoint, role, replica, stage, kind, host, version, threads, rank, cpu, "
                                "blas FROM run_nodes WHERE run_id = ?1 ORDER BY rowid");
    if (!st) return st.status();
    std::vector<RunNode> out;
    Status rows = st->each_row([&](const Statement& q) {
        RunNode n;
        q.columns(n.node, n.endpoint, n.role, n.replica, n.stage, n.kind, n.host, n.version, n.threads, n.rank, n.cpu,
                  n.blas);
        out.push_back(std::move(n));
    });
    if (!rows) return rows;
    return out;
}

Result<std::vector<MetricRecord>> RunStore::metrics(int64_t id, const std::string& name) {
    std::lock_guard<std::mutex> lock(*mu_);
    auto st = run_statement(id, "SELECT node, step, outer_step, wall_s, sim_s, name, value FROM metrics "
                                "WHERE run_id = ?1 AND name = ?2 ORDER BY step, rowid");
    if (!st) return st.status();
    st->bind_text(2, name);
    std::vector<MetricRecord> out;
    Status rows = st->each_row([&](const Statement& q) {
        MetricRecord r;
        q.columns(r.node, r.step, r.outer_step, r.wall_s, r.sim_s, r.name);
        r.value = nan_if_null(q, 6);
        out.push_back(std::move(r));
    });
    if (!rows) return rows;
    return out;
}

Result<std::vector<std::string>> RunStore::metric_names(int64_t id) {
    std::lock_guard<std::mutex> lock(*mu_);
    auto st = run_statement(id, "SELECT DISTINCT name FROM metrics WHERE run_id = ?1 ORDER BY name");
    if (!st) return st.status();
    std::vector<std::string> out;
    Status rows = st->each_row([&](const Statement& q) {
        out.push_back(q.column_text(0));
    });
    if (!rows) return rows;
    return out;
}

Status RunStore::copy_run_to(int64_t id, const std::string& dest_path) {
    {
        std::lock_guard<std::mutex> lock(*mu_);
        if (Status s = require_run(id); !s) return s;
    }
    if (Status s = check_output_target(dest_path, path()); !s) return s;  // the store itself, however spelt
    if (std::ifstream(dest_path).good()) return Status::error("refusing to overwrite existing file " + dest_path);
    {  // create the destination with this build's schema
        auto dest = RunStore::open(dest_path);
        if (!dest) return dest.status();
    }
    std::lock_guard<std::mutex> lock(*mu_);
    auto attach = db_.prepare("ATTACH DATABASE ?1 AS export_dest");
    if (!attach) return attach.status();
    attach->bind_text(1, dest_path);
    if (Status s = attach->run(); !s) return s;
    Status result = Status::ok();
    {
        auto tx = Transaction::begin(db_);
        if (!tx) {
            result = tx.status();
        } else {
            const std::string idv = std::to_string(id);
            for (const char* table : {"runs", "run_nodes", "metrics", "events"}) {
                // Columns by name, not by position, so the copy never depends on two files agreeing on column order.
                auto columns = column_list(db_, table);
                if (!columns) {
                    result = columns.status();
                    break;
                }
                const std::string where = std::string(table) == "runs" ? "id = " : "run_id = ";
                result = db_.exec(std::string("INSERT INTO export_dest.") + table + " (" + *columns + ") SELECT " +
                                  *columns + " FROM main." + table + " WHERE " + where + idv);
                if (!result) break;
            }
            if (result) result = tx->commit();
        }
    }
    Status detached = db_.exec("DETACH DATABASE export_dest");
    return result ? detached : result;
}

Result<std::vector<EventRecord>> RunStore::events(int64_t id) {
    std::lock_guard<std::mutex> lock(*mu_);
    auto st = run_statement(id, "SELECT wall_s, node, level, kind, text FROM events WHERE run_id = ?1 ORDER BY rowid");
    if (!st) return st.status();
    std::vector<EventRecord> out;
    Status rows = st->each_row([&](const Statement& q) {
        EventRecord e;
        e.wall_s = q.column_double(0);
        e.node = q.column_text(1);
        e.level = static_cast<EventLevel>(q.column_int64(2));
        e.kind = q.column_text(3);
        e.text = q.column_text(4);
        out.push_back(std::move(e));
    });
    if (!rows) return rows;
    return out;
}

}  // namespace tw
