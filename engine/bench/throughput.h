// Benchmarks measured against this machine's own numbers: sgemm throughput (the MFU denominator)
// and training throughput of a preset on random tokens.
#pragma once

#include <cstdint>
#include <string>

#include "core/config.h"

namespace tw {

// Achieved GFLOP/s of an n×n fp32 matmul loop with the current torch thread count (best of reps).
double measure_sgemm_gflops(int64_t n = 1024, int reps = 20);

struct TrainBenchResult {
    std::string preset;
    int64_t params = 0;
    int64_t threads = 0;
    double tokens_per_s = 0;   // from the median step time
    double step_ms = 0;        // median
    double forward_ms = 0, backward_ms = 0, optim_ms = 0;  // mean per step
    double model_gflops = 0;   // achieved training FLOP/s ÷ 1e9 (train_flops_per_token × tokens/s)
    double sgemm_gflops = 0;   // this machine's 1024² sgemm
    double mfu = 0;            // model_gflops / sgemm_gflops
    double final_loss = 0;
};

// Trains `cfg` (vocab_size must be set) for `warmup` untimed + `steps` timed steps on random tokens.
TrainBenchResult bench_train(const RunConfig& cfg, int64_t steps, int64_t warmup);

}  // namespace tw
