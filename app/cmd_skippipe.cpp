// `thinwire skippipe FILE [--set k=v]... [--full]`: SkipPipe (Blagoev et al., arXiv 2502.19913;
// METHODS.md §8) as a single-process experiment. THE NODES ARE SIMULATED: one process trains one
// whole model. Every iteration the scheduler (core/skippipe.h) places N·m micro-batches on S·N
// simulated nodes; each micro-batch then really trains through the stages of its scheduled path
// (engine/train/skippipe_step.h), and the schedule's makespan — from per-stage compute times
// measured once at the start (measure_stage_times) plus the stage link's transfer time — is the
// simulated iteration time, set against the full pipeline's (GPipe on the same nodes) for the same
// problem. Nothing but the makespan is simulated: no optimizer time, no gradient sync between replicas.
//
// The FILE is a run config plus a [skippipe] table (keys below, in SkipConfig); `--set skippipe.KEY=V`
// overrides those, every other `--set` goes to the run config. `--full` trains the full-pipeline
// baseline with the same code: every micro-batch on 0→1→…→S−1, timed by the full pipeline's schedule.
//
// Data: each optimizer step draws one batch of N·train.batch_size windows (WindowLoader, seed
// run.seed) and cuts it into N·m micro-batches of b = train.batch_size/m; micro-batch r·m + j is
// replica r's j-th and follows schedule path r·m + j. Schedules: a fresh one per step, seed
// run.seed + step (the step's paths differ, the model of the nodes does not).
#include <toml++/toml.h>
#include <torch/optim/adamw.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <map>
#include <optional>
#include <sstream>

#include "app/commands.h"
#include "app/toml_file.h"
#include "app/progress.h"
#include "core/config_io.h"
#include "core/hash.h"
#include "core/metric_names.h"
#include "core/network.h"
#include "core/skippipe.h"
#include "engine/data/dataset.h"
#include "engine/runtime/threads.h"
#include "engine/train/schedule.h"
#include "engine/train/skippipe_step.h"
#include "engine/train/trainer.h"
#include "storage/metric_writer.h"
#include "storage/run_store.h"

