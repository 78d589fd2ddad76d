// RunWriter: a thread that does one run's store writes (metric batches, events, the coordinator's
// heartbeat) in the order they were handed over, so the thread that hands them over never waits on
// the disk. The coordinator's session thread is the one that must not: it also sends the nodes their
// heartbeats, and a commit that waits seconds on a WAL checkpoint's fsync under load (or on another
// process's write lock, up to the busy timeout) would otherwise let the nodes' coordinator watchdog
// (cluster.heartbeat_timeout_s) stop a healthy run.
//
// Thread-safety: every public member may be called from any thread; writes happen on the writer's
// own thread, through `store` (RunStore serialises its own access). `store` outlives the writer.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/metrics.h"
#include "core/status.h"
#include "storage/run_store.h"

namespace tw {

class RunWriter {
public:
    // Writes for run `run_id` of `store`; metrics are committed at most `flush_every_s` after they arrive.
    RunWriter(RunStore& store, int64_t run_id, double flush_every_s = 1.0);
    // Writes everything still queued, then stops the thread (a failed write is reported on stderr).
    ~RunWriter();
    RunWriter(const RunWriter&) = delete;
    RunWriter& operator=(const RunWriter&) = delete;

    // Queues records; they are batched (storage/metric_writer.h) and committed every
    // MetricBuffer::kDefaultFlushAt records and at least every flush_every_s.
    void add_metrics(std::vector<MetricRecord> records);
    // Queues an event; a failed write is reported on stderr, naming the node.
    void add_event(EventRecord e);
    // Queues the coordinator's liveness heartbeat (RunStore::heartbeat).
    void heartbeat();
    // Waits until everything queued before the call is written. Returns the first metric write error
    // since the last drain (its rows stay queued for the next attempt), else ok.
    Status drain();

private:
    using Job = std::function<void()>;
    void loop();

    RunStore& store_;
    int64_t run_id_;
    double flush_every_s_;
    std::mutex mu_;
    std::condition_variable wake_, done_;
    std::deque<Job> jobs_;          // guarded by mu_
    std::vector<MetricRecord> rows_;  // guarded by mu_: records not yet handed to the batch
    uint64_t queued_ = 0, written_ = 0;  // guarded by mu_: jobs handed over / finished (drain's ticket)
    bool flush_now_ = false, closing_ = false;  // guarded by mu_
    Status kept_error_;               // writer thread only until drain() reads it under mu_
    std::thread thread_;              // last: starts after every member above exists
};

}  // namespace tw
