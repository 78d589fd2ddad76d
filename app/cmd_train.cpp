// `thinwire train [FILE] [--set k=v]...`: training on this machine — one replica, or R replicas as
// threads synchronised by an outer algorithm (DiLoCo) over ZeroMQ inproc:// — recorded in the run store.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>
#include <zmq.hpp>

#include "app/commands.h"
#include "app/progress.h"
#include "core/config_io.h"
#include "core/hash.h"
#include "core/network.h"
#include "core/timeline.h"
#include "engine/algo/diloco.h"
#include "engine/data/dataset.h"
#include "engine/train/trainer.h"
#include "remote/zmq_collective.h"
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

// What every replica of one run shares.
struct RunContext {
    RunConfig cfg;
    PreparedData data;
    RunStore* store = nullptr;
    int64_t run_id = 0;
    double unigram = 0;
    NetworkProfile net;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    double wall() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
};

struct ReplicaResult {
    Status status;
    int64_t steps = 0;
    bool stopped = false;
    double last_loss = NAN, last_val = NAN;
    double sim_s = 0;            // simulated clock at the end
    double compute_s = 0;        // total compute seconds
    double exposed_comm_s = 0;   // total simulated time spent waiting for or in outer syncs
    ByteCounters bytes;
};

// FNV-1a over the raw bytes of every parameter: replicas compare it before training.
uint64_t weights_checksum(Llama& model) {
    uint64_t h = kFnvOffset;
    for (auto& p : model->parameters()) {
        auto c = p.detach().contiguous();
        h = fnv1a64(std::string_view(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size()), h);
    }
    return h;
}

