// RunStore: the runs, their nodes, metrics and events in one SQLite file (docs/architecture.md §5).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/metrics.h"
#include "core/status.h"
#include "storage/store_probe.h"
#include "storage/sqlite.h"

namespace tw {

// One row of the run list, with the latest progress derived from the metrics table.
struct RunSummary {
    int64_t id = 0;
    std::string name;
    RunStatus status = RunStatus::kRunning;
    std::string created_at;                  // ISO-8601 UTC with milliseconds, "2025-01-31T12:00:00.000Z"
    std::optional<std::string> finished_at;  // same format; empty while the run is running
    std::string kind;                        // "train" for now
    std::string config_hash;                 // hash of the resolved config (core/config_io.h config_hash)
    int64_t seed = 0;
    std::optional<int64_t> last_step;       // largest step of any metric; empty before the first metric
    std::optional<double> last_train_loss;  // "train.loss" at its largest step; empty if never reported
    std::optional<double> last_val_loss;    // "val.loss" at its largest step; empty if never reported
    std::string reason;                     // why it finished, failed or was interrupted; "" when none given
    std::string notes;                      // free text set by the user
    std::string tags;                       // free text set by the user (the UI decides the separator)
    std::string group;    // runs started together by one command (quickstart variants, a sweep); "" when alone
    std::string cluster;  // where its nodes ran: "threads" | "local" | "remote"; "" for single-process
    // Its coordinator (schema v3): process id and host name (0 / "" = not recorded, e.g. runs of
    // older builds), and when it last wrote a heartbeat, Unix seconds (0 = never).
    int64_t coordinator_pid = 0;
    std::string coordinator_host;
    double heartbeat_at = 0;
};

// A process taking part in a run (rows of run_nodes).
struct RunNode {
    std::string node;      // node name as it appears in MetricRecord::node
    std::string endpoint;  // transport address, "" for in-process
    std::string role;      // free text, e.g. "trainer", "coordinator"
    int64_t replica = -1;  // data-parallel replica index, -1 when not applicable
    int64_t stage = -1;    // pipeline stage index, -1 when not applicable
    std::string kind;      // "full" (a whole-model replica) | "pipeline" (one stage of one); "" when unknown
    std::string host;      // machine the node ran on (hostname), "" when unknown
    std::string version;   // thinwire version of the node's binary, "" when unknown
    int64_t threads = 0;   // intra-op threads the node used, 0 when unknown
    int64_t rank = -1;     // rank inside its replica's DDP group, -1 when the replica is one process
    std::string cpu;       // its CPU model (schema v4), "" when unknown
    std::string blas;      // the BLAS library its process mapped (schema v4), "" when unknown
};

// How a run was launched (schema v3), for `thinwire run --resume`.
struct LaunchRecord {
    std::string toml;  // the resolved config before the session adapted it to its cluster
    std::string uid;   // random hex, unique across databases: names the run's checkpoint folder
};

// Parses the text written by to_string(RunStatus); empty for anything else.
std::optional<RunStatus> parse_run_status(std::string_view text);

// The run database. Every call is one transaction at most, serialized by an internal mutex, so one RunStore can
// be shared by a training thread and the UI. Several processes may open the same file: WAL lets readers proceed
// while one writer writes, and writers wait up to 5 s for each other. Move-only.
class RunStore {
  public:
    // Opens or creates (kCreate) the database at `path` (":memory:" for a throw-away one) and migrates it to the
    // latest schema. Fails, before anything is written to the file, when it is not a database, is another
    // application's (tables but no thinwire ones), has a newer schema than this build knows, or (kExisting)
    // does not exist (storage/store_probe.h).
    static Result<RunStore> open(const std::string& path, StoreAccess access = StoreAccess::kCreate);

    // --- writing a run ---

    // Creates a run with status running and created_at now; returns its id (ids increase with creation).
    Result<int64_t> create_run(const std::string& name, const std::string& kind, const std::string& config_toml,
                               const std::string& config_hash, int64_t seed);
    // Sets a terminal status (not kRunning), finished_at now and the reason; "no run with id N" if missing.
    Status finish_run(int64_t id, RunStatus status, const std::string& reason);
    // Records a node of the run.
    Status add_node(int64_t id, const RunNode& node);
    // Appends metrics in one transaction: all of them or none. Fails if the run does not exist.
    Status add_metrics(int64_t id, const std::vector<MetricRecord>& records);
    // Appends one event.
    Status add_event(int64_t id, const EventRecord& event);
    // Replaces the run's notes / tags; "no run with id N" if missing.
    Status set_notes(int64_t id, const std::string& text);
    Status set_tags(int64_t id, const std::string& text);
    // Sets the run's group (runs started by one command share it) and cluster kind; "no run with id N" if missing.
    Status set_run_group(int64_t id, const std::string& group, const std::string& cluster);

