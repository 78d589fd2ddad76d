// What a node runs once configured: the engine's worker loop behind a Torch-free interface, so the
// node server (remote/) can drive it without knowing LibTorch and app/ wires the two together.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/config.h"
#include "core/final_model.h"
#include "core/hdee_mixture.h"
#include "core/metrics.h"
#include "core/role.h"
#include "core/status.h"

namespace tw {

// Run control shared by the node server (writer) and the worker (reader, between steps).
struct WorkerControl {
    std::atomic<bool> stop{false};
    std::atomic<bool> paused{false};
    std::atomic<int64_t> step{0};  // last completed step, for status and heartbeats

    // Blocks while paused; returns false if a stop arrived meanwhile.
    bool wait_while_paused() const {
        while (paused.load() && !stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return !stop.load();
    }
};

// Where a worker's observations go: the node server streams them to the coordinator. Thread-safe.
class MetricSink {
public:
    virtual ~MetricSink() = default;
    virtual void metrics(std::vector<MetricRecord> records) = 0;
    virtual void event(EventRecord event) = 0;
    // An HDEE expert's scores of the shared evaluation documents (core/hdee_mixture.h), sent once
    // after training and before the worker returns. A sink that takes none says so in an error
    // event rather than dropping them silently.
    virtual void scores(ExpertScores s) {
        event({0, "", EventLevel::kError, "scores",
               "scores of " + std::to_string(s.logp.size()) + " tokens dropped: this sink takes none"});
    }
    // A part of the run's final model (core/final_model.h), sent after training by the node that
    // holds the model (or a stage of it) and before the worker returns, parts in order.
    virtual void final_model(FinalModelPart p) {
        event({0, "", EventLevel::kWarning, "model", "a part of the final model (" + p.name + ") dropped: this sink takes none"});
    }
};

// Final figures of a worker, by name ("val.loss", "sim_s", "bytes.outer.sent", ...), for the summary table.
using WorkerSummary = std::map<std::string, double>;

class Worker {
public:
    virtual ~Worker() = default;
    // Trains the role to the end (or until ctl.stop). Blocking; runs on the node's worker thread.
    virtual Result<WorkerSummary> run(WorkerControl& ctl, MetricSink& sink) = 0;
};

// What the node server hands a worker factory besides the run: where the node is and what it may
// use. Owned by the node server; `events` outlives every worker it builds.
struct NodeSite {
    std::string listen;        // control endpoint; the data endpoint derives from it (core/layout.h)
    std::string data_root;     // absolute; every path of the run resolves under it (core/data_root.h)
    MetricSink* events = nullptr;  // the node's own stream, for transport events (dropped frames)
    double heartbeat_s = 0.5;          // data-plane liveness: members send a heartbeat this often
    double heartbeat_timeout_s = 5;    // a member silent this long during a wait is declared lost
    // CurveZMQ: this node's keypair (Z85; empty without keys) and the hook that sets which peer
    // keys its data-plane listeners accept (remote/curve.h "data" domain; empty without keys).
    std::string public_key, secret_key;
    std::function<void(std::vector<std::string>)> allow_data_peers;
};

// What a node found when it prepared (or found cached) a run's data, for the coordinator: the
// vocabulary every node must use, the data's fingerprint (core/data_fingerprint.h, wire form), the
// unigram baseline of the validation tokens (nats per token) and the preparation's progress lines.
struct DataReport {
    int64_t vocab_size = 0;
    std::string fingerprint;
    double unigram_loss = 0;
    std::vector<std::string> log;
};

// Prepares a resolved config's data under the node's data root (`site.data_root`; the config's
// paths are already confined there). Blocking; may train a tokenizer on first use. Errors are values.
using DataPreparer = std::function<Result<DataReport>(const RunConfig&, const NodeSite& site)>;

// Builds a worker for a resolved config and a role on the node described by `site`; errors (bad
// data path, busy port) are values.
using WorkerFactory =
    std::function<Result<std::unique_ptr<Worker>>(const RunConfig&, const NodeRole&, const NodeSite& site)>;

}  // namespace tw
