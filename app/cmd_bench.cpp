// `thinwire bench train --preset tiny|small`: training throughput and MFU against this machine's sgemm.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <vector>

#include "app/bench_model.h"
#include "app/commands.h"
#include "engine/bench/throughput.h"

namespace tw::cli {
namespace {

struct BenchArgs : BenchModelArgs {
    int64_t steps = 30, warmup = 5;
    bool json = false;
};

int run_bench(const BenchArgs& a) {
    RunConfig cfg = bench_model_config(a);
    TrainBenchResult r = bench_train(cfg, a.steps, a.warmup);
    if (a.json) {
        std::printf("{\"impl\":\"thinwire\",\"preset\":\"%s\",\"params\":%lld,\"threads\":%lld,\"tokens_per_s\":%.1f,"
                    "\"step_ms\":%.2f,\"forward_ms\":%.2f,\"backward_ms\":%.2f,\"optim_ms\":%.2f,\"model_gflops\":%.2f,\"sgemm_gflops\":%.2f,\"mfu\":%.4f,\"final_loss\":%.4f}\n",
                    r.preset.c_str(), (long long)r.params, (long long)r.threads, r.tokens_per_s, r.step_ms,
                    r.forward_ms, r.backward_ms, r.optim_ms, r.model_gflops, r.sgemm_gflops, r.mfu, r.final_loss);
    } else {
        std::printf("preset %s: %lld parameters, batch %lld × %lld, %lld threads\n", r.preset.c_str(),
                    (long long)r.params, (long long)a.batch, (long long)cfg.model.seq_len, (long long)r.threads);
        std::printf("  %.0f tokens/s (%.1f ms/step: forward %.1f, backward %.1f, optimizer %.1f)\n  %.2f GFLOP/s of training vs %.2f GFLOP/s 1024² sgemm: MFU %.1f%%\n",
                    r.tokens_per_s, r.step_ms, r.forward_ms, r.backward_ms, r.optim_ms, r.model_gflops, r.sgemm_gflops,
                    100 * r.mfu);
    }
    return 0;
}

}  // namespace

Command add_bench(CLI::App& app, const Globals& g) {
    auto* sub = app.add_subcommand("bench", "Benchmarks that print measured figures");
    sub->require_subcommand(1);
    auto* train = sub->add_subcommand("train", "Training tokens/s and MFU of a preset on random tokens");
    auto args = std::make_shared<BenchArgs>();
    add_bench_model_options(*train, *args, "sequences per step");
    train->add_option("--steps", args->steps, "timed steps")->capture_default_str();
    train->add_option("--warmup", args->warmup, "untimed steps first")->capture_default_str();
    train->add_flag("--json", args->json, "one JSON line (for tests/bench/compare_train.sh)");
    std::vector<Command> more;  // bench subcommands defined in files of their own, one line each
    more.push_back(add_bench_ingest(*sub, g));
    more.push_back(add_bench_codec(*sub));
    more.push_back(add_bench_subspace(*sub));
    more.push_back(add_bench_pipeline(*sub));
    more.push_back(add_bench_transport(*sub));
    more.push_back(add_bench_outer(*sub));
    more.push_back(add_bench_compute(*sub));
    return {sub, [args, more] {
                // Line-buffered: a script or `tee` reading a benchmark sees each row as it is measured.
                std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
                for (auto& [cmd, action] : more)
                    if (cmd->parsed()) return action();
                return run_bench(*args);
            }};
}

}  // namespace tw::cli
