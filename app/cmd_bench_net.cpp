// `thinwire bench transport`: one-way ZeroMQ throughput per transport and message size against
// memcpy. `thinwire bench outer`: a DiLoCo outer step's cost outside communication against one
// inner training step. Wiring and printing only; the measuring lives in remote/bench and engine/bench.
#include <CLI/CLI.hpp>
#include <zmq.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>

#include "app/commands.h"
#include "core/config_io.h"
#include "engine/algo/state_hash.h"
#include "engine/bench/outer_bench.h"
#include "engine/model/llama.h"
#include "engine/bench/throughput.h"
#include "remote/bench/transport_bench.h"
#include "remote/zmq_collective.h"

namespace tw::cli {
namespace {

// ---- bench transport ------------------------------------------------------------------------

struct TransportArgs {
    std::vector<std::string> sizes = {"1K", "16K", "256K", "1M", "4M", "16M", "64M"};
    std::vector<std::string> transports = {"inproc", "ipc", "tcp"};
    int64_t budget_mib = 256, max_msgs = 100000, min_msgs = 8;
    bool json = false;
    bool curve = false;  // each ipc/tcp cell also with CURVE, and the ratio to the plain one
};

// "4096", "16K", "16KiB", "1M", "64MiB" → bytes (binary multiples).
uint64_t parse_size_bytes(const std::string& text) {
    size_t end = 0;
    unsigned long long n = 0;
    try {
        n = std::stoull(text, &end);
    } catch (const std::exception&) {
        throw Error("--sizes: \"" + text + "\" is not a size (e.g. 4096, 16K, 1M)");
    }
    std::string unit = text.substr(end);
    for (auto& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    static const std::map<std::string, int> kShift = {{"", 0}, {"B", 0}, {"K", 10}, {"KIB", 10}, {"M", 20}, {"MIB", 20}, {"G", 30}, {"GIB", 30}};
    auto it = kShift.find(unit);
    if (it == kShift.end() || n == 0) throw Error("--sizes: \"" + text + "\" is not a size (e.g. 4096, 16K, 1M)");
    return static_cast<uint64_t>(n) << it->second;
}

std::string size_label(uint64_t bytes) {
    if (bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
    if (bytes % (1u << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
    return std::to_string(bytes) + " B";
}

void print_transport_row(const char* name, uint64_t msg_bytes, int64_t msgs, double bytes_per_s, double ratio) {
    std::printf("%-9s %8s %8lld %9.3f %12.0f %9.3f\n", name, size_label(msg_bytes).c_str(), (long long)msgs,
                bytes_per_s / 1e9, bytes_per_s / static_cast<double>(msg_bytes), ratio);
}

void print_transport_json(const TransportBenchResult& r) {
    std::printf("{\"bench\":\"transport\",\"transport\":\"%s\",\"msg_bytes\":%llu,\"msgs\":%lld,\"elapsed_s\":%.6f,"
                "\"curve\":%s,\"bytes_per_s\":%.0f,\"msgs_per_s\":%.1f,\"memcpy_bytes_per_s\":%.0f,\"ratio_memcpy\":%.5f}\n",
                to_string(r.transport), (unsigned long long)r.msg_bytes, (long long)r.msgs, r.elapsed_s,
                r.curve ? "true" : "false", r.bytes_per_s,
                r.msgs_per_s, r.memcpy_bytes_per_s, r.ratio_memcpy());
}

int run_transport(const TransportArgs& a) {
    std::vector<uint64_t> sizes;
    for (const auto& s : a.sizes) sizes.push_back(parse_size_bytes(s));
    std::vector<Transport> transports;
    for (const auto& t : a.transports) transports.push_back(unwrap(parse_transport(t)));
    TransportBenchConfig cfg;
    cfg.budget_bytes = static_cast<uint64_t>(a.budget_mib) << 20;
    cfg.max_msgs = a.max_msgs;
    cfg.min_msgs = a.min_msgs;
    // The reference first, once per size: every transport row divides by the same figure.
    std::map<uint64_t, double> memcpy_bps;
    for (uint64_t s : sizes) memcpy_bps[s] = measure_memcpy_bytes_per_s(s, cfg.budget_bytes);
    if (!a.json) {
        std::printf("one-way PUSH -> PULL, receiver reads each message's first and last byte; messages per cell =\n"
                    "clamp(%lld MiB / size, %lld, %lld); memcpy: same size, preallocated buffers, median of 3 batches\n\n",
                    (long long)a.budget_mib, (long long)a.min_msgs, (long long)a.max_msgs);
        std::printf("%-9s %8s %8s %9s %12s %9s\n", "transport", "message", "msgs", "GB/s", "msg/s", "x memcpy");
        for (uint64_t s : sizes)
            print_transport_row("memcpy", s, std::max<int64_t>(8, cfg.budget_bytes / s), memcpy_bps[s], 1.0);
    }
    for (Transport t : transports)
        for (uint64_t s : sizes) {
            TransportBenchResult r = unwrap(bench_transport(t, s, cfg));
            r.memcpy_bytes_per_s = memcpy_bps[s];
            if (a.json) print_transport_json(r);
            else print_transport_row(to_string(t), s, r.msgs, r.bytes_per_s, r.ratio_memcpy());
            std::fflush(stdout);
            if (!a.curve || t == Transport::kInproc) continue;
            // The same cell right after with CURVE: the ratio compares two neighbours in time.
            TransportBenchConfig keyed = cfg;
            keyed.curve = true;
            TransportBenchResult c = unwrap(bench_transport(t, s, keyed));
            c.memcpy_bytes_per_s = memcpy_bps[s];
            if (a.json) print_transport_json(c);
            else {
                const std::string name = std::string(to_string(t)) + "+curve";
                print_transport_row(name.c_str(), s, c.msgs, c.bytes_per_s, c.ratio_memcpy());
                std::printf("%-9s %8s %8s %9s %12s %9.3f  (CURVE / plain)\n", "", "", "", "", "",
                            c.bytes_per_s / r.bytes_per_s);
            }
            std::fflush(stdout);
        }
    return 0;
}

// ---- bench outer ----------------------------------------------------------------------------

struct OuterArgs {
    std::string preset = "tiny";
    int64_t vocab = 4096, batch = 16, threads = 2;
    std::vector<int> replicas = {1, 2, 4};
    std::vector<std::string> dtypes = {"fp32", "bf16"};
    int64_t rounds = 20, warmup = 2;
    int64_t inner_steps = 50;                   // H of the overhead / (H · inner step) column
    int64_t step_samples = 10, step_warmup = 3;  // the inner-step reference
    bool json = false;
};

// R replicas over a real ZmqCollective on inproc:// (one context, as `thinwire train` does).
OuterBenchResult outer_cell(const RunConfig& cfg, int R, const OuterBenchConfig& oc) {
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> endpoints;
    for (int r = 0; r < R; ++r)
        endpoints.push_back("inproc://bench-outer-" + oc.dtype + "-R" + std::to_string(R) + "-" + std::to_string(r));
    std::vector<std::unique_ptr<ZmqCollective>> colls;
    std::vector<Collective*> members;
    for (int r = 0; r < R; ++r) {
        colls.push_back(unwrap(ZmqCollective::create(ctx, endpoints, r)));
        members.push_back(colls.back().get());
    }
    return unwrap(bench_outer(cfg, members, oc));
}

void print_outer_row(const OuterBenchResult& r, double step_s, int64_t H, bool json) {
    const double ratio = r.overhead_s / step_s, ratio_h = r.overhead_s / (static_cast<double>(H) * step_s);
    if (json) {
        std::printf("{\"bench\":\"outer\",\"replicas\":%d,\"dtype\":\"%s\",\"params\":%lld,\"payload_bytes\":%llu,"
                    "\"samples\":%lld,\"encode_s\":%.6f,\"apply_s\":%.6f,\"overhead_s\":%.6f,\"comm_s\":%.6f,"
                    "\"inner_step_s\":%.6f,\"inner_steps\":%lld,\"overhead_per_step\":%.5f,\"overhead_per_round\":%.6f}\n",
                    r.replicas, r.dtype.c_str(), (long long)r.params, (unsigned long long)r.payload_bytes,
                    (long long)r.samples, r.encode_s, r.apply_s, r.overhead_s, r.comm_s, step_s, (long long)H, ratio, ratio_h);
        return;
    }
    std::printf("%2d %-5s %12llu %10.2f %9.2f %12.2f %9.2f %12.4f %14.5f\n", r.replicas, r.dtype.c_str(),
                (unsigned long long)r.payload_bytes, 1e3 * r.encode_s, 1e3 * r.apply_s, 1e3 * r.overhead_s,
                1e3 * r.comm_s, ratio, ratio_h);
}

int run_outer(const OuterArgs& a) {
    RunConfig cfg = unwrap(parse_config("", "<bench>", {"model.preset=\"" + a.preset + "\""}));
    cfg.model.vocab_size = a.vocab;
    cfg.run.threads = a.threads;
    cfg.train.batch_size = a.batch;
    // The reference: one inner step of the same model, as `bench train` measures it (median).
    const TrainBenchResult inner = bench_train(cfg, a.step_samples, a.step_warmup);
    const double step_s = inner.step_ms / 1e3;
    if (!a.json) {
        std::printf("DiLoCo outer step outside communication, preset %s (%lld parameters), %lld timed rounds after %lld "
                    "warm-up, inproc ZmqCollective; medians over replicas x rounds, ms\n",
                    a.preset.c_str(), (long long)inner.params, (long long)a.rounds, (long long)a.warmup);
        std::printf("reference: one inner step, batch %lld x %lld, %lld threads: %.2f ms (median of %lld)\n\n",
                    (long long)a.batch, (long long)cfg.model.seq_len, (long long)a.threads, inner.step_ms,
                    (long long)a.step_samples);
    }
    // What round agreement adds per round (per step for DDP): one hash of the weights.
    {
        ModelConfig m = cfg.model;
        Llama model(m, static_cast<uint64_t>(cfg.run.seed));
        const auto params = model->parameters();
        std::vector<double> times;
        uint64_t sink = 0;
        for (int i = 0; i < 51; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            sink ^= state_hash(params, static_cast<uint64_t>(i));
            times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        std::nth_element(times.begin(), times.begin() + 25, times.end());
        const double hash_ms = times[25];
        if (a.json)
            std::printf("{\"bench\":\"state_hash\",\"params\":%lld,\"ms\":%.4f,\"ratio_inner_step\":%.6f}\n",
                        (long long)inner.params, hash_ms, hash_ms / inner.step_ms);
        else
            std::printf("round agreement: state hash of the weights %.3f ms (median of 51) = %.5f x one inner step "
                        "[%016llx]\n\n",
                        hash_ms, hash_ms / inner.step_ms, static_cast<unsigned long long>(sink));
    }
    if (!a.json)
        std::printf(" R dtype  bytes/peer  encode ms  apply ms  overhead ms   comm ms  ovh/step  ovh/(%lld steps)\n",
                    (long long)a.inner_steps);
    for (int R : a.replicas)
        for (const auto& dt : a.dtypes) {
            OuterBenchConfig oc;
            oc.rounds = a.rounds;
            oc.warmup_rounds = a.warmup;
            oc.dtype = dt;
            print_outer_row(outer_cell(cfg, R, oc), step_s, a.inner_steps, a.json);
            std::fflush(stdout);
        }
    return 0;
}

}  // namespace

std::vector<Command> add_bench_net(CLI::App& bench) {
    auto* tr = bench.add_subcommand("transport", "One-way ZeroMQ throughput (inproc, ipc, tcp) against memcpy");
    auto ta = std::make_shared<TransportArgs>();
    tr->add_option("--sizes", ta->sizes, "message sizes, e.g. 1K,16K,1M,64M")->delimiter(',')->capture_default_str();
    tr->add_option("--transports", ta->transports, "inproc,ipc,tcp")->delimiter(',')->capture_default_str();
    tr->add_option("--budget-mib", ta->budget_mib, "payload per cell; messages = budget / size")->capture_default_str();
    tr->add_option("--max-msgs", ta->max_msgs, "at most this many messages per cell")->capture_default_str();
    tr->add_option("--min-msgs", ta->min_msgs, "at least this many messages per cell")->capture_default_str();
    tr->add_flag("--json", ta->json, "one JSON line per cell");
    tr->add_flag("--curve", ta->curve, "also run every ipc/tcp cell with CurveZMQ and print the ratio to plain");

    auto* ou = bench.add_subcommand("outer", "DiLoCo outer-step overhead outside communication vs an inner step");
    auto oa = std::make_shared<OuterArgs>();
    ou->add_option("--preset", oa->preset, "tiny | small | base | paper178m")->capture_default_str();
    ou->add_option("--vocab", oa->vocab, "vocabulary size")->capture_default_str();
    ou->add_option("--replicas", oa->replicas, "replica counts, e.g. 1,2,4")->delimiter(',')->capture_default_str();
    ou->add_option("--dtypes", oa->dtypes, "fp32,bf16")->delimiter(',')->capture_default_str();
    ou->add_option("--rounds", oa->rounds, "timed outer rounds")->capture_default_str();
    ou->add_option("--warmup", oa->warmup, "untimed outer rounds first")->capture_default_str();
    ou->add_option("--inner-steps", oa->inner_steps, "H for the overhead / (H x inner step) column")->capture_default_str();
    ou->add_option("--batch", oa->batch, "sequences per inner step")->capture_default_str();
    ou->add_option("--threads", oa->threads, "compute threads")->capture_default_str();
    ou->add_option("--step-samples", oa->step_samples, "timed inner steps for the reference")->capture_default_str();
    ou->add_flag("--json", oa->json, "one JSON line per (replicas, dtype)");
    return {{tr, [ta] { return run_transport(*ta); }}, {ou, [oa] { return run_outer(*oa); }}};
}

}  // namespace tw::cli
