// The coordinator's sink (remote/coordinator.h CoordinatorSink): streams the nodes' metric records
// into the run store in batches (a coordinator crash loses at most a second of them; re-timing
// reads its traces back from the store, storage/run_traces.h), stores and forwards events, prints one
// progress line per node (redrawn in place on a terminal, every train.log_every steps otherwise).
// Every store write goes through a RunWriter thread (storage/run_writer.h), so a slow disk never
// delays the session's heartbeats to the nodes. The coordinator is the only writer of the run
// store. Used from the session's thread only.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "coordinator/final_model_assembly.h"
#include "core/event_throttle.h"
#include "core/metrics.h"
#include "core/status.h"
#include "remote/coordinator.h"
#include "storage/run_store.h"
#include "storage/run_writer.h"

namespace tw {

class StoreSink : public CoordinatorSink {
public:
    // `store` outlives the sink; `nodes` are the run's role names in display order; `steps` and
    // `every` (train.steps, train.log_every) pace the progress lines; `on_event` sees every event.
    StoreSink(RunStore& store, int64_t run_id, int64_t steps, int64_t every, std::vector<std::string> nodes,
              bool print, std::function<void(const EventRecord&)> on_event);

    void on_metrics(const std::vector<MetricRecord>& records) override;
    void on_event(const EventRecord& e) override;
    // Keeps an HDEE expert's scores for the session to combine once every expert has finished.
    void on_scores(const std::string& node, ExpertScores scores) override { this->scores[node] = std::move(scores); }
    // Hands a part of the final model to `model` (set by the session; none: the base's warning).
    // A refused part is a warning event naming the node and the part.
    void on_model_part(const std::string& node, FinalModelPart part) override;
    FinalModelAssembly* model = nullptr;
    // Waits until every metric row and event handed over so far is written; a failed write keeps
    // its rows for the next flush.
    Status flush();
    // Stores the coordinator's liveness heartbeat (RunStore::heartbeat) without waiting for it, and
    // the counts of events held back in windows that have ended (core/event_throttle.h).
    void heartbeat();
    // The first store write that failed (storage/run_writer.h RunWriter::failure); ok while none
    // has. The session stops the run on it. Never waits on the disk.
    Status write_failure() const { return writer_.failure(); }
    // Metric rows handed over and not stored; exact right after flush().
    size_t unstored() const { return writer_.unstored(); }
    // Redraws the block of progress lines on a terminal (at most twice a second).
    void redraw();
    // After the run: every node's line once more with its final figures (redrawn on a terminal;
    // printed again otherwise when they changed since its last line), so the last lines agree with
    // the summary table printed after them (the final evaluation and the last round's bytes arrive
    // after the last step's loss).
    void finish();
    std::map<std::string, ExpertScores> scores;  // by node: HDEE experts' scores (core/hdee_mixture.h)
    // The last train.tokens a node reported (0 = none yet): a restarted node's count goes on from it.
    int64_t tokens(const std::string& node) const {
        auto it = lines_.find(node);
        return it == lines_.end() ? 0 : it->second.tokens;
    }

private:
    using Clock = std::chrono::steady_clock;
    struct Line {
        int64_t step = 0;
        double loss = NAN, val = NAN, sim_s = 0;  // NAN = not reported yet
        int64_t tokens = 0;                        // train.tokens, as last reported
        std::map<std::string, double> sent;  // bytes.*.sent by metric name
        // For the ETA: the first step seen and when (a resumed run starts past 0).
        int64_t first_step = -1;
        Clock::time_point first_at;
        std::string printed;  // the text of its last printed line (non-terminal output)
    };
    std::string line_text(const std::string& node, const Line& l) const;
    void print_line(const std::string& node, Line& l);
    // Stores, forwards and prints one event that passed the rate limit.
    void keep(const EventRecord& e);
    double now_s() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }

    std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
    int64_t steps_, every_;
    bool print_, tty_, drawn_ = false;
    std::vector<std::string> nodes_;
    std::function<void(const EventRecord&)> on_event_;
    std::map<std::string, Line> lines_;
    // Repeated flood events of one node and kind (junk frames, dropped connections, malformed
    // messages) past 5 in 10 s are counted, not stored one by one; other kinds always pass.
    EventThrottle throttle_{10.0, 5};
    Clock::time_point last_draw_ = Clock::now();
    RunWriter writer_;  // last: its thread stops (writing what is left) before the members above go
};

}  // namespace tw
