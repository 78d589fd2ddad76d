// `thinwire bench ingest`: metric rows/s into SQLite, batched the way a run writes vs one row per transaction.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "app/commands.h"
#include "core/output_file.h"
#include "storage/bench/ingest_bench.h"

namespace tw::cli {
namespace {

void print_phase(const char* label, const IngestPhase& p) {
    std::printf("  %-24s %8lld rows in %6lld transactions, %7.3f s: %8.0f rows/s  (CPU %6.3f s: %8.0f rows/CPU-s)\n",
                label, (long long)p.rows, (long long)p.transactions, p.seconds, p.rows_per_s, p.cpu_seconds,
                p.rows_per_cpu_s);
}

int run_ingest(const IngestBenchOptions& o) {
    std::printf("metric ingestion into a fresh SQLite file (WAL, synchronous=NORMAL), %lld nodes, batch %zu\n",
                (long long)o.nodes, o.batch);
    IngestBenchResult r = unwrap(bench_ingest(o));
    std::printf("  file %s (removed)\n", r.db_path.c_str());
    const std::string batched = std::to_string(o.batch) + " rows per transaction";
    print_phase(batched.c_str(), r.batched);
    print_phase("1 row per transaction", r.single);
    std::printf("  batched / one per transaction: %.1fx\n", r.ratio);
    std::printf("  %.1f bytes per row on disk (database + WAL, %.1f MB for %lld rows)\n",
                static_cast<double>(r.batched.file_bytes) / static_cast<double>(r.batched.rows),
                static_cast<double>(r.batched.file_bytes) / 1e6, (long long)r.batched.rows);
    return 0;
}

}  // namespace

Command add_bench_ingest(CLI::App& bench, const Globals& g) {
    auto* sub = bench.add_subcommand("ingest", "Metric rows/s written to SQLite: batched vs one row per transaction");
    auto o = std::make_shared<IngestBenchOptions>();
    sub->add_option("--rows", o->rows, "rows written in batches")
        ->capture_default_str()
        ->check(CLI::Range(int64_t{1}, int64_t{1'000'000'000}));
    sub->add_option("--batch", o->batch, "rows per transaction (MetricBuffer's batch by default)")
        ->capture_default_str()
        ->check(CLI::Range(size_t{1}, size_t{10'000'000}));
    sub->add_option("--single-rows", o->single_rows, "rows of the one-row-per-transaction reference")
        ->capture_default_str()
        ->check(CLI::Range(int64_t{1}, int64_t{100'000'000}));
    sub->add_option("--nodes", o->nodes, "writing nodes")->capture_default_str()->check(CLI::Range(1, 1024));
    sub->add_option("--db", o->db_path,
                    "file to write (must not exist; deleted afterwards). Default: a new file in the temp dir; "
                    "the run store is never touched");
    return {sub, [o, &g] {
                // Its file must not exist, but a -journal the store has not made yet does not: never the store's.
                check(check_output_target(o->db_path, g.db_path));
                return run_ingest(*o);
            }};
}

}  // namespace tw::cli