// Trains replica r of R. `coll` is null for a single replica; `progress` only for replica 0.
ReplicaResult run_replica(const RunContext& ctx, int r, Collective* coll, Progress* progress) {
    const RunConfig& cfg = ctx.cfg;
    const int R = static_cast<int>(cfg.outer.replicas);
    const uint64_t seed = static_cast<uint64_t>(cfg.run.seed);
    ReplicaResult out;
    Trainer trainer(cfg,
                    WindowLoader(ctx.data.train, select_spans(ctx.data, false, cfg.data.genres), cfg.model.seq_len,
                                 cfg.train.batch_size, seed, r, R),
                    WindowLoader(ctx.data.val, select_spans(ctx.data, true, cfg.data.genres), cfg.model.seq_len,
                                 cfg.train.batch_size, seed));
    const std::string node = R == 1 ? "local" : "replica-" + std::to_string(r);
    const WireDtype wire = cfg.outer.dtype == "bf16" ? WireDtype::kBf16 : WireDtype::kFp32;
    std::unique_ptr<DiLoCo> diloco;
    if (coll) {
        // Same seed → same weights; verified, since a silent mismatch would poison every round.
        const uint64_t mine = weights_checksum(trainer.model());
        std::vector<uint8_t> bytes(8);
        std::memcpy(bytes.data(), &mine, 8);
        auto all = coll->all_gather(bytes, LinkClass::kOuterSync);
        if (!all) return {all.status()};
        for (size_t i = 0; i < all->size(); ++i)
            if ((*all)[i] != bytes) return {Status::error("replica " + std::to_string(i) + " starts from other weights")};
        diloco = std::make_unique<DiLoCo>(trainer.model()->parameters(),
                                          DiLoCoConfig{cfg.outer.lr, cfg.outer.momentum, wire});
    }
    MetricBuffer metrics(*ctx.store, ctx.run_id);
    double sim_s = 0, round_compute_s = 0;
    int64_t start_step = -1, outer_step = -1;
    auto record = [&](int64_t step, const char* name, double v) {
        metrics.add({node, step, outer_step, ctx.wall(), sim_s, name, v});
    };
    TrainHooks hooks;
    hooks.on_step = [&](const StepReport& s) {
        if (start_step < 0) start_step = s.step - 1;
        sim_s += s.compute_s;  // compute advances the simulated clock by its measured time
        round_compute_s += s.compute_s;
        out.compute_s += s.compute_s;
        const double tps = cfg.train.batch_size * cfg.model.seq_len / s.compute_s;
        record(s.step, "train.loss", s.loss);
        record(s.step, "train.lr", s.lr);
        record(s.step, "train.grad_norm", s.grad_norm);
        record(s.step, "train.tokens", static_cast<double>(s.tokens));
        record(s.step, "train.compute_s", s.compute_s);
        record(s.step, "train.tokens_per_s", tps);
        out.last_loss = s.loss;
        if (progress) progress->update(s.step, start_step, s.loss, tps);
    };
    // Per round this replica's uplink carries its payload to each of the R−1 peers back to back.
    const uint64_t round_bytes = diloco ? static_cast<uint64_t>(R - 1) * DiLoCo::payload_bytes(diloco->num_params(), wire) : 0;
    const std::string sent_name = std::string("bytes.") + to_string(LinkClass::kOuterSync) + ".sent";
    const std::string recv_name = std::string("bytes.") + to_string(LinkClass::kOuterSync) + ".recv";
    if (diloco)
        hooks.after_step = [&](int64_t step) -> Status {
            if (step % cfg.outer.inner_steps != 0) return Status::ok();
            std::vector<double> clocks;
            if (Status st = diloco->sync(*coll, sim_s, &clocks); !st) return st;
            ++outer_step;
            // The same clock rule `runs retime` replays (core/timeline.h).
            const double end_s = round_end_s(clocks, ctx.net.outer, round_bytes);
            const double exposed_s = end_s - sim_s;
            sim_s = end_s;
            out.exposed_comm_s += exposed_s;
            record(step, "round.bytes", static_cast<double>(round_bytes));
            record(step, "round.compute_s", round_compute_s);
            record(step, "round.comm_s", transfer_s(ctx.net.outer, round_bytes));
            record(step, "round.exposed_comm_s", exposed_s);
            record(step, "round.utilisation", round_compute_s / (round_compute_s + exposed_s));
            round_compute_s = 0;
            const auto& b = coll->counters();
            const int k = static_cast<int>(LinkClass::kOuterSync);
            record(step, sent_name.c_str(), static_cast<double>(b.sent_bytes[k]));
            record(step, recv_name.c_str(), static_cast<double>(b.recv_bytes[k]));
            return Status::ok();
        };
    if (r == 0)
        hooks.on_eval = [&](int64_t step, double v) {
            out.last_val = v;
            record(step, "val.loss", v);
            char buf[112];
            std::snprintf(buf, sizeof buf, "step %lld: val loss %.4f (unigram %.4f)", (long long)step, v, ctx.unigram);
            if (progress) progress->line(buf);
        };
    hooks.on_event = [&](const std::string& kind, const std::string& text) {
        (void)ctx.store->add_event(ctx.run_id, {ctx.wall(), node, EventLevel::kInfo, kind, text});
    };
    hooks.should_stop = [] { return g_stop.load(); };
    try {
        out.status = trainer.run(hooks);
    } catch (const std::exception& e) {
        out.status = Status::error(node + ": " + e.what());
    }
    if (Status f = metrics.flush(); out.status && !f) out.status = Status::error("metrics not stored: " + f.message());
    out.steps = trainer.step_index();
    out.sim_s = sim_s;
    out.stopped = trainer.stopped_early();
    if (coll) out.bytes = coll->counters();
    return out;
}

std::vector<ReplicaResult> run_all_replicas(const RunContext& ctx, Progress& progress) {
    const int R = static_cast<int>(ctx.cfg.outer.replicas);
    if (ctx.cfg.outer.algorithm == "none") return {run_replica(ctx, 0, nullptr, &progress)};
    auto zctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> endpoints;
    for (int r = 0; r < R; ++r)
        endpoints.push_back("inproc://run" + std::to_string(ctx.run_id) + "-replica" + std::to_string(r));
    std::vector<std::unique_ptr<ZmqCollective>> colls;
    for (int r = 0; r < R; ++r) colls.push_back(unwrap(ZmqCollective::create(zctx, endpoints, r)));
    std::vector<ReplicaResult> results(static_cast<size_t>(R));
    std::vector<std::thread> threads;
    for (int r = 0; r < R; ++r)
        threads.emplace_back([&, r] { results[r] = run_replica(ctx, r, colls[r].get(), r == 0 ? &progress : nullptr); });
    for (auto& t : threads) t.join();
    return results;
}