    // Records who coordinates the run (this process's pid and host) and a first heartbeat.
    Status set_coordinator(int64_t id, int64_t pid, const std::string& host);
    // The coordinator is alive: heartbeat_at = now (Unix seconds). Written every few seconds. A run
    // a reader marked interrupted because its coordinator seemed gone is running again.
    Status heartbeat(int64_t id);
    // The config the run was launched with (before the session adapted it), for `run --resume`,
    // and the run's uid (random hex naming its checkpoints' folder; ids repeat across databases).
    Status set_launch(int64_t id, const LaunchRecord& launch);
    // Replaces the stored resolved config and its hash (a resume with --force runs another config).
    Status set_config(int64_t id, const std::string& config_toml, const std::string& config_hash);
    // A resumed run: status running again, finished_at and reason cleared.
    Status reopen_run(int64_t id);
    // Deletes the run's metric rows after `step` (a resume replaces them; never duplicates them):
    // every node's, or only `node`'s (a run whose nodes resume from steps of their own: HDEE,
    // time-budgeted rounds). Returns how many rows went.
    Result<int64_t> delete_metrics_after(int64_t id, int64_t step, const std::string& node = "");

    // Deletes the run: its nodes, metrics, events and the run row, in one transaction. Refuses a run
    // whose status is running ("stop it first"); "no run with id N" if missing. Checkpoint files on
    // disk are not touched.
    Status delete_run(int64_t id);

    // --- reading ---

    // What a run's table row shows of its metrics: Σ over nodes of each node's last bytes.outer.sent,
    // bytes.intra.sent and bytes.stage.sent (cumulative counters: their largest value), and the
    // largest simulated clock of any record (NaN when none). "no run with id N" if missing.
    struct Totals {
        double bytes_sent = 0;
        double sim_s = 0;
    };
    Result<Totals> totals(int64_t id);

    // All runs, oldest first (ascending id).
    Result<std::vector<RunSummary>> list_runs();
    // One run; "no run with id N" if missing.
    Result<RunSummary> get_run(int64_t id);
    // The resolved config TOML stored with the run; "no run with id N" if missing.
    Result<std::string> config_toml(int64_t id);
    // What set_launch stored; empty strings for runs that have none (older builds).
    Result<LaunchRecord> launch(int64_t id);
    // The latest step at which every node of the run (its run_nodes rows) stored the metric
    // `name` (the checkpoint metric: every node has a checkpoint of that step); nullopt when none.
    Result<std::optional<int64_t>> step_every_node_reported(int64_t id, const std::string& name);
    // Per node, the latest step at which it stored the metric `name`; nodes that never did are absent.
    Result<std::map<std::string, int64_t>> latest_step_by_node(int64_t id, const std::string& name);
    // The run's nodes in insertion order.
    Result<std::vector<RunNode>> nodes(int64_t id);
    // Every record named `name` from all nodes of the run, ordered by step, ties in insertion order;
    // "no run with id N" if missing, empty if the run has no such metric.
    Result<std::vector<MetricRecord>> metrics(int64_t id, const std::string& name);
    // The distinct metric names of the run, sorted.
    Result<std::vector<std::string>> metric_names(int64_t id);
    // The run's events in insertion order.
    Result<std::vector<EventRecord>> events(int64_t id);

    // Writes run `id` (its row, nodes, metrics and events) into a new standalone database at
    // `dest_path` with this build's schema. Refuses to overwrite an existing file, and refuses this
    // store's own files however spelt (core/output_file.h check_output_target).
    Status copy_run_to(int64_t id, const std::string& dest_path);

    // Bytes the store can still grow by: the free space of the file system holding it (blocks
    // available to this process, statvfs(3)) or what SQLite's page limit leaves (PRAGMA
    // max_page_count − page_count, times page_size), whichever is smaller. Cheap: no page is read.
    Result<int64_t> room_bytes();

    // The path given to open().
    const std::string& path() const { return db_.path(); }

  private:
    explicit RunStore(Database db) : db_(std::move(db)), mu_(std::make_unique<std::mutex>()) {}
    Status require_run(int64_t id);  // "no run with id N" unless it exists; caller holds mu_
    // `sql` compiled with ?1 bound to run `id`, once require_run found it; caller holds mu_.
    Result<Statement> run_statement(int64_t id, const std::string& sql);
    // One UPDATE of run `id`'s row: ?1 is the id, ?2, ?3, ... take `values` in order. "no run with id N"
    // when the row is not there. Takes mu_.
    using RunValue = std::variant<int64_t, double, std::string_view>;
    Status update_run(int64_t id, const char* sql, std::initializer_list<RunValue> values);

    Database db_;
    std::unique_ptr<std::mutex> mu_;  // behind a pointer so RunStore stays movable
};

}  // namespace tw
