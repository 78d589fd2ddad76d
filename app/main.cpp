// `thinwire-engine`: every subcommand of the CLI, the ones that train, evaluate, plan or serve a
// node among them; `thinwire` (front_main.cpp) hands it every command it does not serve itself.
// Wires the subcommands; run_cli (cli_app.h) is where errors become exit codes.
#include <CLI/CLI.hpp>

#include <malloc.h>

#include "app/cli_app.h"
#include "app/commands.h"
#include "app/engine_node.h"
#include "app/process_limits.h"

// glibc serves large tensors with mmap and trims the heap eagerly, so every training step (and
// every outer round's wire buffers) returned its memory to the OS and faulted it in again:
// ~850k minor page faults in 25 tiny-preset steps. Keeping freed memory in the heap made
// `bench train` on tiny ~1.46× faster (README "Performance").
void keep_freed_memory() {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's ceiling for this setting on 64-bit
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

int main(int argc, char** argv) {
    keep_freed_memory();
    tw::cli::raise_descriptor_limit();
    CLI::App app;
    tw::cli::Globals g;
    tw::cli::setup_cli(app, g);
    std::vector<tw::cli::Command> commands = tw::cli::add_engine_free_commands(app, g);
    for (auto add : {tw::cli::add_train, tw::cli::add_data, tw::cli::add_bench, tw::cli::add_run, tw::cli::add_sweep,
                     tw::cli::add_node, tw::cli::add_skippipe, tw::cli::add_plan, tw::cli::add_hdee, tw::cli::add_export,
                     tw::cli::add_sample, tw::cli::add_eval})
        commands.push_back(add(app, g));
    return tw::cli::run_cli(app, commands, argc, argv);
}
