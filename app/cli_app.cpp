// The CLI11 app both executables parse with; see cli_app.h.
#include "app/cli_app.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>

#include "app/version.h"

namespace tw::cli {

void setup_cli(CLI::App& app, Globals& g) {
    app.description("thinwire — pre-training language models over thin wires (see docs/ in the source tree)");
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("thinwire ") + thinwire_version());
    app.fallthrough();
    app.add_option("--db", g.db_path, "SQLite run store (read-only commands never create it)")->capture_default_str();
}

std::vector<Command> add_engine_free_commands(CLI::App& app, const Globals& g) {
    return {add_runs(app, g), add_report(app, g), add_keys(app, g), add_relay(app, g)};
}

int run_cli(CLI::App& app, const std::vector<Command>& commands, int argc, char** argv) {
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

}  // namespace tw::cli
