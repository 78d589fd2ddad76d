// `thinwire bench codec`: encode + decode throughput of every outer-sync codec on one core against
// memcpy, and the SparseLoCo codec against its PyTorch reference (tests/bench/reference_sparseloco.py,
// run here as a child process with one thread). Wiring and printing only; the measuring lives in
// engine/bench/codec_bench.*.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <memory>

#include "app/commands.h"
#include "app/list_option.h"
#include "core/status.h"
#include "engine/bench/codec_bench.h"
#include "engine/bench/codec_reference.h"

namespace tw::cli {
namespace {

struct CodecArgs {
    std::vector<std::string> shapes = {"1024x1024", "2048x2048", "4096x4096", "8192x8192"};
    std::vector<int64_t> ks = {64, 128};
    int64_t reps = 3, warmup = 1;
    double min_time_s = 0.25;
    std::string reference = "tests/bench/reference_sparseloco.py";
    std::string python = "/usr/bin/python3";
    bool no_reference = false, json = false;
};

std::pair<int64_t, int64_t> parse_shape(const std::string& s) {
    const auto x = s.find_first_of("xX");
    try {
        if (x == std::string::npos) throw std::invalid_argument(s);
        size_t end_r = 0, end_c = 0;
        const int64_t r = std::stoll(s.substr(0, x), &end_r), c = std::stoll(s.substr(x + 1), &end_c);
        if (end_r != x || end_c != s.size() - x - 1 || r <= 0 || c <= 0) throw std::invalid_argument(s);
        return {r, c};
    } catch (const std::exception&) {
        throw Error("--shapes: \"" + s + "\" is not ROWSxCOLS (e.g. 4096x4096)");
    }
}

std::string elems_label(int64_t n) {
    if (n % (1 << 20) == 0) return std::to_string(n >> 20) + "M";
    if (n % (1 << 10) == 0) return std::to_string(n >> 10) + "K";
    return std::to_string(n);
}

int run_codec_bench(const CodecArgs& a) {
    CodecBenchConfig cfg;
    cfg.shapes.clear();
    for (const auto& s : a.shapes) cfg.shapes.push_back(parse_shape(s));
    for (int64_t k : a.ks)
        if (k < 2 || k % 2 || k > 4096) throw Error("--ks: k = " + std::to_string(k) + " must be even and in 2..4096");
    cfg.sparse_k = a.ks;
    cfg.reps = a.reps;
    cfg.warmup = a.warmup;
    cfg.min_time_s = a.min_time_s;
    if (!a.json) std::printf("running the PyTorch reference (%s, 1 thread) ...\n", a.python.c_str());
    std::map<CodecReferenceKey, CodecReferenceCell> ref;
    if (!a.no_reference)
        ref = run_codec_reference({a.reference, a.python, cfg.shapes, a.ks, a.reps, a.warmup, a.min_time_s});
    if (!a.json) {
        std::printf(
            "encode + decode of N(0,1) fp32 matrices, 1 thread (torch::set_num_threads(1) here, "
            "torch.set_num_threads(1) in the reference); medians of >= %lld timed rounds and >= %.2f s, "
            "after >= %lld warm-up rounds and >= %.2f s\nGB/s = fp32 input bytes / (encode + decode); memcpy "
            "copies those bytes once; decode allocates its output tensor\n\n",
            (long long)a.reps, a.min_time_s, (long long)a.warmup, a.min_time_s);
        std::printf("%-10s %5s %-18s %11s %8s %9s %9s %8s %9s %9s\n", "shape", "elems", "codec", "wire B", "x smaller",
                    "enc ms", "dec ms", "GB/s", "x memcpy", "x pytorch");
    }
    double memcpy_gbps = 0;
    auto on_row = [&](const CodecBenchRow& r) {
        if (r.codec == "memcpy") memcpy_gbps = r.gbps();
        const std::string shape = std::to_string(r.rows) + "x" + std::to_string(r.cols);
        const double smaller = static_cast<double>(4 * r.numel) / static_cast<double>(r.wire_bytes);
        double ref_ratio = 0;
        const CodecReferenceCell* rc = nullptr;
        if (r.codec.rfind("sparseloco k=", 0) == 0) {
            const int64_t k = std::stoll(r.codec.substr(13));
            auto it = ref.find({r.rows, r.cols, k});
            if (it != ref.end()) {
                rc = &it->second;
                ref_ratio = rc->total_s / r.total_s;
            }
        }
        if (a.json) {
            std::printf(
                "{\"bench\":\"codec\",\"codec\":\"%s\",\"rows\":%lld,\"cols\":%lld,\"numel\":%lld,\"wire_bytes\":%llu,"
                "\"encode_s\":%.6f,\"decode_s\":%.6f,\"total_s\":%.6f,\"gbps\":%.4f,\"ratio_memcpy\":%.4f,"
                "\"ratio_pytorch\":%.3f}\n",
                r.codec.c_str(), (long long)r.rows, (long long)r.cols, (long long)r.numel,
                (unsigned long long)r.wire_bytes, r.encode_s, r.decode_s, r.total_s, r.gbps(),
                memcpy_gbps > 0 ? r.gbps() / memcpy_gbps : 0, ref_ratio);
        } else {
            std::printf("%-10s %5s %-18s %11llu %8.1fx %9.2f %9.2f %8.3f %9.3f", shape.c_str(),
                        elems_label(r.numel).c_str(), r.codec.c_str(), (unsigned long long)r.wire_bytes, smaller,
                        1e3 * r.encode_s, 1e3 * r.decode_s, r.gbps(), memcpy_gbps > 0 ? r.gbps() / memcpy_gbps : 0);
            if (rc) std::printf(" %8.2fx", ref_ratio);
            std::printf("\n");
            if (rc) {
                const double g = 4.0 * static_cast<double>(r.numel) / rc->total_s / 1e9;
                std::printf("%-10s %5s %-18s %11s %9s %9.2f %9.2f %8.3f %9.3f %8.2fx\n", "", "",
                            ("pytorch ref k=" + r.codec.substr(13)).c_str(), "-", "", 1e3 * rc->encode_s,
                            1e3 * rc->decode_s, g, memcpy_gbps > 0 ? g / memcpy_gbps : 0, 1.0);
            }
        }
    };
    bench_codecs(cfg, on_row);
    return 0;
}

}  // namespace

Command add_bench_codec(CLI::App& bench) {
    auto* cmd =
        bench.add_subcommand("codec", "Codec encode+decode GB/s on one core vs memcpy and the PyTorch reference");
    auto a = std::make_shared<CodecArgs>();
    add_list_option(*cmd, "--shapes", a->shapes, "ROWSxCOLS fp32 matrices");
    add_list_option(*cmd, "--ks", a->ks, "SparseLoCo k per 64x64 tile");
    cmd->add_option("--reps", a->reps, "timed repetitions per cell (median)")->capture_default_str();
    cmd->add_option("--warmup", a->warmup, "untimed repetitions first")->capture_default_str();
    cmd->add_option("--min-time", a->min_time_s, "seconds each of warm-up and timing lasts at least")
        ->capture_default_str();
    cmd->add_option("--reference", a->reference, "the PyTorch reference script")->capture_default_str();
    cmd->add_option("--python", a->python, "interpreter with torch (Debian's python3-torch)")->capture_default_str();
    cmd->add_flag("--no-reference", a->no_reference, "skip the PyTorch reference");
    cmd->add_flag("--json", a->json, "one JSON line per cell");
    return {cmd, [a] { return run_codec_bench(*a); }};
}

}  // namespace tw::cli
