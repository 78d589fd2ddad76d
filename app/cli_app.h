// The CLI11 app both executables parse with: `thinwire` (front_main.cpp) and `thinwire-engine`
// (main.cpp). Not thread-safe; used once, from main().
#pragma once

#include <vector>

#include "app/commands.h"

namespace tw::cli {

// `thinwire`'s description, --db (before or after the subcommand: subcommands inherit
// fallthrough), --version; a subcommand must be chosen.
void setup_cli(CLI::App& app, Globals& g);

// The commands that need no model — the run store's (runs, report), keys and the relay — in this
// order. `thinwire` serves them without loading LibTorch; thinwire-engine has them too.
std::vector<Command> add_engine_free_commands(CLI::App& app, const Globals& g);

// Parses argv and runs the chosen command: a parse error or --help as CLI11 reports them, an
// exception as one line "thinwire: error: ..." and exit status 1.
int run_cli(CLI::App& app, const std::vector<Command>& commands, int argc, char** argv);

}  // namespace tw::cli
