// Encode + decode throughput of the outer-sync codecs (engine/codec/codec.h) on one core, in GB/s
// of fp32 input, next to memcpy of the same bytes. The PyTorch reference of the SparseLoCo codec
// runs in a child process; `thinwire bench codec` (app/cmd_bench_codec.cpp) adds its figures.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tw {

struct CodecBenchConfig {
    std::vector<std::pair<int64_t, int64_t>> shapes = {{1024, 1024}, {2048, 2048}, {4096, 4096}, {8192, 8192}};
    std::vector<int64_t> sparse_k = {64, 128};  // SparseLoCo rows: k per 64×64 tile
    int64_t reps = 3;          // timed repetitions per cell (at least; see min_time_s); medians reported
    int64_t warmup = 1;        // untimed repetitions first (at least; see min_time_s)
    double min_time_s = 0.25;  // warm-up and timing each run until this much time has passed too:
                               // small cells need ~10 rounds before glibc's heap stops growing
    uint64_t seed = 0;         // the input is N(0, 1) from this seed
};

struct CodecBenchRow {
    std::string codec;  // "memcpy", "fp32", "bf16", "int8", "fp4", "sparseloco k=64", ...
    int64_t rows = 0, cols = 0;
    int64_t numel = 0;
    uint64_t wire_bytes = 0;  // encoded size (memcpy: the fp32 bytes)
    double encode_s = 0;      // median encode (memcpy: the copy)
    double decode_s = 0;      // median decode into a fresh dense tensor (memcpy: 0)
    double total_s = 0;       // median of encode + decode of the same repetition
    double gbps() const { return total_s > 0 ? 4.0 * static_cast<double>(numel) / total_s / 1e9 : 0; }
};

// Runs every shape × (memcpy, fp32, bf16, int8, fp4, sparseloco at each k) with
// torch::set_num_threads(1), calling `on_row` as each cell finishes. Encode appends into a reused
// buffer (capacity kept, as a trainer's would be); decode allocates its tensor, as Codec::decode does.
std::vector<CodecBenchRow> bench_codecs(const CodecBenchConfig& cfg,
                                        const std::function<void(const CodecBenchRow&)>& on_row = {});

}  // namespace tw
