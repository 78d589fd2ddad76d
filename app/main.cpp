// thinwire CLI entry point: wires the subcommands; the only place errors become exit codes.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "app/commands.h"

int main(int argc, char** argv) {
    CLI::App app{"thinwire — pre-training language models over thin wires"};
    app.require_subcommand(1);
    tw::cli::Globals g;
    app.add_option("--db", g.db_path, "SQLite run store")->capture_default_str();
    const tw::cli::Command commands[] = {tw::cli::add_train(app, g), tw::cli::add_data(app, g),
                                         tw::cli::add_runs(app, g), tw::cli::add_bench(app, g),
                                         tw::cli::add_run(app, g), tw::cli::add_node(app, g)};
    CLI11_PARSE(app, argc, argv);
    try {
        for (auto& [sub, action] : commands)
            if (sub->parsed()) return action();
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "thinwire: error: %s\n", e.what());
        return 1;
    }
}
