// A node worker's record of its run: the metric rows it buffers between flushes, the events it
// sends, the wall time since the run's start, and the rows and events every worker writes alike —
// cumulative bytes after a step, the stop. Every worker (replica, pipeline stage, SkipPipe stage,
// HDEE expert) records through one, so a row or an event reads the same whichever node wrote it.
//
// A row is stamped with the node's name, the step it names, the outer step and simulated seconds
// the worker's stamp says (stamp_with; −1 and 0 until then) and the wall seconds since the run's
// start. Rows leave for the sink on flush(); events leave at once.
//
// Ownership: the sink is borrowed (attach) and must outlive every call that sends; the stamp
// functions are the worker's and may read its members. Thread-safety: not thread-safe, one worker
// thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/collective.h"
#include "core/metrics.h"
#include "core/worker.h"

namespace tw {

using WorkerClock = std::chrono::steady_clock;
// Wall seconds from `t` to now.
inline double seconds_since(WorkerClock::time_point t) {
    return std::chrono::duration<double>(WorkerClock::now() - t).count();
}

// Recovery bytes a node sent or received (bytes.outer.recovery.*: a joiner's, a late replica's or
// a spare's state); rows only once non-zero.
struct RecoveryBytes {
    uint64_t sent = 0, recv = 0;
};

class WorkerRecorder {
public:
    // `node`: the name on every row and event; `start`: the run's start (a restarted process counts
    // from its peers' start, NodeRole::rejoin_age_ms).
    WorkerRecorder(std::string node, WorkerClock::time_point start) : node_(std::move(node)), t0_(start) {}

    // What each row carries besides its step: the node's simulated seconds now and its outer step
    // (either may be empty: 0 and −1).
    void stamp_with(std::function<double()> sim_s, std::function<int64_t()> outer_step) {
        sim_s_ = std::move(sim_s), outer_step_ = std::move(outer_step);
    }
    void attach(MetricSink& sink) { sink_ = &sink; }
    MetricSink* sink() const { return sink_; }

    const std::string& node() const { return node_; }
    double wall_s() const { return seconds_since(t0_); }  // since the run's start

    void record(int64_t step, const std::string& name, double v) {
        rows_.push_back({node_, step, outer_step_ ? outer_step_() : -1, wall_s(), sim_s_ ? sim_s_() : 0, name, v});
    }
    void record_all(int64_t step, const std::vector<std::pair<std::string, double>>& rows) {
        for (auto& [name, v] : rows) record(step, name, v);
    }
    // record() as a function, for code that takes one (save_and_report_checkpoint).
    std::function<void(int64_t, const std::string&, double)> recorder() {
        return [this](int64_t s, const std::string& name, double v) { record(s, name, v); };
    }
    // The cumulative byte rows after a step: every link class that carried anything (byte_metrics)
    // and the recovery bytes once there are any.
    void record_bytes(int64_t step, const ByteCounters& total, const RecoveryBytes& recovery = {});

    // An event now; nothing before attach().
    void event(EventLevel level, const std::string& kind, const std::string& text) {
        if (sink_) sink_->event({wall_s(), node_, level, kind, text});
    }
    void info(const std::string& kind, const std::string& text) { event(EventLevel::kInfo, kind, text); }
    void warn(const std::string& kind, const std::string& text) { event(EventLevel::kWarning, kind, text); }
    // The "stop" event of a worker that a stop request ended at `step`.
    void stopped_at(int64_t step) { info("stop", "stopped at step " + std::to_string(step)); }

    // The rows so far to the sink, an empty batch included: once per step, so the node server's
    // stream shows the step whether or not it wrote rows.
    void flush() {
        if (sink_) sink_->metrics(std::exchange(rows_, {}));
    }
    // The rows so far, if there are any: at the end of a run or before the process is killed.
    void flush_pending() {
        if (!rows_.empty()) flush();
    }

private:
    std::string node_;
    WorkerClock::time_point t0_;
    std::function<double()> sim_s_;
    std::function<int64_t()> outer_step_;
    MetricSink* sink_ = nullptr;
    std::vector<MetricRecord> rows_;
};

}  // namespace tw
