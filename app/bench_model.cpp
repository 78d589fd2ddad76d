// The training benchmarks' model; see bench_model.h.
#include "app/bench_model.h"

#include <CLI/CLI.hpp>

#include "core/config_io.h"

namespace tw::cli {

void add_bench_model_options(CLI::App& cmd, BenchModelArgs& a, const char* batch_what) {
    cmd.add_option("--preset", a.preset, "tiny | small | base | paper178m")->capture_default_str();
    cmd.add_option("--threads", a.threads, "compute (intra-op) threads")->capture_default_str()->check(CLI::Range(1, 256));
    cmd.add_option("--batch", a.batch, batch_what)->capture_default_str()->check(CLI::Range(1, 4096));
    cmd.add_option("--vocab", a.vocab, "vocabulary size")->capture_default_str()->check(CLI::Range(64, 65535));
}

RunConfig bench_model_config(const BenchModelArgs& a) {
    RunConfig cfg = unwrap(parse_config("", "<bench>", {"model.preset=\"" + a.preset + "\""}));
    cfg.model.vocab_size = a.vocab;
    cfg.run.threads = a.threads;
    cfg.train.batch_size = a.batch;
    return cfg;
}

}  // namespace tw::cli
