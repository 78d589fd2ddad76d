// `thinwire bench transport`: one-way ZeroMQ throughput per transport and message size against
// memcpy. Wiring and printing only; the measuring lives in remote/bench.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>

#include "app/commands.h"
#include "app/list_option.h"
#include "engine/bench/throughput.h"
#include "remote/bench/transport_bench.h"

namespace tw::cli {
namespace {

// ---- bench transport ------------------------------------------------------------------------

struct TransportArgs {
    std::vector<std::string> sizes = {"1K", "16K", "256K", "1M", "4M", "16M", "64M"};
    std::vector<std::string> transports = {"inproc", "ipc", "tcp"};
    int64_t budget_mib = 256, max_msgs = 100000, min_msgs = 8;
    bool json = false;
    bool curve = false;  // each ipc/tcp cell also with CURVE, and the ratio to the plain one
    bool relay = false;  // each tcp cell also through a relay on loopback, and the ratio to direct
    bool outbox = false;  // each tcp+curve cell also through a mesh outbox, and the ratio to direct
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
    std::printf("%-16s %8s %8lld %9.3f %12.0f %9.3f\n", name, size_label(msg_bytes).c_str(), (long long)msgs,
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
        std::printf("%-16s %8s %8s %9s %12s %9s\n", "transport", "message", "msgs", "GB/s", "msg/s", "x memcpy");
        for (uint64_t s : sizes)
            print_transport_row("memcpy", s, std::max<int64_t>(8, cfg.budget_bytes / s), memcpy_bps[s], 1.0);
    }
    // Runs `via` right after its direct neighbour `d` and prints it with the ratio of the two.
    const auto print_beside_direct = [&](const char* name, const char* what, const TransportBenchResult& d,
                                         const TransportBenchConfig& via) {
        TransportBenchResult v = unwrap(bench_transport(d.transport, d.msg_bytes, via));
        v.memcpy_bytes_per_s = memcpy_bps[d.msg_bytes];
        print_transport_row(name, d.msg_bytes, v.msgs, v.bytes_per_s, v.ratio_memcpy());
        std::printf("%-16s %8s %8s %9s %12s %9.3f  (%s / direct)\n", "", "", "", "", "", v.bytes_per_s / d.bytes_per_s,
                    what);
    };
    for (Transport t : transports)
        for (uint64_t s : sizes) {
            TransportBenchResult r = unwrap(bench_transport(t, s, cfg));
            r.memcpy_bytes_per_s = memcpy_bps[s];
            if (a.json) print_transport_json(r);
            else print_transport_row(to_string(t), s, r.msgs, r.bytes_per_s, r.ratio_memcpy());
            if (a.relay && t == Transport::kTcp)
                for (bool keyed : {false, true}) {
                    if (keyed && !a.curve) continue;
                    // Direct and relayed neighbours in time, with and without CURVE end to end.
                    TransportBenchConfig direct = cfg, via = cfg;
                    direct.curve = via.curve = keyed;
                    via.relayed = true;
                    const TransportBenchResult d = keyed ? unwrap(bench_transport(t, s, direct)) : r;
                    print_beside_direct(keyed ? "tcp+curve+relay" : "tcp+relay", "relayed", d, via);
                }
            if (a.outbox && a.curve && t == Transport::kTcp) {
                // A public member's way to a relayed one: its outbox, which the receiver dialled.
                TransportBenchConfig direct = cfg, via = cfg;
                direct.curve = via.curve = via.outbox = true;
                print_beside_direct("tcp+curve+outbox", "outbox", unwrap(bench_transport(t, s, direct)), via);
            }
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
                std::printf("%-16s %8s %8s %9s %12s %9.3f  (CURVE / plain)\n", "", "", "", "", "",
                            c.bytes_per_s / r.bytes_per_s);
            }
        }
    return 0;
}

}  // namespace

Command add_bench_transport(CLI::App& bench) {
    auto* tr = bench.add_subcommand("transport", "One-way ZeroMQ throughput (inproc, ipc, tcp) against memcpy");
    auto ta = std::make_shared<TransportArgs>();
    add_list_option(*tr, "--sizes", ta->sizes, "message sizes, e.g. 1K,16K,1M,64M");
    add_list_option(*tr, "--transports", ta->transports, "inproc,ipc,tcp");
    tr->add_option("--budget-mib", ta->budget_mib, "payload per cell; messages = budget / size")->capture_default_str();
    tr->add_option("--max-msgs", ta->max_msgs, "at most this many messages per cell")->capture_default_str();
    tr->add_option("--min-msgs", ta->min_msgs, "at least this many messages per cell")->capture_default_str();
    tr->add_flag("--json", ta->json, "one JSON line per cell");
    tr->add_flag("--curve", ta->curve, "also run every ipc/tcp cell with CurveZMQ and print the ratio to plain");
    tr->add_flag("--relay", ta->relay,
                 "also run every tcp cell (and with --curve, tcp+curve) through a relay on loopback and print the ratio to direct");
    tr->add_flag("--outbox", ta->outbox,
                 "with --curve: also run every tcp cell through a mesh outbox the receiver dials (a public member's way to "
                 "a relayed one) and print the ratio to direct");

    return {tr, [ta] { return run_transport(*ta); }};
}

}  // namespace tw::cli
