// `thinwire run LAYOUT.toml [--set k=v]... [--variant NAME]...`: a run (or the layout's variants, one run each) on the
// cluster the layout names, through the coordinator; then a table per run and, for several
// variants or [report] networks, a comparison re-timed on each network.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <ctime>

#include "app/commands.h"
#include "app/engine_node.h"
#include "app/run_tables.h"
#include "app/self_exe.h"
#include "coordinator/resume_plan.h"
#include "coordinator/run_session.h"
#include "core/config_io.h"
#include "core/data_root.h"
#include "storage/run_store.h"
#include "core/run_kind.h"

namespace tw::cli {
namespace {

std::atomic<bool> g_interrupt{false};
extern "C" void on_interrupt(int) { g_interrupt = true; }

struct RunArgs : LayoutArgs {
    std::string data_root;
    int64_t resume = 0;  // --resume RUN
    bool force = false;  // --force: resume with a config that differs from the stored one
};

// Prints a finished session's tables as `run` does for each of its runs.
void print_result(const SessionResult& r, const RunConfig& cfg) {
    std::printf("run %lld %s after %.1f s%s%s\n", (long long)r.run_id, to_string(r.status), r.wall_s,
                r.reason.empty() ? "" : ": ", r.reason.c_str());
    if (!r.nodes.empty()) {  // a run that failed preparing its data has no nodes to show
        print_nodes(r);
        if (is_run_kind(cfg, RunKind::kSkipPipe)) print_skippipe(r);
        std::printf("  unigram baseline %.4f nats/token\n", r.unigram);
    }
    if (!r.end_tables.empty()) std::printf("%s", r.end_tables.c_str());
}

int exit_code(const SessionResult& r) {
    return r.status == RunStatus::kFinished ? 0 : r.status == RunStatus::kInterrupted ? 130 : 1;
}

// `thinwire run --resume RUN [FILE] [--set k=v]... [--force]`: the same run id goes on from its
// nodes' latest common checkpoint (coordinator/resume_plan.h says what is refused).
int resume_layout(const Globals& g, const RunArgs& a) {
    const std::string root = unwrap(coordinator_data_root(a.data_root));
    RunStore store = unwrap(RunStore::open(g.db_path));
    const ResumePlan plan = unwrap(plan_resume(store, a.resume, a.file, a.sets, root, a.force));
    for (auto& c : plan.changed) std::printf("resume with --force: %s\n", c.c_str());
    const std::string exe = unwrap(this_executable());
    g_interrupt = false;
    auto prev_int = std::signal(SIGINT, on_interrupt);
    auto prev_term = std::signal(SIGTERM, on_interrupt);
    SessionResult r = run_session(plan.cfg, g.db_path, plan.run.group, engine_hooks(exe), root, g_interrupt, a.resume);
    std::signal(SIGINT, prev_int);
    std::signal(SIGTERM, prev_term);
    print_result(r, plan.cfg);
    return exit_code(r);
}

const char* kDataRootHelp =
    "the folder this coordinator and the nodes it starts read and write (default: the per-user cache folder, $XDG_CACHE_HOME/thinwire or ~/.cache/thinwire); "
    "the layout's paths are relative to it, absolute ones must lie under it, and remote nodes resolve "
    "them under their own --data-root";

}  // namespace

int run_layout(const Globals& g, const std::string& file, const std::vector<std::string>& sets, bool sweep,
               const std::string& data_root, const std::vector<std::string>& variants) {
    RunArgs a{{file.empty() ? "default" : file, sets, variants}, data_root};
    RunPlan plan = unwrap(load_run_plan(file, sets, PlanSelection{variants, true}));
    // (name, why) of every run that did not finish, in launch order: the table printed last.
    std::vector<std::pair<std::string, std::string>> failed;
    for (auto& [variant, why] : plan.failed) {
        const std::string name = variant.empty() ? a.file : variant;
        std::fprintf(stderr, "thinwire: %s refused: %s\n", name.c_str(), why.c_str());
        failed.emplace_back(name, why);
    }
    // Every run's paths are checked against the data root before the first one starts, so a bad
    // variant is reported before the others run.
    const std::string root = unwrap(coordinator_data_root(data_root));
    for (size_t i = 0; i < plan.runs.size();) {
        RunConfig c = plan.runs[i].second;
        if (Status s = relative_to_root(c, root); !s) {
            const std::string& variant = plan.runs[i].first;
            std::fprintf(stderr, "thinwire: %s%s: %s\n", a.file.c_str(), variant.empty() ? "" : (" (" + variant + ")").c_str(),
                         s.message().c_str());
            failed.emplace_back(plan.runs[i].second.run.name, s.message());
            plan.runs.erase(plan.runs.begin() + static_cast<std::ptrdiff_t>(i));
            continue;
        }
        ++i;
    }
    if (plan.runs.empty()) {
        print_failures("thinwire: no run of " + a.file + " can start:", failed);
        return 1;
    }
    if (sweep && plan.sweep_points == 0)
        throw Error(a.file + ": `thinwire sweep` needs a [sweep] table (\"key\" = [values, ...]); `thinwire run` runs it as is");
    if (sweep) std::printf("sweep: %zu points × %zu variant(s) = %zu runs\n", plan.sweep_points,
                           plan.runs.size() / plan.sweep_points, plan.runs.size());
    check(RunStore::open(g.db_path).status());  // a bad --db is reported before anything starts
    std::string stem = a.file.substr(a.file.find_last_of('/') + 1);
    stem = stem.substr(0, stem.find('.'));
    const std::string group = stem + "@" + std::to_string(std::time(nullptr));
    const std::string exe = unwrap(this_executable());

    g_interrupt = false;
    auto prev_int = std::signal(SIGINT, on_interrupt);
    auto prev_term = std::signal(SIGTERM, on_interrupt);
    std::vector<SessionResult> results;
    int rc = 0;
    for (size_t i = 0; i < plan.runs.size(); ++i) {
        const RunConfig& cfg = plan.runs[i].second;
        if (g_interrupt) break;
        SessionResult r = run_session(cfg, g.db_path, group, engine_hooks(exe), root, g_interrupt);
        print_result(r, cfg);
        const int code = exit_code(r);
        if (code && !rc) rc = code;
        const int64_t id = r.run_id;
        const bool store_failed = r.store_failed;
        if (code) failed.emplace_back(cfg.run.name, std::string(to_string(r.status)) + (r.reason.empty() ? "" : ": " + r.reason));
        results.push_back(std::move(r));
        // An interrupt, or a store that cannot be written (it would fail the next runs too), ends
        // the launch: the runs it leaves out are named, never skipped without a word. Any other
        // failure is the run's own, and the next run goes on.
        if (!code || !(code == 130 || store_failed)) continue;
        if (i + 1 < plan.runs.size()) {
            std::string rest;
            for (size_t j = i + 1; j < plan.runs.size(); ++j) rest += (rest.empty() ? "" : ", ") + plan.runs[j].second.run.name;
            std::fprintf(stderr, "thinwire: not run after run %lld ended %s: %s\n", (long long)id,
                         to_string(results.back().status), rest.c_str());
        }
        break;
    }
    std::signal(SIGINT, prev_int);
    std::signal(SIGTERM, prev_term);
    if (results.size() > 1 || !plan.report_networks.empty()) {
        RunStore store = unwrap(RunStore::open(g.db_path));
        print_comparison(store, plan, results);
    }
    if (!failed.empty()) {
        print_failures("thinwire: " + std::to_string(failed.size()) + " run(s) of " + a.file + " did not finish:", failed);
        if (!rc) rc = 1;
    }
    return rc;
}

Command add_run(CLI::App& app, const Globals& g) {
    auto* sub = app.add_subcommand("run", "Run a layout (its variants one after another) on threads, local processes or remote nodes");
    auto args = std::make_shared<RunArgs>();
    sub->add_option("layout", args->file,
                    "TOML run layout, e.g. experiments/quickstart.toml (with --resume: optional, checked against the stored one)");
    sub->add_option("--set", args->sets, "Override a key, e.g. --set cluster.mode=local (repeatable)");
    sub->add_option("--variant", args->variants,
                    "run only this variant of the layout's [variants] (repeatable; an unknown name lists the file's)");
    sub->add_option("--data-root", args->data_root, kDataRootHelp);
    sub->add_option("--resume", args->resume,
                    "continue interrupted or failed run RUN from its nodes' latest common checkpoint (train.ckpt_every)")
        ->check(CLI::PositiveNumber);
    sub->add_flag("--force", args->force, "with --resume: accept a layout or --set values that differ from the stored config");
    return {sub, [&g, args] {
                if (!args->variants.empty() && args->resume > 0) throw Error("--variant does not apply to --resume");
                if (args->resume > 0) return resume_layout(g, *args);
                if (args->force) throw Error("--force applies to --resume only");
                if (args->file.empty()) throw Error("run: a layout file is required (or --resume RUN)");
                return run_layout(g, args->file, args->sets, false, args->data_root, args->variants);
            }};
}

Command add_sweep(CLI::App& app, const Globals& g) {
    auto* sub = app.add_subcommand("sweep", "Run every point of a layout's [sweep] grid, each its own run, in one group");
    auto args = std::make_shared<RunArgs>();
    sub->add_option("layout", args->file, "TOML run layout with a [sweep] table")->required();
    sub->add_option("--set", args->sets, "Override a key for every point (repeatable)");
    sub->add_option("--data-root", args->data_root, kDataRootHelp);
    return {sub, [&g, args] { return run_layout(g, args->file, args->sets, true, args->data_root); }};
}

}  // namespace tw::cli
