// Subcommands of the `thinwire` CLI. Each registers a subcommand with its options on the CLI11 app
// and returns the function to run when it is chosen; main() turns errors into one line + exit 1.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace CLI { class App; }

namespace tw::cli {

struct Globals {
    std::string db_path = "thinwire.db";  // --db
};

// What the commands that read a layout file take (run, plan, data prepare): the file, its --set
// overrides in the order given, and the --variant names kept (empty: every [variants] entry).
struct LayoutArgs {
    std::string file;
    std::vector<std::string> sets;
    std::vector<std::string> variants;
};

using Action = std::function<int()>;
using Command = std::pair<CLI::App*, Action>;

Command add_train(CLI::App& app, const Globals& g);
Command add_data(CLI::App& app, const Globals& g);
Command add_runs(CLI::App& app, const Globals& g);
Command add_bench(CLI::App& app, const Globals& g);
Command add_run(CLI::App& app, const Globals& g);
// `thinwire run FILE --set ...` as a function: `train` hands runs with replicas to it. "" = the default.
// `sweep` = true (`thinwire sweep`) requires a [sweep] table. `data_root` is `--data-root` ("" = the
// working directory): the layout's paths must lie under it (core/data_root.h). `variants` (--variant)
// keeps only those [variants] of the file. A run whose config is refused, or that fails, is reported
// and the others still run; the exit status is then non-zero, after a table of what failed and why.
int run_layout(const Globals& g, const std::string& file, const std::vector<std::string>& sets, bool sweep = false,
               const std::string& data_root = "", const std::vector<std::string>& variants = {});
Command add_sweep(CLI::App& app, const Globals& g);
Command add_node(CLI::App& app, const Globals& g);
Command add_relay(CLI::App& app, const Globals& g);     // app/cmd_relay.cpp
Command add_keys(CLI::App& app, const Globals& g);      // app/cmd_keys.cpp
Command add_skippipe(CLI::App& app, const Globals& g);  // app/cmd_skippipe.cpp
Command add_hdee(CLI::App& app, const Globals& g);      // app/cmd_hdee.cpp
Command add_report(CLI::App& app, const Globals& g);    // app/cmd_report.cpp
Command add_plan(CLI::App& app, const Globals& g);      // app/cmd_plan.cpp
Command add_export(CLI::App& app, const Globals& g);    // app/cmd_export.cpp
Command add_sample(CLI::App& app, const Globals& g);    // app/cmd_sample.cpp
Command add_eval(CLI::App& app, const Globals& g);      // app/cmd_eval.cpp
// Subcommands of `bench` in files of their own: each adds itself under `bench` and returns its action.
Command add_bench_ingest(CLI::App& bench, const Globals& g);
Command add_bench_transport(CLI::App& bench);         // `bench transport`
Command add_bench_outer(CLI::App& bench);             // `bench outer`
Command add_bench_codec(CLI::App& bench);             // `bench codec`
Command add_bench_subspace(CLI::App& bench);          // `bench subspace`
Command add_bench_pipeline(CLI::App& bench);          // `bench pipeline`
Command add_bench_compute(CLI::App& bench);           // `bench compute` (app/cmd_bench_compute.cpp)

}  // namespace tw::cli