namespace tw::cli {
namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_sigint_skippipe(int) { g_stop = true; }

using Path = std::vector<int64_t>;

// ---- [skippipe] ------------------------------------------------------------------------------------

struct SkipConfig {
    int64_t stages = 4;                      // S: stages (nodes per replica); 2 ≤ S ≤ model.n_layer
    std::optional<int64_t> path_stages;      // L: stages per path; default max(2, S − 1) (3 of 4)
    int64_t max_swaps = 2;                   // steps back by one stage allowed per path
    int64_t replicas = 2;                    // N simulated pipelines (nodes per stage)
    int64_t micro_batches = 4;               // m per replica per iteration; train.batch_size % m == 0
    std::optional<int64_t> memory_per_node;  // micro-batches a node can hold; default m
    std::optional<double> head_fraction;     // share of stage 0's time in the head op; default measured
    std::optional<double> transfer_s;        // seconds per hop; default [network] stage link, dense [b, T, d] fp32
    std::optional<FwdBwd> block_s;           // [fwd, bwd] seconds of one block on one micro-batch; default measured
    std::optional<FwdBwd> head_s;            // [fwd, bwd] seconds of embedding + norm + head + loss; default measured
    std::vector<Path> eval_paths;            // partial models to evaluate; default: S/2-stride and first half
};

const char* const kSkipKeys =
    "stages, path_stages, max_swaps, replicas, micro_batches, memory_per_node, head_fraction, transfer_s, block_s, "
    "head_s, eval_paths";

// Applies one key; appends "origin: skippipe.key: reason" on a problem.
void apply_key(SkipConfig& c, const std::string& key, const toml::node& v, const std::string& origin,
               std::vector<std::string>& problems) {
    auto bad = [&](const std::string& why) { problems.push_back(origin + ": skippipe." + key + ": " + why); };
    int64_t* integer = key == "stages"          ? &c.stages
                       : key == "max_swaps"     ? &c.max_swaps
                       : key == "replicas"      ? &c.replicas
                       : key == "micro_batches" ? &c.micro_batches
                                                : nullptr;
    std::optional<int64_t>* opt_integer = key == "path_stages"       ? &c.path_stages
                                          : key == "memory_per_node" ? &c.memory_per_node
                                                                     : nullptr;
    std::optional<double>* real = key == "head_fraction" ? &c.head_fraction
                                  : key == "transfer_s"  ? &c.transfer_s
                                                         : nullptr;
    if (integer || opt_integer) {
        const auto x = v.value_exact<int64_t>();
        if (!x) return bad("expected an integer");
        if (integer)
            *integer = *x;
        else
            *opt_integer = *x;
    } else if (real) {
        if (!v.is_integer() && !v.is_floating_point()) return bad("expected a number");
        *real = *v.value<double>();
    } else if (key == "block_s" || key == "head_s") {
        const toml::array* a = v.as_array();
        std::optional<double> f = a && a->size() == 2 ? a->get(0)->value<double>() : std::nullopt;
        std::optional<double> b = a && a->size() == 2 ? a->get(1)->value<double>() : std::nullopt;
        if (!f || !b || !(*f >= 0) || !(*b >= 0)) return bad("expected [forward_s, backward_s], two numbers ≥ 0");
        (key == "block_s" ? c.block_s : c.head_s) = FwdBwd{*f, *b};
    } else if (key == "eval_paths") {
        c.eval_paths.clear();
        const toml::array* outer = v.as_array();
        bool ok = outer != nullptr;
        for (size_t i = 0; ok && i < outer->size(); ++i) {
            const toml::array* inner = outer->get(i)->as_array();
            ok = inner != nullptr && !inner->empty();
            Path p;
            for (size_t k = 0; ok && k < inner->size(); ++k) {
                const auto s = inner->get(k)->value_exact<int64_t>();
                ok = s.has_value();
                if (ok) p.push_back(*s);
            }
            if (ok) c.eval_paths.push_back(p);
        }
        if (!ok) bad("expected an array of non-empty integer arrays, e.g. [[0, 2], [0, 1]]");
    } else {
        bad(std::string("unknown key (known: ") + kSkipKeys + ")");
    }
}

// The file's run config and [skippipe] table; `sets` are split between the two by their prefix.
struct Loaded {
    RunConfig cfg;
    SkipConfig skip;
};

Result<Loaded> load(const std::string& path, const std::vector<std::string>& sets) {
    auto parsed = read_toml_file(path);
    if (!parsed) return parsed.status();
    toml::table t = std::move(*parsed);
    Loaded out;
    std::vector<std::string> problems, run_sets;
    if (toml::node* s = t.get("skippipe")) {
        if (!s->is_table())
            problems.push_back(path + ": skippipe: expected a table");
        else
            for (auto& [k, v] : *s->as_table()) apply_key(out.skip, std::string(k.str()), v, path, problems);
        t.erase("skippipe");
    }
    for (const std::string& o : sets) {
        const std::string prefix = "skippipe.";
        if (o.rfind(prefix, 0) != 0) {
            run_sets.push_back(o);
            continue;
        }
        const size_t eq = o.find('=');
        const std::string key =
            o.substr(prefix.size(), eq == std::string::npos ? std::string::npos : eq - prefix.size());
        if (eq == std::string::npos) {
            problems.push_back("--set " + o + ": expected key=value");
            continue;
        }
        toml::table v;
        try {
            v = toml::parse("x = " + o.substr(eq + 1));
        } catch (const toml::parse_error&) {
            v.insert_or_assign("x", o.substr(eq + 1));  // bare words are strings, as parse_config reads them
        }
        apply_key(out.skip, key, *v.get("x"), "--set", problems);
    }
    if (!problems.empty()) {
        std::string msg = problems[0];
        for (size_t i = 1; i < problems.size(); ++i) msg += "\n  " + problems[i];
        return Result<Loaded>::error(msg);
    }
    std::ostringstream rest;
    rest << t << "\n";
    auto cfg = parse_config(rest.str(), path, run_sets);
    if (!cfg) return cfg.status();
    out.cfg = std::move(*cfg);
    return out;
}

// Defaults that depend on other keys, then every problem at once.
Status resolve(SkipConfig& c, const RunConfig& cfg, const std::string& source) {
    if (!c.path_stages) c.path_stages = std::max<int64_t>(2, c.stages - 1);
    if (!c.memory_per_node) c.memory_per_node = c.micro_batches;
    const int64_t S = c.stages;
    if (c.eval_paths.empty()) {
        Path stride, first_half;
        for (int64_t s = 0; s < S; s += 2) stride.push_back(s);
        for (int64_t s = 0; s < std::max<int64_t>(1, S / 2); ++s) first_half.push_back(s);
        c.eval_paths = {stride, first_half};
    }
    std::vector<std::string> p;
    const std::string at = source + ": skippipe.";
    {  // the scheduler's own checks, with placeholder stage times
        SkipPipeProblem probe;
        probe.stages = static_cast<int>(S), probe.replicas = static_cast<int>(c.replicas);
        probe.path_stages = static_cast<int>(*c.path_stages), probe.max_swaps = static_cast<int>(c.max_swaps);
        probe.micro_batches = static_cast<int>(c.micro_batches);
        probe.memory_per_node = static_cast<int>(*c.memory_per_node);
        probe.fwd_s.assign(static_cast<size_t>(std::max<int64_t>(S, 0)), 1.0), probe.bwd_s = probe.fwd_s;
        probe.head_fraction = c.head_fraction.value_or(0), probe.transfer_s = c.transfer_s.value_or(0);
        std::istringstream lines(validate(probe));
        for (std::string line; std::getline(lines, line);) p.push_back(at + line);
    }
    if (S > cfg.model.n_layer)
        p.push_back(at + "stages " + std::to_string(S) + " exceeds model.n_layer " + std::to_string(cfg.model.n_layer) +
                    " (a stage holds at least one block)");
    if (c.micro_batches >= 1 && cfg.train.batch_size % c.micro_batches != 0)
        p.push_back(at + "micro_batches " + std::to_string(c.micro_batches) + " does not divide train.batch_size " +
                    std::to_string(cfg.train.batch_size));
    std::vector<Path> unique;
    Path in_order;
    for (int64_t s = 0; s < S; ++s) in_order.push_back(s);
    for (const Path& e : c.eval_paths) {
        std::vector<char> seen(static_cast<size_t>(std::max<int64_t>(S, 1)), 0);
        bool ok = !e.empty() && e.front() == 0;
        for (int64_t s : e) ok = ok && s >= 0 && s < S && !seen[static_cast<size_t>(s)]++;
        if (!ok)
            p.push_back(at + "eval_paths: a path must start at 0 and visit distinct stages below " + std::to_string(S));
        if (ok && e != in_order && std::find(unique.begin(), unique.end(), e) == unique.end()) unique.push_back(e);
    }
    c.eval_paths = unique;  // the full model is always evaluated, as val.loss
    if (p.empty()) return Status::ok();
    std::string msg = p[0];
    for (size_t i = 1; i < p.size(); ++i) msg += "\n  " + p[i];
    return Status::error(msg);
}

std::string path_name(const Path& p) {
    std::string s = "path";
    for (int64_t x : p) s += "_" + std::to_string(x);
    return s;
}

// The resolved [skippipe] table as comments "# skippipe.key = value", stored with the run ahead of the
// run config: the stored text must stay parseable by parse_config (`runs`, the workbench), and
// `runs compare` still lists these lines where two runs differ. With `measured` false measured
// times are written as "measured", so the config hash does not depend on timings.
std::string skip_toml(const SkipConfig& c, const SkipPipeProblem& p, const SkipStageTimes& st, bool full,
                      bool measured = true) {
    auto times = [&](const std::optional<FwdBwd>& given, const FwdBwd& used) {
        if (!measured && !given) return std::string("\"measured\"");
        std::ostringstream t;
        t << "[" << used.fwd_s << ", " << used.bwd_s << "]";
        return t.str();
    };
    std::ostringstream os;
    os << "# thinwire skippipe" << (full ? " --full (trained on the full pipeline)" : "")
       << "; [skippipe] resolved, times as used\n"
       << "# skippipe.stages = " << c.stages << "\n# skippipe.path_stages = " << *c.path_stages
       << "\n# skippipe.max_swaps = " << c.max_swaps << "\n# skippipe.replicas = " << c.replicas
       << "\n# skippipe.micro_batches = " << c.micro_batches << "\n# skippipe.memory_per_node = " << *c.memory_per_node
       << "\n# skippipe.head_fraction = "
       << (measured || c.head_fraction ? std::to_string(p.head_fraction) : "\"measured\"")
       << "\n# skippipe.transfer_s = " << p.transfer_s << "\n# skippipe.block_s = " << times(c.block_s, st.block)
       << "\n# skippipe.head_s = " << times(c.head_s, st.head) << "\n# skippipe.eval_paths = [";
    for (size_t i = 0; i < c.eval_paths.size(); ++i) {
        os << (i ? ", [" : "[");
        for (size_t k = 0; k < c.eval_paths[i].size(); ++k) os << (k ? ", " : "") << c.eval_paths[i][k];
        os << "]";
    }
    os << "]\n# skippipe.full = " << (full ? "true" : "false") << "\n\n";
    return os.str();
}

// ---- the run -----------------------------------------------------------------------------------------

struct SkipArgs {
    std::string file;
    std::vector<std::string> sets;
    bool full = false;
};

struct Summary {
    int64_t steps = 0;
    double skip_iter_sum_s = 0, full_iter_s = 0;  // SkipPipe's makespans summed; the full pipeline's
    double last_loss = NAN, val_full = NAN;
    std::vector<double> val_paths;
    std::map<Path, int64_t> trained;  // micro-batches per stage sequence, over the run
};

Result<SkipSchedule> checked(Result<SkipSchedule> s, const SkipPipeProblem& p, const char* what) {
    if (!s) return s;
    if (std::string e = check_schedule(p, *s); !e.empty())
        throw Error(std::string("invalid ") + what + " schedule (a scheduler bug): " + e);
    return s;
}

void print_table(const SkipConfig& c, const Summary& r, bool full) {
    const double n = static_cast<double>(std::max<int64_t>(1, r.steps));
    const double skip = r.skip_iter_sum_s / n, ratio = skip / r.full_iter_s;
    std::printf(
        "\nSkipPipe, S = %lld stages, L = %lld, max_swaps %lld, N = %lld replicas × m = %lld micro-batches, "
        "memory %lld — nodes simulated in one process\n",
        (long long)c.stages, (long long)*c.path_stages, (long long)c.max_swaps, (long long)c.replicas,
        (long long)c.micro_batches, (long long)*c.memory_per_node);
    std::printf("trained with: %s\n", full ? "the full pipeline (--full: every micro-batch on 0→…→S−1); the SkipPipe "
                                             "schedule below is the reference, not trained on"
                                           : "SkipPipe paths (a fresh schedule per step)");
    std::printf("  %-34s %10s\n", "", "seconds");
    std::printf("  %-34s %10.4f\n", "mean iteration, SkipPipe schedule", skip);
    std::printf("  %-34s %10.4f\n", "iteration, full pipeline (GPipe)", r.full_iter_s);
    std::printf("  %-34s %10.3f  (%.1f%% %s)\n", "ratio SkipPipe / full", ratio, 100 * std::fabs(1 - ratio),
                ratio <= 1 ? "shorter" : "longer");
    std::printf("  %-34s %10.4f  (%s)\n", "final train loss", r.last_loss,
                full ? "full model" : "mean over the step's partial paths");
    std::vector<std::pair<int64_t, Path>> by_count;
    int64_t total = 0;
    for (const auto& [path, count] : r.trained) by_count.emplace_back(count, path), total += count;
    std::sort(by_count.rbegin(), by_count.rend());
    std::printf("  paths trained (share of micro-batches):");
    for (const auto& [count, path] : by_count) {
        std::string stages;
        for (int64_t s : path) stages += (stages.empty() ? "" : "-") + std::to_string(s);
        std::printf(" %s %.0f%%", stages.c_str(), 100.0 * static_cast<double>(count) / static_cast<double>(total));
    }
    std::printf("\n\n  %-22s %-12s %9s %9s %12s\n", "model", "stages", "val loss", "Δ nats", "perplexity");
    std::printf("  %-22s %-12s %9.4f %9s %12s\n", "full (val.loss)", "all", r.val_full, "", "");
    for (size_t i = 0; i < c.eval_paths.size(); ++i) {
        std::string stages;
        for (int64_t s : c.eval_paths[i]) stages += (stages.empty() ? "" : " ") + std::to_string(s);
        const double d = r.val_paths[i] - r.val_full;
        std::printf("  %-22s %-12s %9.4f %+9.4f %+11.1f%%\n", (metric::kValLossPathPrefix + path_name(c.eval_paths[i])).c_str(),
                    stages.c_str(), r.val_paths[i], d, 100 * (std::exp(d) - 1));
    }
}

int run_skippipe(const Globals& g, const SkipArgs& a) {
    const auto t_start = std::chrono::steady_clock::now();
    auto wall = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count(); };
    Loaded loaded = unwrap(load(a.file, a.sets));
    RunConfig& cfg = loaded.cfg;
    SkipConfig& sc = loaded.skip;
    check(resolve(sc, cfg, a.file));
    if (a.full) cfg.run.name += "-full";
    const int64_t S = sc.stages, N = sc.replicas, m = sc.micro_batches, b = cfg.train.batch_size / m;
    const int64_t T = cfg.model.seq_len;
    const uint64_t seed = static_cast<uint64_t>(cfg.run.seed);

