// Metric ingestion benchmark: realistic metric streams written through RunStore::add_metrics, timed per call.
#include "storage/bench/ingest_bench.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "core/metric_names.h"
#include "storage/run_store.h"

namespace tw {
namespace {

namespace fs = std::filesystem;

// What a trainer reports per step (engine/train), plus validation and DiLoCo rounds every few steps.
const char* const kPerStep[] = {metric::kTrainLoss,   metric::kTrainLr,        metric::kTrainGradNorm,
                                metric::kTrainTokens, metric::kTrainComputeS, metric::kTrainTokensPerS};
constexpr int64_t kEvalEvery = 10;   // val.loss every 10 steps
constexpr int64_t kRoundEvery = 50;  // round.bytes and round.comm_s every 50 inner steps (DiLoCo H = 50)

// splitmix64: deterministic noise for the values, so every run of the bench writes the same bytes.
double noise(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return static_cast<double>(x >> 11) * 0x1.0p-53;  // [0, 1)
}

// One node's metric stream: the records its trainer would hand to its MetricBuffer, step after step.
class NodeStream {
  public:
    NodeStream(std::string node, uint64_t seed) : node_(std::move(node)), seed_(seed) { start_step(); }

    // Overwrites `r` with the next record (reusing its string buffers).
    void next(MetricRecord& r) {
        const std::string& name = names_[index_];
        const double u = noise(seed_ ^ (static_cast<uint64_t>(step_) << 8) ^ index_);
        r.node.assign(node_);
        r.name.assign(name);
        r.step = step_;
        r.outer_step = step_ / kRoundEvery;
        r.wall_s = 0.29 * static_cast<double>(step_) + 0.01 * u;
        r.sim_s = r.wall_s + 0.09 * static_cast<double>(r.outer_step);
        const double loss = 2.0 + 6.0 * std::exp(-static_cast<double>(step_) / 4000.0);
        if (name == metric::kTrainLoss || name == metric::kValLoss) r.value = loss + 0.1 * (u - 0.5);
        else if (name == metric::kTrainLr) r.value = 3e-4 * std::min(1.0, static_cast<double>(step_) / 200.0);
        else if (name == metric::kTrainTokens) r.value = 2048.0 * static_cast<double>(step_);
        else if (name == metric::kRoundBytes) r.value = 15'939'072.0;
        else r.value = u * 10.0;
        if (++index_ == names_.size()) {
            ++step_;
            start_step();
        }
    }

  private:
    void start_step() {
        index_ = 0;
        names_.assign(std::begin(kPerStep), std::end(kPerStep));
        if (step_ % kEvalEvery == 0) names_.emplace_back(metric::kValLoss);
        if (step_ % kRoundEvery == 0) {
            names_.emplace_back(metric::kRoundBytes);
            names_.emplace_back(metric::kRoundCommS);
        }
    }

    std::string node_;
    uint64_t seed_;
    int64_t step_ = 1;
    size_t index_ = 0;                // next name of this step
    std::vector<std::string> names_;  // the metrics this step reports
};

// Removes the database file and its WAL and shared-memory companions when it goes out of scope.
class DbFiles {
  public:
    explicit DbFiles(std::string path) : path_(std::move(path)) {}
    ~DbFiles() { remove(); }
    DbFiles(const DbFiles&) = delete;
    DbFiles& operator=(const DbFiles&) = delete;
    void remove() {
        std::error_code ec;  // a missing file is fine
        for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path_ + suffix, ec);
    }
    int64_t bytes() const {
        int64_t total = 0;
        for (const char* suffix : {"", "-wal"}) {
            std::error_code ec;
            const auto n = fs::file_size(path_ + suffix, ec);
            if (!ec) total += static_cast<int64_t>(n);
        }
        return total;
    }

  private:
    std::string path_;
};

// CPU seconds used by the calling thread so far (SQLite does all its work in the caller's thread).
double thread_cpu_s() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// A path for a new file in the temp directory (created by mkstemp so the name is ours, then emptied).
Result<std::string> temp_db_path() {
    std::error_code ec;
    const fs::path dir = fs::temp_directory_path(ec);
    if (ec) return Result<std::string>::error("no temp directory for the ingest benchmark: " + ec.message());
    std::string path = (dir / "thinwire-ingest-XXXXXX").string();
    const int fd = mkstemp(path.data());
    if (fd < 0) return Result<std::string>::error("cannot create a temp file in " + dir.string());
    close(fd);
    fs::remove(path, ec);  // SQLite creates it again; the files go away with DbFiles in any case
    return path;
}

// Writes `rows` rows in add_metrics calls of `batch` rows each, round-robin over the nodes' streams, into a new
// run of a fresh file at `path`, and times the calls.
Result<IngestPhase> run_phase(const std::string& path, int64_t rows, size_t batch, int64_t nodes) {
    DbFiles files(path);
    IngestPhase phase;
    auto store = RunStore::open(path);
    if (!store) return store.status();
    auto run = store->create_run("ingest-bench", "bench", "", "", 0);
    if (!run) return run.status();
    std::vector<NodeStream> streams;
    for (int64_t n = 0; n < nodes; ++n) streams.emplace_back("replica-" + std::to_string(n), 1000 + n);
    std::vector<MetricRecord> records;
    using Clock = std::chrono::steady_clock;
    Clock::duration spent{};
    double cpu_s = 0;
    while (phase.rows < rows) {
        const size_t n = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(batch), rows - phase.rows));
        records.resize(n);
        NodeStream& stream = streams[static_cast<size_t>(phase.transactions % nodes)];
        for (MetricRecord& r : records) stream.next(r);
        const double c0 = thread_cpu_s();
        const auto t0 = Clock::now();
        Status s = store->add_metrics(*run, records);
        spent += Clock::now() - t0;
        cpu_s += thread_cpu_s() - c0;
        if (!s) return Result<IngestPhase>::error("ingest benchmark: " + s.message());
        phase.rows += static_cast<int64_t>(n);
        ++phase.transactions;
    }
    phase.seconds = std::chrono::duration<double>(spent).count();
    phase.rows_per_s = phase.seconds > 0 ? static_cast<double>(phase.rows) / phase.seconds : 0;
    phase.cpu_seconds = cpu_s;
    phase.rows_per_cpu_s = cpu_s > 0 ? static_cast<double>(phase.rows) / cpu_s : 0;
    phase.file_bytes = files.bytes();
    return phase;
}

}  // namespace

Result<IngestBenchResult> bench_ingest(const IngestBenchOptions& options) {
    if (options.rows < 1 || options.single_rows < 1 || options.batch < 1 || options.nodes < 1) {
        return Result<IngestBenchResult>::error("ingest benchmark: rows, single_rows, batch and nodes must be >= 1");
    }
    IngestBenchResult result;
    if (options.db_path.empty()) {
        auto path = temp_db_path();
        if (!path) return path.status();
        result.db_path = *path;
    } else {
        std::error_code ec;
        if (fs::exists(options.db_path, ec)) {
            return Result<IngestBenchResult>::error("ingest benchmark writes a fresh file and deletes it afterwards; " +
                                                    options.db_path + " exists already");
        }
        result.db_path = options.db_path;
    }
    auto single = run_phase(result.db_path, options.single_rows, 1, options.nodes);
    if (!single) return single.status();
    result.single = *single;
    auto batched = run_phase(result.db_path, options.rows, options.batch, options.nodes);
    if (!batched) return batched.status();
    result.batched = *batched;
    result.ratio = result.single.rows_per_s > 0 ? result.batched.rows_per_s / result.single.rows_per_s : 0;
    return result;
}

}  // namespace tw
