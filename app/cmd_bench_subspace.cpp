// `thinwire bench subspace`: subspace-compressed pipeline boundaries (arXiv 2506.01260) — encode +
// decode of one micro-batch's activations and gradient against stage 0's forward + backward.
// Wiring and printing only; the measuring lives in engine/bench/subspace_bench.*.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "app/commands.h"
#include "app/list_option.h"
#include "core/config_io.h"
#include "core/status.h"
#include "engine/bench/subspace_bench.h"

namespace tw::cli {
namespace {

struct SubspaceArgs {
    std::string preset = "tiny";
    int64_t batch = 16, runs = 3, stages = 2, threads = 1, vocab = 4096;
    std::vector<int64_t> ranks = {32, 16, 8, 4};
    bool json = false;
};

int run_subspace_bench(const SubspaceArgs& a) {
    RunConfig rc = unwrap(parse_config("", "<bench>", {"model.preset=\"" + a.preset + "\""}));
    SubspaceBenchConfig cfg;
    cfg.model = rc.model;
    cfg.model.vocab_size = a.vocab;
    cfg.n_stages = a.stages;
    cfg.batch = a.batch;
    cfg.ranks = a.ranks;
    cfg.runs = a.runs;
    cfg.threads = static_cast<int>(a.threads);
    cfg.seed = static_cast<uint64_t>(rc.run.seed);
    if (!a.json) {
        std::printf("preset %s: stage 0 of %lld, micro-batch %lld × %lld tokens, d_model %lld, vocab %lld\n",
                    a.preset.c_str(), (long long)a.stages, (long long)a.batch, (long long)cfg.model.seq_len,
                    (long long)cfg.model.d_model, (long long)a.vocab);
    }
    bool header = false;
    auto on_row = [&](const SubspaceBenchRow& r) {
        if (a.json) {
            std::printf("{\"bench\":\"subspace\",\"preset\":\"%s\",\"rank\":%lld,\"dtype\":\"%s\",\"encode_ms\":%.4f,"
                        "\"decode_ms\":%.4f,\"codec_ms\":%.4f,\"stage_ms\":%.3f,\"fraction\":%.5f,"
                        "\"forward_bytes\":%llu,\"backward_bytes\":%llu,\"dense_bytes\":%llu}\n",
                        a.preset.c_str(), (long long)r.rank, r.dtype.c_str(), r.encode_ms, r.decode_ms, r.codec_ms,
                        r.stage_ms, r.fraction, (unsigned long long)r.forward_bytes,
                        (unsigned long long)r.backward_bytes, (unsigned long long)r.dense_bytes);
        } else {
            if (!header) {
                std::printf("stage 0 forward + backward: %.2f ms (median of %lld)\n\n", r.stage_ms, (long long)a.runs);
                std::printf("%5s %-5s %9s %9s %11s %9s %9s %11s %11s %9s\n", "rank", "dtype", "enc ms", "dec ms",
                            "enc+dec ms", "stage ms", "fraction", "fwd bytes", "bwd bytes", "vs dense");
                header = true;
            }
            const double dense = static_cast<double>(2 * r.dense_bytes);
            std::printf("%5s %-5s %9.3f %9.3f %11.3f %9.2f %8.2f%% %11llu %11llu %8.1f%%\n",
                        r.rank == 0 ? "dense" : std::to_string(r.rank).c_str(), r.dtype.c_str(), r.encode_ms,
                        r.decode_ms, r.codec_ms, r.stage_ms, 100 * r.fraction, (unsigned long long)r.forward_bytes,
                        (unsigned long long)r.backward_bytes,
                        100 * static_cast<double>(r.forward_bytes + r.backward_bytes) / dense);
        }
    };
    SubspaceBenchResult res = unwrap(bench_subspace(cfg, on_row));
    if (!a.json)
        std::printf("\n%s; stage 0 = %lld layers, %lld parameters. enc/dec = encode/decode of the activations and "
                    "the gradient (both ends of one boundary, medians of %lld runs); vs dense = (fwd + bwd bytes) / "
                    "(2 × B·T·d·4)\n",
                    res.threads.c_str(), (long long)res.stage_layers, (long long)res.stage_params, (long long)a.runs);
    return 0;
}

}  // namespace

Command add_bench_subspace(CLI::App& bench) {
    auto* cmd = bench.add_subcommand(
        "subspace", "Subspace-compressed pipeline boundary encode+decode vs a stage's forward+backward");
    auto a = std::make_shared<SubspaceArgs>();
    cmd->add_option("--preset", a->preset, "tiny | small | base | paper178m")->capture_default_str();
    cmd->add_option("--batch", a->batch, "sequences per micro-batch")->capture_default_str();
    add_list_option(*cmd, "--ranks", a->ranks, "subspace ranks k (each ≤ d_model)");
    cmd->add_option("--runs", a->runs, "timed runs per cell (median)")->capture_default_str();
    cmd->add_option("--stages", a->stages, "pipeline stages the model is split into; stage 0 is timed")
        ->capture_default_str();
    cmd->add_option("--threads", a->threads, "compute threads (run.threads)")->capture_default_str();
    cmd->add_option("--vocab", a->vocab, "vocabulary size")->capture_default_str();
    cmd->add_flag("--json", a->json, "one JSON line per row");
    return {cmd, [a] { return run_subspace_bench(*a); }};
}

}  // namespace tw::cli
