// MetricBuffer: batches MetricRecords in memory and writes them to a RunStore one transaction per batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/metrics.h"
#include "core/status.h"
#include "storage/run_store.h"

namespace tw {

// Collects metrics of one run and writes them in batches, so a training step costs a vector push, not a commit.
// A crash loses at most the records not yet flushed. Not thread-safe: one buffer per writing thread (the RunStore
// behind it may be shared). Not copyable or movable; `store` must outlive the buffer.
class MetricBuffer {
  public:
    static constexpr size_t kDefaultFlushAt = 256;  // records per batch

    // Buffers records for run `run_id` of `store` and flushes whenever `flush_at` (>= 1) records are pending.
    MetricBuffer(RunStore& store, int64_t run_id, size_t flush_at = kDefaultFlushAt);
    // Flushes what is pending. Cannot report an error, so it prints a one-line warning to stderr if the write fails;
    // call flush() first to handle errors yourself. Never throws.
    ~MetricBuffer();

    MetricBuffer(const MetricBuffer&) = delete;
    MetricBuffer& operator=(const MetricBuffer&) = delete;

    // Appends a record; writes the batch when the threshold is reached. A failed automatic write is kept
    // (returned by the next flush()), its records stay pending, and the next automatic attempt waits until another
    // `flush_at` records have arrived, so a broken database does not cost a failed commit per record.
    void add(MetricRecord record);
    // Writes every pending record now. Returns the first error kept from an automatic write since the last flush()
    // if there was one (clearing it), otherwise the result of this write. Records that failed stay pending.
    Status flush();

    // Records buffered and not yet written.
    size_t pending() const { return pending_.size(); }
    // The run this buffer writes to.
    int64_t run_id() const { return run_id_; }

  private:
    Status write_pending();

    RunStore& store_;
    int64_t run_id_;
    size_t flush_at_;
    size_t next_attempt_at_;  // pending() at which add() next tries to write
    std::vector<MetricRecord> pending_;
    Status kept_error_;  // first automatic-write failure not yet returned by flush()
};

// Intended usage:
//   MetricBuffer metrics(store, run_id);
//   for (step ...) metrics.add({"local", step, -1, wall_s, sim_s, "train.loss", loss});
//   if (Status s = metrics.flush(); !s) ...;   // at checkpoints and at the end of the run

}  // namespace tw
