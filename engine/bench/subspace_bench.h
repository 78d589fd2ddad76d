// Cost of subspace-compressed pipeline boundaries (engine/pipeline/subspace.h, arXiv 2506.01260)
// next to the compute they sit between: encode + decode of one micro-batch's activations and
// gradient as a fraction of stage 0's forward + backward on the same micro-batch (target < 5%).
// `thinwire bench subspace` (app/cmd_bench_subspace.cpp) prints it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/status.h"

namespace tw {

struct SubspaceBenchConfig {
    ModelConfig model;                        // vocab_size resolved (> 0)
    int64_t n_stages = 2;                     // the model is split so; stage 0 is timed
    int64_t batch = 16;                       // B sequences of model.seq_len tokens per micro-batch
    std::vector<int64_t> ranks = {32, 16, 8, 4};  // k; each in 1..d_model (a dense k = 0 row is always added)
    int64_t runs = 3;                         // timed runs per cell; medians reported
    int threads = 1;                          // configure_compute_threads(threads) for the whole bench
    double min_time_s = 0.05;                 // a codec run repeats its round until this long and reports
                                              // the mean round (one round is well under a millisecond)
    uint64_t seed = 0;                        // model, ids, upstream gradient, U and T_fixed
};

struct SubspaceBenchRow {
    int64_t rank = 0;                 // k; 0 = dense fp32
    std::string dtype;                // "fp32" | "bf16" | "int8"
    double encode_ms = 0;             // median of encode_activations + encode_gradient
    double decode_ms = 0;             // median of decode_activations + decode_gradient
    double codec_ms = 0;              // median of the four together (one round)
    double stage_ms = 0;              // median stage 0 forward + backward (same for every row)
    double fraction = 0;              // codec_ms / stage_ms
    uint64_t forward_bytes = 0;       // payload per micro-batch, stage s → s+1
    uint64_t backward_bytes = 0;      // payload per micro-batch, stage s+1 → s
    uint64_t dense_bytes = 0;         // B·T·d·4, each direction without compression
};

struct SubspaceBenchResult {
    std::string threads;              // what configure_compute_threads set
    int64_t B = 0, T = 0, d = 0, stage_layers = 0;
    int64_t stage_params = 0;
    double stage_ms = 0;              // median stage 0 forward + backward
    std::vector<SubspaceBenchRow> rows;  // dense first, then each rank × fp32, bf16, int8
};

// Builds stage 0 of the model split into cfg.n_stages, times its forward + backward (random ids,
// random upstream gradient of the output's shape), then each (rank, dtype)'s four codec calls on
// that output and gradient; `on_row` sees each row as it finishes. An error names a bad rank or
// split before anything runs.
Result<SubspaceBenchResult> bench_subspace(const SubspaceBenchConfig& cfg,
                                           const std::function<void(const SubspaceBenchRow&)>& on_row = {});

}  // namespace tw
