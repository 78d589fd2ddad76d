// `thinwire bench compute`: the numbers behind the `cpu-here` hardware profile of the compute model
// (core/compute_model.h): this machine's fp32 sgemm rate, and a preset's measured training step
// against the FLOPs the model counts for it, so the pinned profile can be checked against the machine
// it runs on. Wiring and printing only; the measuring is engine/bench/throughput.h's.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "app/bench_model.h"
#include "app/commands.h"
#include "core/compute_model.h"
#include "engine/bench/throughput.h"
#include "engine/runtime/threads.h"

namespace tw::cli {
namespace {

struct ComputeArgs : BenchModelArgs {
    int64_t size = 1024, rounds = 5, reps = 20, steps = 20;
};

int run_compute_bench(const ComputeArgs& a) {
    RunConfig cfg = bench_model_config(a);
    configure_compute_threads(static_cast<int>(a.threads));
    // Several rounds, best kept: on a shared machine the best is the figure least disturbed by others.
    std::vector<double> gflops;
    for (int64_t i = 0; i < a.rounds; ++i) gflops.push_back(measure_sgemm_gflops(a.size, static_cast<int>(a.reps)));
    const double best = *std::max_element(gflops.begin(), gflops.end());
    std::printf("sgemm %lld² fp32, %lld threads, best of %lld repetitions per round:", (long long)a.size,
                (long long)a.threads, (long long)a.reps);
    for (double g : gflops) std::printf(" %.1f", g);
    std::printf(" GFLOP/s; best %.1f\n", best);

    const TrainBenchResult r = bench_train(cfg, a.steps, 5);
    const double flops = train_step_flops(cfg.model, cfg.train.batch_size * cfg.model.seq_len);
    const double achieved = flops / (r.step_ms / 1e3);
    std::printf("preset %s, batch %lld × %lld: median step %.1f ms of %lld; the compute model counts %.4g FLOPs "
                "per step: %.1f GFLOP/s, %.1f%% of the best sgemm\n",
                a.preset.c_str(), (long long)a.batch, (long long)cfg.model.seq_len, r.step_ms, (long long)a.steps,
                flops, achieved / 1e9, 100 * achieved / (best * 1e9));
    const HardwareProfile& here = *find_hardware("cpu-here");
    const double modelled_ms = 1e3 * flops / (here.peak_flops * here.efficiency);
    std::printf("profile cpu-here (pinned): %.1f GFLOP/s × efficiency %.2f → a modelled step of %.1f ms "
                "(measured / modelled: %.2f)\n",
                here.peak_flops / 1e9, here.efficiency, modelled_ms, r.step_ms / modelled_ms);
    return 0;
}

}  // namespace

Command add_bench_compute(CLI::App& bench) {
    auto* sub = bench.add_subcommand("compute", "This machine's sgemm rate and a preset's step against its counted "
                                                "FLOPs: the cpu-here profile of [compute] model = \"flops\"");
    auto a = std::make_shared<ComputeArgs>();
    add_bench_model_options(*sub, *a, "sequences per step");
    sub->add_option("--size", a->size, "sgemm side n (n×n times n×n)")->capture_default_str()->check(CLI::Range(16, 8192));
    sub->add_option("--rounds", a->rounds, "sgemm rounds")->capture_default_str()->check(CLI::Range(1, 1000));
    sub->add_option("--reps", a->reps, "sgemm repetitions per round (the fastest counts)")
        ->capture_default_str()
        ->check(CLI::Range(1, 10000));
    sub->add_option("--steps", a->steps, "timed training steps")->capture_default_str()->check(CLI::Range(1, 100000));
    return {sub, [a] { return run_compute_bench(*a); }};
}

}  // namespace tw::cli
