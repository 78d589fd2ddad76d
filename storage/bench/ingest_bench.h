// Metric ingestion benchmark: rows/s of RunStore::add_metrics in batches against one row per transaction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"
#include "storage/metric_writer.h"

namespace tw {

struct IngestBenchOptions {
    int64_t rows = 1'000'000;                        // rows written in batches of `batch`
    size_t batch = MetricBuffer::kDefaultFlushAt;    // rows per add_metrics call = per transaction (>= 1)
    int64_t single_rows = 20'000;                    // rows of the one-row-per-transaction reference
    std::string db_path;  // file to write; "" = a new file in the temp dir. Must not exist; removed afterwards
    int64_t nodes = 4;    // writing nodes ("replica-0", ...); each batch comes from one node, as one MetricBuffer
};

// One measured phase: `rows` rows in `transactions` add_metrics calls on a fresh file.
struct IngestPhase {
    int64_t rows = 0;
    int64_t transactions = 0;
    double seconds = 0;         // wall time inside add_metrics only (building the records is not counted)
    double rows_per_s = 0;      // rows / seconds
    double cpu_seconds = 0;     // CPU time of the writing thread inside add_metrics (user + system)
    double rows_per_cpu_s = 0;  // rows / cpu_seconds: the write path's cost, less sensitive to a busy machine
    int64_t file_bytes = 0;     // database + WAL size after the last commit, before closing
};

struct IngestBenchResult {
    std::string db_path;  // the file that was written (and removed)
    IngestPhase batched;  // `batch` rows per transaction
    IngestPhase single;   // one row per transaction
    double ratio = 0;     // batched.rows_per_s / single.rows_per_s
};

// Runs the reference phase, then the batched phase, each on a fresh file at the same path opened the way the
// RunStore opens thinwire.db (WAL, synchronous=NORMAL), with one run holding the rows. Records look like a
// DiLoCo run's: per node and step the dotted train.* metrics, val.loss and round.* every few steps, increasing
// steps and clocks. Fails on a bad option, an existing db_path or any write error; removes the files in all cases.
Result<IngestBenchResult> bench_ingest(const IngestBenchOptions& options);

// Intended usage:
//   IngestBenchOptions o;  o.rows = 200'000;
//   auto r = bench_ingest(o);  if (!r) return r.status();
//   std::printf("%.0f rows/s batched, %.1fx one row per transaction\n", r->batched.rows_per_s, r->ratio);

}  // namespace tw
