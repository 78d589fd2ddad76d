// A run through the coordinator, as `thinwire run`, `thinwire train` and the workbench do it: bring
// up the cluster the layout names, have its nodes prepare the data (node 0 first, the vocabulary
// and fingerprint every node must match come from it), assign roles, stream metrics into the run
// store (the coordinator is its only writer), and end the run as finished, failed or interrupted.
// A Session runs on its own thread, so a GUI frame never waits for it; front ends read snapshots.
//
// The coordinator module builds without LibTorch: what nodes of this process run (thread nodes'
// workers and data preparation) comes in as EngineHooks from the binary that links the engine.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/config.h"
#include "core/metrics.h"
#include "core/worker.h"
#include "remote/coordinator.h"

namespace zmq { class context_t; }

namespace tw {

class RelayJoins;
class RunStore;
class FinalModelAssembly;

// What a session needs from the binary it runs in.
struct EngineHooks {
    // Thread nodes' workers; inproc:// meshes need the context all of them share.
    std::function<WorkerFactory(std::shared_ptr<zmq::context_t>)> worker_factory;
    DataPreparer prepare_data;  // thread nodes' answer to `prepare`
    std::string exe;            // this binary, for child-process nodes (`thinwire node`)
    std::string version;        // reported by thread nodes in capabilities
};

struct SessionResult {
    int64_t run_id = 0;                            // 0 if the run never started (bad layout, no nodes)
    bool failed_to_start = false;
    RunStatus status = RunStatus::kFinished;
    std::string reason;
    double wall_s = 0;
    double unigram = 0;
    std::vector<std::string> nodes;                // role names, node order
    std::map<std::string, WorkerSummary> summary;  // by role name
    std::string end_tables;                        // the run kind's end as text (RunKindRow::finish; "" = none)
    int64_t resumed_at = -1;                       // a resumed run: the checkpoint step it went on from
    std::string model_dir;                         // where the final model was kept ("" = none)
    bool store_failed = false;                     // the run store could not be written (it fails the next runs too)
};

// What a front end shows while the session runs; copied under a lock.
struct SessionSnapshot {
    std::string phase = "starting";  // preparing data, starting nodes, running, paused, stopping, finished, ...
    int64_t run_id = 0;
    std::vector<NodeInfo> nodes;     // as the coordinator last saw them
    std::vector<std::string> log;    // coordinator and node events, oldest first
    bool done = false;
    RunStatus status = RunStatus::kRunning;
    std::string reason;
};

class Session {
public:
    // Starts `cfg` (resolved) at once on its own thread, writing to the store at `db_path`. `group`
    // labels runs started together; `hooks` bring up this process's nodes. `data_root`
    // (absolute, canonical: coordinator_data_root) is where this coordinator and the nodes it
    // starts read and write; cfg's paths are made relative to it (core/data_root.h) before anything
    // starts, and a path outside it fails the session before any node runs.
    //
    // `resume_run` > 0 continues that run of the store instead of creating one (`thinwire run
    // --resume`, coordinator/resume_plan.h): same id, every node loading its checkpoint of the
    // latest step all of them wrote, the metrics stored after that step deleted, status running
    // again. `cfg` is then the run's launch config (or what --force put in its place).
    //
    // `print_progress`: the store sink's progress lines and warnings on the terminal. `announce`
    // receives the lines a person starting the run reads once — the run's banner (run_banner.h),
    // the data preparation's log, where the final model was kept — on the session's thread; the
    // CLI prints them, the workbench has them in its own panels. May be empty.
    Session(RunConfig cfg, std::string db_path, std::string group, EngineHooks hooks, std::string data_root,
            bool print_progress, int64_t resume_run = 0, std::function<void(const std::string&)> announce = {});
    ~Session();  // stops the run and waits for it

    void pause() { pause_req_ = true; }
    void resume() { resume_req_ = true; }
    void stop() { stop_req_ = true; }
    SessionSnapshot snapshot() const;
    const SessionResult& wait();  // blocks until the session has ended

private:
    // The session's thread: its phases in turn, sharing one Live. A phase that cannot go on throws
    // (end_after_exception ends the stored run) or, for prepare, ends the run itself and says so.
    struct Live;
    void body(RunConfig cfg);
    // Launch limits, the nodes (threads, child processes or the layout's remote endpoints) and the
    // coordinator connected to them.
    void bring_up(Live& run);
    // The nodes prepare the data, node 0 first; the roles; the hub relay. False when the run ended
    // here (stored as failed, or interrupted by a stop).
    bool prepare(Live& run);
    // The run in the store (new, or the one resumed), its nodes, checkpoints and launch events, the
    // banner, the sink and the supervisors (scheduled kills, lost-node restarts).
    void open_run(Live& run);
    // Configure, start, and poll until the run ends: pause, resume and stop requests, the
    // supervisors, a failing store stopping the run.
    RunOutcome run_until_done(Live& run);
    // Surviving nodes drained, HDEE's ensembles combined, the final model kept, the run's end stored.
    void wind_down(Live& run, RunOutcome outcome);
    void announce(const std::string& line) const {
        if (announce_) announce_(line);
    }
    // Writes the final model the nodes sent into the run's folder (storage/run_folder.h) with the
    // resolved config; sets out.model_dir. An error says why none was kept.
    Status keep_final_model(const RunConfig& cfg, const std::vector<NodeRole>& roles, const FinalModelAssembly& parts,
                            SessionResult& out) const;
    // A run that failed before any node was configured (its data could not be prepared): created
    // and ended as failed with `reason`, so the store says why (interrupted: stopped while the nodes
    // prepared). Sets result_.
    void fail_unstarted(RunStore& store, const RunConfig& cfg, const std::string& reason, double wall_s,
                        RunStatus status = RunStatus::kFailed);
    // The session thread's last resort: result_ failed with `what`, and a stored run ended as failed.
    void end_after_exception(const std::string& what);
    void set_phase(const std::string& p);
    void add_log(const std::string& line);
    // The nodes as the workbench shows them; those that joined a relay carry their key.
    void publish(const std::vector<NodeInfo>& nodes, const RelayJoins& joins);

    std::string db_path_, group_, data_root_;
    EngineHooks hooks_;
    bool print_;
    std::function<void(const std::string&)> announce_;
    int64_t resume_run_ = 0;
    std::atomic<bool> pause_req_{false}, resume_req_{false}, stop_req_{false};
    mutable std::mutex mu_;
    SessionSnapshot snap_;
    SessionResult result_;
    bool run_ended_ = false;  // the stored run has its end (finish_run succeeded); session thread only
    std::thread thread_;
};

// The CLI's way: a session with progress lines, Ctrl-C (the flag) stopping it cleanly. Throws
// tw::Error when the run could not start at all.
// `resume_run` as Session's.
SessionResult run_session(RunConfig cfg, const std::string& db_path, const std::string& group, EngineHooks hooks,
                          const std::string& data_root, const std::atomic<bool>& interrupt, int64_t resume_run = 0);

// A coordinator's data root (`--data-root DIR`), absolute and canonical: DIR, or the per-user cache
// folder when empty (core/data_root.h: default_data_root), created 0700 when missing. A layout's
// data paths (corpus, cache_dir, shards, checkpoints) are relative to it, so a run means the same
// from any working directory; the layout file itself is found from the working directory.
Result<std::string> coordinator_data_root(const std::string& given);

}  // namespace tw