    std::printf("preparing data (%s)\n", cfg.data.corpus.c_str());
    PreparedData data = unwrap(prepare_data(cfg.data, nullptr));
    if (cfg.model.vocab_size == 0) cfg.model.vocab_size = data.vocab_size;
    if (cfg.model.vocab_size < data.vocab_size)
        throw Error("model.vocab_size " + std::to_string(cfg.model.vocab_size) + " is smaller than the data's " +
                    std::to_string(data.vocab_size));
    WindowLoader train(data.train, select_spans(data, false, cfg.data.genres), T, N * cfg.train.batch_size, seed);
    const WindowLoader val(data.val, select_spans(data, true, cfg.data.genres), T, cfg.train.batch_size, seed);
    const std::string threads = configure_compute_threads(static_cast<int>(cfg.run.threads));
    Llama model(cfg.model, seed);
    auto optim = make_adamw(model, cfg.train);

    // The scheduling problem: measured stage times of one micro-batch, the stage link's hop.
    const SkipStageTimes st = measure_stage_times(cfg.model, seed, model, train.batch(0).narrow(0, 0, b), S,
                                                  sc.block_s, sc.head_s);
    SkipPipeProblem p;
    p.stages = static_cast<int>(S), p.replicas = static_cast<int>(N), p.path_stages = static_cast<int>(*sc.path_stages);
    p.max_swaps = static_cast<int>(sc.max_swaps), p.micro_batches = static_cast<int>(m);
    p.memory_per_node = static_cast<int>(*sc.memory_per_node);
    p.fwd_s = st.fwd_s, p.bwd_s = st.bwd_s;
    p.head_fraction = sc.head_fraction.value_or(st.head_fraction);
    const uint64_t act_bytes = static_cast<uint64_t>(b * T * cfg.model.d_model) * sizeof(float);
    p.transfer_s = sc.transfer_s.value_or(transfer_s(unwrap(network_profile(cfg.network)).stage, act_bytes));
    SkipPipeProblem p_full = p;  // what the full pipeline's schedule is checked against: every path all S stages
    p_full.path_stages = p.stages, p_full.max_swaps = 0;
    const SkipSchedule full_sched = unwrap(checked(schedule_full_pipeline(p_full), p_full, "full-pipeline"));

