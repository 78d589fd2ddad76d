// `thinwire bench outer`: a DiLoCo outer step's cost outside communication against one inner
// training step. Wiring and printing only; the measuring lives in engine/bench.
#include <CLI/CLI.hpp>
#include <zmq.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "app/bench_model.h"
#include "app/commands.h"
#include "app/list_option.h"
#include "engine/algo/state_hash.h"
#include "engine/bench/outer_bench.h"
#include "engine/bench/throughput.h"
#include "engine/model/llama.h"
#include "remote/zmq_collective.h"

namespace tw::cli {
namespace {

// ---- bench outer ----------------------------------------------------------------------------

struct OuterArgs : BenchModelArgs {
    std::vector<int> replicas = {1, 2, 4};
    std::vector<std::string> dtypes = {"fp32", "bf16"};
    int64_t rounds = 20, warmup = 2;
    int64_t inner_steps = 50;                   // H of the overhead / (H · inner step) column
    int64_t step_samples = 10, step_warmup = 3;  // the inner-step reference
    bool json = false;
};

// R replicas over a real ZmqCollective on inproc:// (one context, as `thinwire train` does).
OuterBenchResult outer_cell(const RunConfig& cfg, int R, const OuterBenchConfig& oc) {
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> endpoints;
    for (int r = 0; r < R; ++r)
        endpoints.push_back("inproc://bench-outer-" + oc.dtype + "-R" + std::to_string(R) + "-" + std::to_string(r));
    std::vector<std::unique_ptr<ZmqCollective>> colls;
    std::vector<Collective*> members;
    for (int r = 0; r < R; ++r) {
        colls.push_back(unwrap(ZmqCollective::create(ctx, endpoints, r)));
        members.push_back(colls.back().get());
    }
    return unwrap(bench_outer(cfg, members, oc));
}

void print_outer_row(const OuterBenchResult& r, double step_s, int64_t H, bool json) {
    const double ratio = r.overhead_s / step_s, ratio_h = r.overhead_s / (static_cast<double>(H) * step_s);
    if (json) {
        std::printf("{\"bench\":\"outer\",\"replicas\":%d,\"dtype\":\"%s\",\"params\":%lld,\"payload_bytes\":%llu,"
                    "\"samples\":%lld,\"encode_s\":%.6f,\"apply_s\":%.6f,\"overhead_s\":%.6f,\"comm_s\":%.6f,"
                    "\"inner_step_s\":%.6f,\"inner_steps\":%lld,\"overhead_per_step\":%.5f,\"overhead_per_round\":%.6f}\n",
                    r.replicas, r.dtype.c_str(), (long long)r.params, (unsigned long long)r.payload_bytes,
                    (long long)r.samples, r.encode_s, r.apply_s, r.overhead_s, r.comm_s, step_s, (long long)H, ratio, ratio_h);
        return;
    }
    std::printf("%2d %-5s %12llu %10.2f %9.2f %12.2f %9.2f %12.4f %14.5f\n", r.replicas, r.dtype.c_str(),
                (unsigned long long)r.payload_bytes, 1e3 * r.encode_s, 1e3 * r.apply_s, 1e3 * r.overhead_s,
                1e3 * r.comm_s, ratio, ratio_h);
}

int run_outer(const OuterArgs& a) {
    RunConfig cfg = bench_model_config(a);
    // The reference: one inner step of the same model, as `bench train` measures it (median).
    const TrainBenchResult inner = bench_train(cfg, a.step_samples, a.step_warmup);
    const double step_s = inner.step_ms / 1e3;
    if (!a.json) {
        std::printf("DiLoCo outer step outside communication, preset %s (%lld parameters), %lld timed rounds after %lld "
                    "warm-up, inproc ZmqCollective; medians over replicas x rounds, ms\n",
                    a.preset.c_str(), (long long)inner.params, (long long)a.rounds, (long long)a.warmup);
        std::printf("reference: one inner step, batch %lld x %lld, %lld threads: %.2f ms (median of %lld)\n\n",
                    (long long)a.batch, (long long)cfg.model.seq_len, (long long)a.threads, inner.step_ms,
                    (long long)a.step_samples);
    }
    // What round agreement adds per round (per step for DDP): one hash of the weights.
    {
        ModelConfig m = cfg.model;
        Llama model(m, static_cast<uint64_t>(cfg.run.seed));
        const auto params = model->parameters();
        std::vector<double> times;
        uint64_t sink = 0;
        for (int i = 0; i < 51; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            sink ^= state_hash(params, static_cast<uint64_t>(i));
            times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        std::nth_element(times.begin(), times.begin() + 25, times.end());
        const double hash_ms = times[25];
        if (a.json)
            std::printf("{\"bench\":\"state_hash\",\"params\":%lld,\"ms\":%.4f,\"ratio_inner_step\":%.6f}\n",
                        (long long)inner.params, hash_ms, hash_ms / inner.step_ms);
        else
            std::printf("round agreement: state hash of the weights %.3f ms (median of 51) = %.5f x one inner step "
                        "[%016llx]\n\n",
                        hash_ms, hash_ms / inner.step_ms, static_cast<unsigned long long>(sink));
    }
    if (!a.json)
        std::printf(" R dtype  bytes/peer  encode ms  apply ms  overhead ms   comm ms  ovh/step  ovh/(%lld steps)\n",
                    (long long)a.inner_steps);
    for (int R : a.replicas)
        for (const auto& dt : a.dtypes) {
            OuterBenchConfig oc;
            oc.rounds = a.rounds;
            oc.warmup_rounds = a.warmup;
            oc.dtype = dt;
            print_outer_row(outer_cell(cfg, R, oc), step_s, a.inner_steps, a.json);
        }
    return 0;
}

}  // namespace

Command add_bench_outer(CLI::App& bench) {
    auto* ou = bench.add_subcommand("outer", "DiLoCo outer-step overhead outside communication vs an inner step");
    auto oa = std::make_shared<OuterArgs>();
    add_bench_model_options(*ou, *oa, "sequences per inner step");
    add_list_option(*ou, "--replicas", oa->replicas, "replica counts, e.g. 1,2,4");
    add_list_option(*ou, "--dtypes", oa->dtypes, "fp32,bf16");
    ou->add_option("--rounds", oa->rounds, "timed outer rounds")->capture_default_str();
    ou->add_option("--warmup", oa->warmup, "untimed outer rounds first")->capture_default_str();
    ou->add_option("--inner-steps", oa->inner_steps, "H for the overhead / (H x inner step) column")->capture_default_str();
    ou->add_option("--step-samples", oa->step_samples, "timed inner steps for the reference")->capture_default_str();
    ou->add_flag("--json", oa->json, "one JSON line per (replicas, dtype)");
    return {ou, [oa] { return run_outer(*oa); }};
}

}  // namespace tw::cli
