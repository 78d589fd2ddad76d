// `thinwire train [FILE] [--set k=v]... [--data-root DIR]`: the file (the built-in default without
// one: experiments/default.toml) as a run through the coordinator, exactly as `thinwire run` runs
// every layout. Without an outer algorithm that is a one-node run on a thread of this process,
// with checkpoints and resume (train.ckpt_path, train.resume); with replicas, all of them.
#include <CLI/CLI.hpp>
#include <memory>

#include "app/commands.h"

namespace tw::cli {
namespace {

struct TrainArgs {
    std::string file;
    std::vector<std::string> sets;
    std::string data_root;
};

}  // namespace

Command add_train(CLI::App& app, const Globals& g) {
    auto* sub = app.add_subcommand("train", "Train one model on one node (the built-in default without FILE)");
    auto args = std::make_shared<TrainArgs>();
    sub->add_option("file", args->file, "TOML run file (omit for the built-in default: tiny model on Brown)");
    sub->add_option("--set", args->sets, "Override a key, e.g. --set model.d_model=128 (repeatable)");
    sub->add_option("--data-root", args->data_root,
                    "the folder the run reads and writes (data, cache, checkpoints); default $XDG_CACHE_HOME/thinwire or ~/.cache/thinwire");
    return {sub, [&g, args] { return run_layout(g, args->file, args->sets, false, args->data_root); }};
}

}  // namespace tw::cli
