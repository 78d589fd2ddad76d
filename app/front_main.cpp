// `thinwire`, the executable users call. The commands that need no model — the run store's (runs,
// report), keys and the relay (cli_app.h) — run here, in a process that never loads LibTorch: a
// store query answers in milliseconds instead of after the ~0.5 CPU-s LibTorch's libraries take to
// load. Every other command, --help and --version included, is served by `thinwire-engine` from
// the same folder, exec'd in place with the same arguments: the same process id and command line,
// so whoever started it (a shell, a launcher, the workbench) signals and waits for the command
// itself.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "app/cli_app.h"
#include "app/process_limits.h"
#include "app/self_exe.h"

namespace {

// The subcommand argv names: its first word that is neither an option nor the value of --db; ""
// when an option comes first (--help, --version, one CLI11 should name).
std::string_view chosen_subcommand(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--db") {
            ++i;
            continue;
        }
        if (a.rfind("--db=", 0) == 0) continue;
        if (!a.empty() && a[0] == '-') return "";
        return a;
    }
    return "";
}

bool served_here(CLI::App& app, std::string_view name) {
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
        if (sub->get_name() == name) return true;
    return false;
}

// thinwire-engine beside this executable, exec'd with argv unchanged; returns only on failure.
int exec_engine(char** argv) {
    const auto engine = tw::cli::beside_this_executable("thinwire-engine");
    if (!engine) {
        std::fprintf(stderr, "thinwire: error: %s\n", engine.message().c_str());
        return 1;
    }
    execv(engine->c_str(), argv);
    std::fprintf(stderr, "thinwire: error: cannot start %s (%s); it is built beside thinwire and serves every "
                 "command but runs, report, keys and relay\n", engine->c_str(), std::strerror(errno));
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app;
    tw::cli::Globals g;
    tw::cli::setup_cli(app, g);
    const auto commands = tw::cli::add_engine_free_commands(app, g);
    if (!served_here(app, chosen_subcommand(argc, argv))) return exec_engine(argv);
    tw::cli::raise_descriptor_limit();
    return tw::cli::run_cli(app, commands, argc, argv);
}
