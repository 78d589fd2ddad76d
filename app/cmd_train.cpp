// `thinwire train [FILE] [--set k=v]...`: single-node training, recorded in the run store.
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>

#include "app/commands.h"
#include "app/progress.h"
#include "core/config_io.h"
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
};

int run_train(const Globals& g, const TrainArgs& a) {
    RunConfig cfg = unwrap(load_config(a.file, a.sets));
    std::printf("preparing data (%s)\n", cfg.data.corpus.c_str());
    PreparedData data = unwrap(prepare_data(cfg.data, &log_line));
    if (cfg.model.vocab_size == 0) cfg.model.vocab_size = data.vocab_size;
    if (cfg.model.vocab_size < data.vocab_size)
        throw Error("model.vocab_size " + std::to_string(cfg.model.vocab_size) + " is smaller than the data's " +
                    std::to_string(data.vocab_size));

    const uint64_t seed = static_cast<uint64_t>(cfg.run.seed);
    WindowLoader train(data.train, select_spans(data, false, cfg.data.genres), cfg.model.seq_len,
                       cfg.train.batch_size, seed);
    WindowLoader val(data.val, select_spans(data, true, cfg.data.genres), cfg.model.seq_len, cfg.train.batch_size,
                     seed);
    const double unigram = unigram_loss(*data.train, *data.val, cfg.model.vocab_size);

    RunStore store = unwrap(RunStore::open(g.db_path));
    const int64_t run_id = unwrap(store.create_run(cfg.run.name, "train", to_toml(cfg), config_hash(cfg), cfg.run.seed));
    Trainer trainer(cfg, std::move(train), std::move(val));
    std::printf("run %lld \"%s\": %s model, %lld parameters, %lld train tokens, %lld steps of %lld×%lld, %lld threads\n",
                (long long)run_id, cfg.run.name.c_str(), cfg.model.preset.c_str(),
                (long long)trainer.model()->num_parameters(), (long long)data.train->size(), (long long)cfg.train.steps,
                (long long)cfg.train.batch_size, (long long)cfg.model.seq_len, (long long)cfg.run.threads);
    std::printf("unigram baseline (same tokenizer): %.4f nats/token\n", unigram);

    MetricBuffer metrics(store, run_id);
    Progress progress(cfg.train.steps, cfg.train.log_every);
    const auto t0 = std::chrono::steady_clock::now();
    auto wall = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    double sim_s = 0, last_val = NAN;
    int64_t start_step = -1;
    auto record = [&](int64_t step, const char* name, double v) {
        metrics.add({"local", step, -1, wall(), sim_s, name, v});
    };

    TrainHooks hooks;
    hooks.on_step = [&](const StepReport& r) {
        if (start_step < 0) start_step = r.step - 1;
        sim_s += r.compute_s;  // one node, no network: simulated time is compute time
        const double tps = cfg.train.batch_size * cfg.model.seq_len / r.compute_s;
        record(r.step, "train.loss", r.loss);
        record(r.step, "train.lr", r.lr);
        record(r.step, "train.grad_norm", r.grad_norm);
        record(r.step, "train.tokens", static_cast<double>(r.tokens));
        record(r.step, "train.compute_s", r.compute_s);
        record(r.step, "train.tokens_per_s", tps);
        progress.update(r.step, start_step, r.loss, tps);
    };
    hooks.on_eval = [&](int64_t step, double v) {
        last_val = v;
        record(step, "val.loss", v);
        char buf[96];
        std::snprintf(buf, sizeof buf, "step %lld: val loss %.4f (unigram %.4f)", (long long)step, v, unigram);
        progress.line(buf);
    };
    hooks.on_event = [&](const std::string& kind, const std::string& text) {
        (void)store.add_event(run_id, {wall(), "local", EventLevel::kInfo, kind, text});
    };
    hooks.should_stop = [] { return g_stop.load(); };

    g_stop = false;
    auto prev = std::signal(SIGINT, on_sigint);
    Status st;
    try {
        st = trainer.run(hooks);
    } catch (const std::exception& e) {
        st = Status::error(e.what());
    }
    std::signal(SIGINT, prev);
    progress.finish();
    Status flushed = metrics.flush();
    if (!st) {
        (void)store.finish_run(run_id, RunStatus::kFailed, st.message());
        throw Error(st.message());
    }
    if (!flushed) throw Error("metrics not stored: " + flushed.message());
    if (trainer.stopped_early()) {
        check(store.finish_run(run_id, RunStatus::kInterrupted, "interrupted at step " + std::to_string(trainer.step_index())));
        std::printf("interrupted at step %lld; run %lld marked interrupted\n", (long long)trainer.step_index(),
                    (long long)run_id);
        return 130;
    }
    check(store.finish_run(run_id, RunStatus::kFinished, ""));
    std::printf("\nrun %lld finished: %lld steps in %.1f s\n", (long long)run_id, (long long)trainer.step_index(), wall());
    std::printf("  validation loss  %.4f nats/token\n  unigram baseline %.4f nats/token (the model is %.2f nats/token %s)\n",
                last_val, unigram, std::abs(unigram - last_val), last_val < unigram ? "better" : "worse");
    return 0;
}

}  // namespace

Command add_train(CLI::App& app, const Globals& g) {
    auto* sub = app.add_subcommand("train", "Train one model on one node (the built-in default without FILE)");
    auto args = std::make_shared<TrainArgs>();
    sub->add_option("file", args->file, "TOML run file (omit for the built-in default: tiny model on Brown)");
    sub->add_option("--set", args->sets, "Override a key, e.g. --set model.d_model=128 (repeatable)");
    return {sub, [&g, args] { return run_train(g, *args); }};
}

}  // namespace tw::cli