    RunStore store = unwrap(RunStore::open(g.db_path));
    const std::string stored = skip_toml(sc, p, st, a.full) + to_toml(cfg);
    char hash[17];
    const uint64_t h = seeded_hash64(skip_toml(sc, p, st, a.full, false) + to_toml(cfg));
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(h));
    const int64_t run_id = unwrap(store.create_run(cfg.run.name, "skippipe", stored, hash, cfg.run.seed));
    std::ostringstream times;
    times << std::fixed << std::setprecision(2) << "per micro-batch (" << b << "×" << T << " tokens), ms: block "
          << 1e3 * st.block.fwd_s << " + " << 1e3 * st.block.bwd_s << (sc.block_s ? " (given)" : " (measured)")
          << ", head op " << 1e3 * st.head.fwd_s << " + " << 1e3 * st.head.bwd_s
          << (sc.head_s ? " (given)" : " (measured)") << "; stages fwd";
    for (double x : p.fwd_s) times << " " << 1e3 * x;
    times << ", bwd";
    for (double x : p.bwd_s) times << " " << 1e3 * x;
    times << "; head share " << p.head_fraction << (sc.head_fraction ? " (given)" : "") << "; hop "
          << 1e3 * p.transfer_s << " ms" << (sc.transfer_s ? " (given)" : " (" + cfg.network.profile + " stage link)");
    if (Status w = store.add_event(run_id, {wall(), "local", EventLevel::kInfo, "skippipe.times", times.str()}); !w)
        std::fprintf(stderr, "thinwire: event not stored: %s\n", w.message().c_str());
    std::printf("run %lld \"%s\": %lld parameters, %lld steps of %lld micro-batches × %lld×%lld tokens, %s\n",
                (long long)run_id, cfg.run.name.c_str(), (long long)count_parameters(cfg.model),
                (long long)cfg.train.steps, (long long)(N * m), (long long)b, (long long)T, threads.c_str());
    std::printf("stage times %s\n", times.str().c_str());

    MetricBuffer metrics(store, run_id);
    double sim_s = 0;
    auto record = [&](int64_t step, const std::string& name, double v) {
        metrics.add({"local", step, -1, wall(), sim_s, name, v});
    };
    Summary sum;
    sum.full_iter_s = full_sched.makespan_s;
    sum.val_paths.assign(sc.eval_paths.size(), NAN);
    auto evaluate = [&](int64_t step) {
        sum.val_full = evaluate_path(model, val, cfg.train.eval_batches, path_stages_of(full_sched.paths[0]), S);
        record(step, metric::kValLoss, sum.val_full);
        for (size_t i = 0; i < sc.eval_paths.size(); ++i) {
            sum.val_paths[i] = evaluate_path(model, val, cfg.train.eval_batches, sc.eval_paths[i], S);
            record(step, metric::kValLossPathPrefix + path_name(sc.eval_paths[i]), sum.val_paths[i]);
        }
    };

    Progress progress(cfg.train.steps, cfg.train.log_every);
    g_stop = false;
    auto prev = std::signal(SIGINT, on_sigint_skippipe);
    Status status;
    try {
        for (int64_t step = 0; step < cfg.train.steps && !g_stop; ++step) {
            // Phase 1: this step's schedule (SkipPipe always, for the comparison; trained on unless --full).
            const SkipSchedule skip =
                unwrap(checked(schedule_skippipe(p, seed + static_cast<uint64_t>(step)), p, "SkipPipe"));
            const SkipSchedule& used = a.full ? full_sched : skip;
            const auto t0 = std::chrono::steady_clock::now();  // train.compute_s: phases 2 and 3
            // Phase 2: micro-batch k = rows [k·b, (k+1)·b) of the step's batch follows path k.
            const torch::Tensor batch = train.batch(step);
            std::vector<torch::Tensor> windows;
            std::vector<Path> paths;
            for (int64_t k = 0; k < N * m; ++k) {
                windows.push_back(batch.narrow(0, k * b, b));
                paths.push_back(path_stages_of(used.paths[static_cast<size_t>(k)]));
                ++sum.trained[paths.back()];
            }
            // Phase 3: train.
            const double lr = lr_at(step, cfg.train.steps, cfg.train.lr, cfg.train.warmup_steps, cfg.train.min_lr_frac);
            const SkipStepResult r = skippipe_step(model, *optim, windows, paths, S, lr, cfg.train.grad_clip);
            const double compute_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            // Phase 4: the simulated clock and the metrics.
            sim_s += used.makespan_s;
            sum.skip_iter_sum_s += skip.makespan_s;
            sum.steps = step + 1;
            sum.last_loss = r.loss;
            const int64_t done = step + 1;
            const double tokens = static_cast<double>(N * cfg.train.batch_size * T);
            record(done, metric::kTrainLoss, r.loss);
            record(done, metric::kTrainLr, lr);
            record(done, metric::kTrainGradNorm, r.grad_norm);
            record(done, metric::kTrainTokens, tokens * static_cast<double>(done));
            record(done, metric::kTrainComputeS, compute_s);
            record(done, metric::kTrainTokensPerS, tokens / compute_s);
            record(done, "skippipe.iter_s", used.makespan_s);
            record(done, "skippipe.full_iter_s", full_sched.makespan_s);
            record(done, "skippipe.max_held", used.max_held);
            progress.update(done, 0, r.loss, tokens / compute_s);
            if (done < cfg.train.steps && cfg.train.eval_every > 0 && done % cfg.train.eval_every == 0) {
                evaluate(done);
                char buf[96];
                std::snprintf(buf, sizeof buf, "step %lld: val loss %.4f (full model)", (long long)done, sum.val_full);
                progress.line(buf);
            }
        }
        if (!g_stop) evaluate(sum.steps);
    } catch (const std::exception& e) {
        status = Status::error(e.what());
    }
    std::signal(SIGINT, prev);
    progress.finish();
    if (Status f = metrics.flush(); status && !f) status = Status::error("metrics not stored: " + f.message());
    if (!status) {
        if (Status w = store.finish_run(run_id, RunStatus::kFailed, status.message()); !w)
            std::fprintf(stderr, "thinwire: run status not stored: %s\n", w.message().c_str());
        throw Error(status.message());
    }
    if (g_stop) {
        check(store.finish_run(run_id, RunStatus::kInterrupted, "interrupted at step " + std::to_string(sum.steps)));
        std::printf("interrupted at step %lld; run %lld marked interrupted\n", (long long)sum.steps, (long long)run_id);
        return 130;
    }
    check(store.finish_run(run_id, RunStatus::kFinished, ""));
    print_table(sc, sum, a.full);
    std::printf("\nrun %lld finished: %lld steps in %.1f s wall, %.2f s simulated\n", (long long)run_id,
                (long long)sum.steps, wall(), sim_s);
    return 0;
}

}  // namespace

Command add_skippipe(CLI::App& app, const Globals& g) {
    auto* sub =
        app.add_subcommand("skippipe", "SkipPipe partial pipelines, nodes simulated in one process (METHODS.md §8)");
    auto args = std::make_shared<SkipArgs>();
    sub->add_option("file", args->file, "TOML run file with a [skippipe] table")->required();
    sub->add_option("--set", args->sets, "Override a key, e.g. --set skippipe.path_stages=2 (repeatable)");
    sub->add_flag("--full", args->full, "Train the full-pipeline baseline (every micro-batch on all stages, in order)");
    return {sub, [&g, args] { return run_skippipe(g, *args); }};
}

}  // namespace tw::cli
