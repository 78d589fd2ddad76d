// sgemm probe and the training-throughput benchmark.
#include "engine/bench/throughput.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>

#include "engine/model/llama.h"
#include "engine/train/trainer.h"

namespace tw {
namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

double measure_sgemm_gflops(int64_t n, int reps) {
    torch::NoGradGuard no_grad;
    auto a = torch::randn({n, n}), b = torch::randn({n, n}), c = torch::empty({n, n});
    torch::mm_out(c, a, b);  // warm-up
    double best = 1e30;
    for (int i = 0; i < reps; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        torch::mm_out(c, a, b);
        best = std::min(best, seconds_since(t0));
    }
    return 2.0 * static_cast<double>(n * n * n) / best / 1e9;
}

TrainBenchResult bench_train(const RunConfig& cfg_in, int64_t steps, int64_t warmup) {
    RunConfig cfg = cfg_in;
    cfg.train.steps = steps + warmup;
    cfg.train.warmup_steps = std::min<int64_t>(cfg.train.warmup_steps, cfg.train.steps);
    // Random tokens: throughput does not depend on the text.
    const int64_t T = cfg.model.seq_len, B = cfg.train.batch_size;
    const int64_t n_tokens = (steps + warmup + 1) * B * (T + 1) + 1;
    auto tokens = std::make_shared<std::vector<uint16_t>>(static_cast<size_t>(n_tokens));
    std::mt19937_64 rng(static_cast<uint64_t>(cfg.run.seed));
    for (auto& t : *tokens) t = static_cast<uint16_t>(rng() % static_cast<uint64_t>(cfg.model.vocab_size));
    std::vector<std::pair<int64_t, int64_t>> all = {{0, n_tokens}};
    Trainer trainer(cfg, WindowLoader(tokens, all, T, B, 1), WindowLoader(tokens, all, T, B, 2));

    TrainBenchResult r;
    r.preset = cfg.model.preset;
    r.params = trainer.model()->num_parameters();
    r.threads = cfg.run.threads;
    for (int64_t i = 0; i < warmup; ++i) trainer.step();
    std::vector<double> step_s;
    for (int64_t i = 0; i < steps; ++i) {
        StepReport s = trainer.step();
        step_s.push_back(s.compute_s);
        r.final_loss = s.loss;
        r.forward_ms += 1000.0 * s.forward_s / static_cast<double>(steps);
        r.backward_ms += 1000.0 * s.backward_s / static_cast<double>(steps);
        r.optim_ms += 1000.0 * s.optim_s / static_cast<double>(steps);
    }
    // Median step: robust to the bursts of a shared machine (the PyTorch reference does the same).
    std::nth_element(step_s.begin(), step_s.begin() + steps / 2, step_s.end());
    const double median_s = step_s[static_cast<size_t>(steps / 2)];
    r.step_ms = 1000.0 * median_s;
    r.tokens_per_s = static_cast<double>(B * T) / median_s;
    r.model_gflops = train_flops_per_token(cfg.model) * r.tokens_per_s / 1e9;
    r.sgemm_gflops = measure_sgemm_gflops();
    r.mfu = r.model_gflops / r.sgemm_gflops;
    return r;
}

}  // namespace tw
