// A run through the coordinator, as `thinwire run`, `thinwire train` (with replicas) and the
// workbench do it: prepare the data, bring up the cluster the layout names, assign roles, stream
// metrics into the run store, and end the run as finished, failed or interrupted. A Session runs
// on its own thread, so a GUI frame never waits for it; front ends read snapshots.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/config.h"
#include "core/metrics.h"
#include "core/worker.h"
#include "remote/coordinator.h"

namespace tw::cli {

struct SessionResult {
    int64_t run_id = 0;                            // 0 if the run never started (bad layout, no data)
    bool failed_to_start = false;
    RunStatus status = RunStatus::kFinished;
    std::string reason;
    double wall_s = 0;
    double unigram = 0;
    std::vector<std::string> nodes;                // role names, node order
    std::map<std::string, WorkerSummary> summary;  // by role name
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
    // labels runs started together; `exe` is this binary (for local child processes). `data_root`
    // (absolute, canonical: coordinator_data_root) is where this coordinator and the nodes it
    // starts read and write; cfg's paths are made relative to it (core/data_root.h) before anything
    // starts, and a path outside it fails the session before any node runs.
    Session(RunConfig cfg, std::string db_path, std::string group, std::string exe, std::string data_root,
            bool print_progress);
    ~Session();  // stops the run and waits for it

    void pause() { pause_req_ = true; }
    void resume() { resume_req_ = true; }
    void stop() { stop_req_ = true; }
    SessionSnapshot snapshot() const;
    const SessionResult& wait();  // blocks until the session has ended

private:
    void body(RunConfig cfg);
    void set_phase(const std::string& p);
    void add_log(const std::string& line);
    void publish(const std::vector<NodeInfo>& nodes);

    std::string db_path_, group_, exe_, data_root_;
    bool print_;
    std::atomic<bool> pause_req_{false}, resume_req_{false}, stop_req_{false};
    mutable std::mutex mu_;
    SessionSnapshot snap_;
    SessionResult result_;
    std::thread thread_;
};

// The CLI's way: a session with progress lines, Ctrl-C (the flag) stopping it cleanly. Throws
// tw::Error when the run could not start at all.
SessionResult run_session(RunConfig cfg, const std::string& db_path, const std::string& group, const std::string& exe,
                          const std::string& data_root, const std::atomic<bool>& interrupt);

// A coordinator's data root (`--data-root DIR`), absolute and canonical: DIR (created 0700 when
// missing), or the working directory when empty, so layouts written relative to it (cache_dir =
// ".cache/thinwire", corpus = "brown") mean what they always meant.
Result<std::string> coordinator_data_root(const std::string& given);

}  // namespace tw::cli
