// RunWriter: a thread that does one run's store writes (metric batches, events, the coordinator's
// heartbeat) in the order they were handed over, so the thread that hands them over never waits on
// the disk. The coordinator's session thread is the one that must not: it also sends the nodes their
// heartbeats, and a commit that waits seconds on a WAL checkpoint's fsync under load (or on another
// process's write lock, up to the busy timeout) would otherwise let the nodes' coordinator watchdog
// (cluster.heartbeat_timeout_s) stop a healthy run.
//
// A write that fails (a full disk, an I/O error, a lock held past the busy timeout) is never
// dropped silently: its rows stay queued for the next attempt, and failure() says so at once, so
// the coordinator can stop the run instead of training on while the rows pile up in memory.
//
// A disk that fills up takes the run's end with it: once SQLite cannot grow its files, even the
// one-row UPDATE that marks the run failed finds no room (its -wal must grow). So the writer keeps
// a reserve: when the store has less than `reserve_bytes` of room left (RunStore::room_bytes: the
// file system's free space or SQLite's page limit), it stops committing metric rows, holds them and
// reports a failure, as for a failed write. drain() spends the reserve: it writes everything held,
// so the rows of the steps until the run stops, and the run's end, still fit.
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
    // Room kept for ending a run: a few seconds of a fast run's rows (about 250 bytes each in the
    // file and its -wal) and the run's last rows, with a wide margin; small beside any disk.
    static constexpr int64_t kDefaultReserveBytes = int64_t{8} << 20;

    // Writes for run `run_id` of `store`; metrics are committed at most `flush_every_s` after they
    // arrive while the store has at least `reserve_bytes` of room (0: no reserve).
    RunWriter(RunStore& store, int64_t run_id, double flush_every_s = 1.0,
              int64_t reserve_bytes = kDefaultReserveBytes);
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
    // Waits until everything queued before the call is written, into the reserve if need be.
    // Returns the first metric write error since the last drain (its rows stay queued for the next
    // attempt), else ok.
    Status drain();
    // The first write of any kind (a metric batch, an event, a heartbeat) that failed since the
    // writer started, or the store's room falling under the reserve ("only N MiB of room left ...");
    // ok while neither happened. Stays set after later writes succeed. Never waits on the disk.
    Status failure() const;
    // Metric rows handed over and not stored yet: queued, or kept after a failed write. Exact right
    // after drain(); otherwise as of the writer's last pass.
    size_t unstored() const;

private:
    using Job = std::function<void()>;
    void loop();
    void note_failure(const Status& st);  // keeps the first failure
    Status check_room();                  // ok while the store has reserve_bytes_ of room

    RunStore& store_;
    int64_t run_id_;
    double flush_every_s_;
    int64_t reserve_bytes_;
    mutable std::mutex mu_;
    std::condition_variable wake_, done_;
    std::deque<Job> jobs_;          // guarded by mu_
    std::vector<MetricRecord> rows_;  // guarded by mu_: records not yet handed to the batch
    uint64_t queued_ = 0, written_ = 0;  // guarded by mu_: jobs handed over / finished (drain's ticket)
    bool flush_now_ = false, closing_ = false;  // guarded by mu_
    Status kept_error_;               // guarded by mu_: first metric write error since the last drain
    Status first_failure_;            // guarded by mu_: first failed write of any kind, never cleared
    size_t batch_pending_ = 0;        // guarded by mu_: rows the writer thread holds unstored
    std::thread thread_;              // last: starts after every member above exists
};

}  // namespace tw
