// The workbench's view of the run store, loaded on a background thread so no frame ever waits for
// SQLite: the run list (for History) and, for the runs being looked at, their series per node.
// The UI thread takes an immutable snapshot (a shared_ptr swap) once per frame.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/config.h"
#include "ui/data/run_row.h"
#include "storage/run_store.h"
#include "storage/run_traces.h"
#include "ui/logic/hardware_retime.h"
#include "ui/logic/series.h"

namespace tw::ui {

// One node's series, each row as stored (x candidates: step, wall_s, sim_s; tokens and cumulative
// bytes are looked up by step).
struct NodeData {
    std::vector<double> step, loss, wall_s, sim_s;             // train.loss rows
    std::vector<double> val_step, val, val_wall_s, val_sim_s;  // val.loss rows
    std::map<int64_t, double> tokens_at;                       // step → train.tokens
    std::map<int64_t, double> bytes_at;                        // step → cumulative bytes sent, all link classes
    std::map<std::string, double> bytes_final;                 // "bytes.outer.sent" → last value
    std::vector<double> round_step, round_compute_s, round_exposed_s;  // per synchronisation round
};

struct RunData {
    RunSummary summary;
    RunConfig cfg;                          // parsed from the stored resolved config
    bool cfg_ok = false;
    std::map<std::string, NodeData> nodes;  // by node name
    std::string key_settings;               // "ddp, R=4, H=15, lr 0.6, wan-1g" for tooltips
    std::vector<EventRecord> faults;        // the run's fault events (ui/logic/fault_events.h), stored order
    // What its nodes computed on, one entry per distinct CPU and BLAS ("AMD EPYC, BLAS
    // libopenblasp-r0.3.21.so (openblas-pthread)"); empty for runs stored before schema v4.
    std::vector<std::string> platforms;
    // What the what-if re-timing replays (finished runs only; storage/run_traces.h), or why it cannot.
    std::shared_ptr<const StoredRunTraces> traces;
    std::string traces_error;
};

struct CacheState {
    std::vector<RunSummary> runs;                           // all runs, oldest first
    std::map<int64_t, std::shared_ptr<const RunRow>> rows;  // every run's table row (ui/data/run_row.h)
    std::map<int64_t, std::shared_ptr<const RunData>> loaded;  // the runs asked for
    std::string error;                                      // last load error ("" if none)
};

class RunCache {
public:
    explicit RunCache(std::string db_path, double refresh_s = 1.0);
    ~RunCache();

    // The runs whose series the UI wants; running ones are reloaded every refresh.
    void want(const std::set<int64_t>& ids);
    std::shared_ptr<const CacheState> state() const;
    // Loads synchronously once (headless screenshot mode and tests).
    void load_now();

private:
    void loop();
    void refresh();

    std::string db_path_;
    double refresh_s_;
    std::mutex refresh_mu_;             // one refresh at a time; guards store_
    std::unique_ptr<RunStore> store_;   // opened at the first refresh, kept
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::set<int64_t> wanted_;
    std::shared_ptr<const CacheState> state_;
    std::atomic<bool> quit_{false};
    std::thread thread_;
};

// The x-axes the workbench plots loss against (and `thinwire report` uses).
enum class XAxis : int { kStep = 0, kTokens = 1, kBytes = 2, kSimTime = 3, kWallTime = 4 };

// x of a train or val row of `n` on `axis`: step, tokens (by step), cumulative bytes sent by this
// node over every link class (by step; 0 for a node that never sent), simulated time (recorded,
// or re-timed when `retimed` is given), wall time. NaN when unknown.
double x_of(const NodeData& n, XAxis axis, double step, double sim_s, double wall_s,
            const std::map<int64_t, double>* retimed);

// The value at the largest key <= step; NaN when there is none (cumulative counters are recorded
// every step, but nodes may record different steps).
double at_or_before(const std::map<int64_t, double>& m, double step);

// A what-if for a finished run: another network profile, other hardware, or both.
struct WhatIf {
    std::string network;      // a network profile; "" = the run's own (with its [network] overrides)
    HardwareWhatIf hardware;  // hardware.hardware "" = as recorded
    bool empty() const { return network.empty() && hardware.hardware.empty(); }
    // "wan-100m", "a100 (eff 0.4)", "wan-100m, a100": for tooltips and as a cache key.
    std::string label() const;
    bool operator==(const WhatIf& o) const;
    bool operator!=(const WhatIf& o) const { return !(*this == o); }
};

// A run re-timed for a what-if, by node name: per-step clocks (step → clock at its end) and the
// replay's totals.
struct RetimedRun {
    struct Node {
        std::map<int64_t, double> clock_at;
        double sim_s = 0, compute_s = 0, exposed_s = 0;
    };
    std::map<std::string, Node> nodes;
};

// Every node of `d` re-timed for `w` (core/timeline.h, the replay `thinwire runs retime` runs; with
// other hardware, its compute first re-timed by ui/logic/hardware_retime.h); an error when the run
// cannot be re-timed (it is still running, its kind is refused, the profile is unknown).
Result<RetimedRun> retime_run(const RunData& d, const WhatIf& w);

// Loads one run's series from an open store.
Result<RunData> load_run(RunStore& store, int64_t id);

}  // namespace tw::ui