int run_train(const Globals& g, const TrainArgs& a) {
    RunContext ctx;
    ctx.cfg = unwrap(load_config(a.file, a.sets));
    RunConfig& cfg = ctx.cfg;
    std::printf("preparing data (%s)\n", cfg.data.corpus.c_str());
    ctx.data = unwrap(prepare_data(cfg.data, &log_line));
    if (cfg.model.vocab_size == 0) cfg.model.vocab_size = ctx.data.vocab_size;
    if (cfg.model.vocab_size < ctx.data.vocab_size)
        throw Error("model.vocab_size " + std::to_string(cfg.model.vocab_size) + " is smaller than the data's " +
                    std::to_string(ctx.data.vocab_size));
    ctx.unigram = unigram_loss(*ctx.data.train, *ctx.data.val, cfg.model.vocab_size);
    ctx.net = unwrap(network_profile(cfg.network.profile, cfg.network.outer_bandwidth_bps, cfg.network.outer_latency_s));
    const int R = static_cast<int>(cfg.outer.replicas);
    // Replicas share the cores: each gets threads / R of them (at least one).
    const int64_t threads_total = cfg.run.threads;
    if (R > 1) cfg.run.threads = std::max<int64_t>(1, cfg.run.threads / R);

    RunStore store = unwrap(RunStore::open(g.db_path));
    ctx.store = &store;
    ctx.run_id = unwrap(store.create_run(cfg.run.name, "train", to_toml(cfg), config_hash(cfg), cfg.run.seed));
    std::printf("run %lld \"%s\": %s model, %lld parameters, %lld train tokens, %lld steps of %lld×%lld, %lld threads\n",
                (long long)ctx.run_id, cfg.run.name.c_str(), cfg.model.preset.c_str(),
                (long long)count_parameters(cfg.model), (long long)ctx.data.train->size(), (long long)cfg.train.steps,
                (long long)cfg.train.batch_size, (long long)cfg.model.seq_len, (long long)threads_total);
    if (cfg.outer.algorithm != "none")
        std::printf("outer: %s, %d replicas as threads (inproc ZeroMQ), H = %lld, lr %.3g, momentum %.3g, %s on the wire;\n"
                    "       simulated outer link %.3g Mb/s, %.3g ms (network.profile %s)\n",
                    cfg.outer.algorithm.c_str(), R, (long long)cfg.outer.inner_steps, cfg.outer.lr, cfg.outer.momentum,
                    cfg.outer.dtype.c_str(), ctx.net.outer.bandwidth_bps / 1e6, 1e3 * ctx.net.outer.latency_s,
                    cfg.network.profile.c_str());
    std::printf("unigram baseline (same tokenizer): %.4f nats/token\n", ctx.unigram);

    Progress progress(cfg.train.steps, cfg.train.log_every);
    g_stop = false;
    auto prev = std::signal(SIGINT, on_sigint);
    std::vector<ReplicaResult> results = run_all_replicas(ctx, progress);
    std::signal(SIGINT, prev);
    progress.finish();

    for (auto& r : results)
        if (!r.status) {
            (void)store.finish_run(ctx.run_id, RunStatus::kFailed, r.status.message());
            throw Error(r.status.message());
        }
    const ReplicaResult& lead = results[0];
    if (lead.stopped) {
        check(store.finish_run(ctx.run_id, RunStatus::kInterrupted, "interrupted at step " + std::to_string(lead.steps)));
        std::printf("interrupted at step %lld; run %lld marked interrupted\n", (long long)lead.steps, (long long)ctx.run_id);
        return 130;
    }
    check(store.finish_run(ctx.run_id, RunStatus::kFinished, ""));
    std::printf("\nrun %lld finished: %lld steps in %.1f s\n", (long long)ctx.run_id, (long long)lead.steps, ctx.wall());
    if (R > 1) {
        const int k = static_cast<int>(LinkClass::kOuterSync);
        std::printf("  %-10s %12s %16s %16s %12s %12s\n", "replica", "train loss", "outer sent (B)", "outer recv (B)",
                    "sim time (s)", "utilisation");
        for (int r = 0; r < R; ++r) {
            const auto& x = results[r];
            std::printf("  %-10d %12.4f %16llu %16llu %12.1f %11.1f%%\n", r, x.last_loss,
                        (unsigned long long)x.bytes.sent_bytes[k], (unsigned long long)x.bytes.recv_bytes[k], x.sim_s,
                        100 * x.compute_s / (x.compute_s + x.exposed_comm_s));
        }
    }
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
    return {sub, [&g, args] { return run_train(g, *args); }};
}

}  // namespace tw::cli
