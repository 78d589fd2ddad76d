// `thinwire train [FILE] [--set k=v]...`: training on this machine's single node, recorded in the run
// store. A file with an outer algorithm (several replicas) goes through the coordinator, as `run` does.
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>

#include "app/commands.h"
#include "app/progress.h"
#include "core/config_io.h"
#include "core/metric_names.h"
#include "engine/data/dataset.h"
#include "engine/train/trainer.h"
#include "storage/metric_writer.h"
#include "storage/run_store.h"

namespace tw::cli {
namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_sigint(int) { g_stop = true; }

void log_line(const std::string& s) { std::printf("%s\n", s.c_str()); }

struct TrainArgs {
    std::string file;
    std::vector<std::string> sets;
    std::string data_root;  // for runs with replicas, which go through the coordinator
};

// What every replica of one run shares.
struct RunContext {
    RunConfig cfg;
    PreparedData data;
    RunStore* store = nullptr;
    int64_t run_id = 0;
    double unigram = 0;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    double wall() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
};

struct ReplicaResult {
    Status status;
    int64_t steps = 0;
    bool stopped = false;
    double last_loss = NAN, last_val = NAN;
};

// Trains the single node of a run without replicas, recording into the run store directly.
ReplicaResult run_single(const RunContext& ctx, Progress* progress) {
    const RunConfig& cfg = ctx.cfg;
    const uint64_t seed = static_cast<uint64_t>(cfg.run.seed);
    ReplicaResult out;
    Trainer trainer(cfg,
                    WindowLoader(ctx.data.train, select_spans(ctx.data, false, cfg.data.genres), cfg.model.seq_len,
                                 cfg.train.batch_size, seed),
                    WindowLoader(ctx.data.val, select_spans(ctx.data, true, cfg.data.genres), cfg.model.seq_len,
                                 cfg.train.batch_size, seed));
    const std::string node = "local";
    MetricBuffer metrics(*ctx.store, ctx.run_id);
    double sim_s = 0;
    int64_t start_step = -1;
    auto record = [&](int64_t step, const char* name, double v) {
        metrics.add({node, step, -1, ctx.wall(), sim_s, name, v});
    };
    TrainHooks hooks;
    hooks.on_step = [&](const StepReport& s) {
        if (start_step < 0) start_step = s.step - 1;
        sim_s += s.compute_s;  // nothing is simulated: the clock is the compute time
        const double tps = cfg.train.batch_size * cfg.model.seq_len / s.compute_s;
        record(s.step, metric::kTrainLoss, s.loss);
        record(s.step, metric::kTrainLr, s.lr);
        record(s.step, metric::kTrainGradNorm, s.grad_norm);
        record(s.step, metric::kTrainTokens, static_cast<double>(s.tokens));
        record(s.step, metric::kTrainComputeS, s.compute_s);
        record(s.step, metric::kTrainTokensPerS, tps);
        out.last_loss = s.loss;
        if (progress) progress->update(s.step, start_step, s.loss, tps);
    };
    hooks.on_eval = [&](int64_t step, double v) {
        out.last_val = v;
        record(step, metric::kValLoss, v);
        char buf[112];
        std::snprintf(buf, sizeof buf, "step %lld: val loss %.4f (unigram %.4f)", (long long)step, v, ctx.unigram);
        if (progress) progress->line(buf);
    };
    hooks.on_event = [&](const std::string& kind, const std::string& text) {
        if (Status w = ctx.store->add_event(ctx.run_id, {ctx.wall(), node, EventLevel::kInfo, kind, text}); !w)
            std::fprintf(stderr, "thinwire: event not stored: %s\n", w.message().c_str());
    };
    hooks.should_stop = [] { return g_stop.load(); };
    try {
        out.status = trainer.run(hooks);
    } catch (const std::exception& e) {
        out.status = Status::error(node + ": " + e.what());
    }
    if (Status f = metrics.flush(); out.status && !f) out.status = Status::error("metrics not stored: " + f.message());
    out.steps = trainer.step_index();
    out.stopped = trainer.stopped_early();
    return out;
}

int run_train(const Globals& g, const TrainArgs& a) {
    RunContext ctx;
    ctx.cfg = unwrap(load_config(a.file, a.sets));
    RunConfig& cfg = ctx.cfg;
    // Several replicas are several nodes: the coordinator runs them (`thinwire run`, same file).
    if (cfg.outer.algorithm != "none") return run_layout(g, a.file, a.sets, false, a.data_root);
    std::printf("preparing data (%s)\n", cfg.data.corpus.c_str());
    ctx.data = unwrap(prepare_data(cfg.data, &log_line));
    if (cfg.model.vocab_size == 0) cfg.model.vocab_size = ctx.data.vocab_size;
    if (cfg.model.vocab_size < ctx.data.vocab_size)
        throw Error("model.vocab_size " + std::to_string(cfg.model.vocab_size) + " is smaller than the data's " +
                    std::to_string(ctx.data.vocab_size));
    ctx.unigram = unigram_loss(*ctx.data.train, *ctx.data.val, cfg.model.vocab_size);

    RunStore store = unwrap(RunStore::open(g.db_path));
    ctx.store = &store;
    ctx.run_id = unwrap(store.create_run(cfg.run.name, "train", to_toml(cfg), config_hash(cfg), cfg.run.seed));
    std::printf("run %lld \"%s\": %s model, %lld parameters, %lld train tokens, %lld steps of %lld×%lld, %lld threads\n",
                (long long)ctx.run_id, cfg.run.name.c_str(), cfg.model.preset.c_str(),
                (long long)count_parameters(cfg.model), (long long)ctx.data.train->size(), (long long)cfg.train.steps,
                (long long)cfg.train.batch_size, (long long)cfg.model.seq_len, (long long)cfg.run.threads);
    std::printf("unigram baseline (same tokenizer): %.4f nats/token\n", ctx.unigram);

    Progress progress(cfg.train.steps, cfg.train.log_every);
    g_stop = false;
    auto prev = std::signal(SIGINT, on_sigint);
    const ReplicaResult lead = run_single(ctx, &progress);
    std::signal(SIGINT, prev);
    progress.finish();

    if (!lead.status) {
        if (Status w = store.finish_run(ctx.run_id, RunStatus::kFailed, lead.status.message()); !w)
            std::fprintf(stderr, "thinwire: run status not stored: %s\n", w.message().c_str());
        throw Error(lead.status.message());
    }
    if (lead.stopped) {
        check(store.finish_run(ctx.run_id, RunStatus::kInterrupted, "interrupted at step " + std::to_string(lead.steps)));
        std::printf("interrupted at step %lld; run %lld marked interrupted\n", (long long)lead.steps, (long long)ctx.run_id);
        return 130;
    }
    check(store.finish_run(ctx.run_id, RunStatus::kFinished, ""));
    std::printf("\nrun %lld finished: %lld steps in %.1f s\n", (long long)ctx.run_id, (long long)lead.steps, ctx.wall());
    std::printf("  validation loss  %.4f nats/token\n  unigram baseline %.4f nats/token (the model is %.2f nats/token %s)\n",
                lead.last_val, ctx.unigram, std::abs(ctx.unigram - lead.last_val),
                lead.last_val < ctx.unigram ? "better" : "worse");
    return 0;
}

}  // namespace

Command add_train(CLI::App& app, const Globals& g) {
    auto* sub = app.add_subcommand("train", "Train one model on one node (the built-in default without FILE)");
    auto args = std::make_shared<TrainArgs>();
    sub->add_option("file", args->file, "TOML run file (omit for the built-in default: tiny model on Brown)");
    sub->add_option("--set", args->sets, "Override a key, e.g. --set model.d_model=128 (repeatable)");
    sub->add_option("--data-root", args->data_root,
                    "with replicas (run through the coordinator, as `thinwire run`): the folder its nodes read and "
                    "write, default the working directory");
    return {sub, [&g, args] { return run_train(g, *args); }};
}

}  // namespace tw::cli
