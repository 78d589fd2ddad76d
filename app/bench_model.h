// The model the training benchmarks step (`bench train`, `bench outer`, `bench compute`): a preset
// on random tokens with its vocabulary, batch and compute threads — one set of options and one way
// from them to a run config, so the three measure the same model for the same flags.
#pragma once

#include <cstdint>
#include <string>

#include "core/config.h"

namespace CLI {
class App;
}

namespace tw::cli {

struct BenchModelArgs {
    std::string preset = "tiny";
    int64_t vocab = 4096, batch = 16, threads = 2;
};

// Adds --preset, --threads, --batch (`batch_what` says what one batch is, e.g. "sequences per
// step") and --vocab to `cmd`, each showing its default and range-checked; `a` must outlive the
// parse.
void add_bench_model_options(CLI::App& cmd, BenchModelArgs& a, const char* batch_what);

// The preset's run config with model.vocab_size, train.batch_size and run.threads set from `a`.
// Throws tw::Error for an unknown preset (the commands' boundary reports it).
RunConfig bench_model_config(const BenchModelArgs& a);

}  // namespace tw::cli
