// thinwire CLI entry point: wires the subcommands; the only place errors become exit codes.
#include <CLI/CLI.hpp>

#include <malloc.h>
#include <sys/resource.h>

#include <cstdio>

#include "app/commands.h"
#include "app/engine_node.h"

// glibc serves large tensors with mmap and trims the heap eagerly, so every training step (and
// every outer round's wire buffers) returned its memory to the OS and faulted it in again:
// ~850k minor page faults in 25 tiny-preset steps. Keeping freed memory in the heap made
// `bench train` on tiny ~1.46× faster (README "Performance").
void keep_freed_memory() {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's ceiling for this setting on 64-bit
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

// A node listening on TCP holds one descriptor per connection, and ZeroMQ accepts before any
// handshake: under the common soft limit of 1,024 descriptors, ~1,100 idle connections from anyone
// would keep its coordinator out. The soft limit goes up to the hard one (often 524,288), which
// an unprivileged process may do; with the handshake deadline (remote/node_server.cpp) an idle
// connection then costs a descriptor for seconds, out of hundreds of thousands.
void raise_descriptor_limit() {
    rlimit r{};
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &r);
    }
}

int main(int argc, char** argv) {
    keep_freed_memory();
    raise_descriptor_limit();
    CLI::App app{"thinwire — pre-training language models over thin wires (see docs/ in the source tree)"};
    app.require_subcommand(1);
    tw::cli::Globals g;
    app.set_version_flag("--version", std::string("thinwire ") + tw::cli::thinwire_version());
    // --db before or after the subcommand (`thinwire runs list --db X`): subcommands added below
    // inherit fallthrough, so an option they do not know is matched against this app's.
    app.fallthrough();
    app.add_option("--db", g.db_path, "SQLite run store (read-only commands never create it)")->capture_default_str();
    const tw::cli::Command commands[] = {tw::cli::add_train(app, g), tw::cli::add_data(app, g),
                                         tw::cli::add_runs(app, g), tw::cli::add_bench(app, g),
                                         tw::cli::add_run(app, g), tw::cli::add_sweep(app, g), tw::cli::add_node(app, g), tw::cli::add_relay(app, g), tw::cli::add_keys(app, g),
                                         tw::cli::add_skippipe(app, g),
                                         tw::cli::add_report(app, g), tw::cli::add_plan(app, g),
                                         tw::cli::add_hdee(app, g), tw::cli::add_export(app, g),
                                         tw::cli::add_sample(app, g), tw::cli::add_eval(app, g)};
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
