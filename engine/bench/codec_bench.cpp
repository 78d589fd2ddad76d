// Codec throughput: medians of encode, decode and their sum per (shape, codec), one thread.
#include "engine/bench/codec_bench.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/status.h"
#include "engine/codec/codec.h"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

// Calls round(false) for the warm-up, then round(true) for the timed repetitions; each phase runs
// at least its count of rounds and at least cfg.min_time_s.
template <class Round>
void repeat(const CodecBenchConfig& cfg, Round&& round) {
    for (bool timed : {false, true}) {
        const auto t0 = Clock::now();
        const int64_t count = timed ? cfg.reps : cfg.warmup;
        for (int64_t r = 0; r < count || since(t0) < cfg.min_time_s; ++r) round(timed);
    }
}

CodecBenchRow memcpy_row(const torch::Tensor& x, const CodecBenchConfig& cfg) {
    const size_t bytes = static_cast<size_t>(x.numel()) * 4;
    std::vector<uint8_t> dst(bytes, 1);  // touched once: no page faults inside the timing
    std::vector<double> t;
    repeat(cfg, [&](bool timed) {
        const auto t0 = Clock::now();
        std::memcpy(dst.data(), x.data_ptr<float>(), bytes);
        const double s = since(t0);
        if (timed) t.push_back(s);
    });
    CodecBenchRow row;
    row.codec = "memcpy";
    row.wire_bytes = bytes;
    row.encode_s = row.total_s = median(t);
    return row;
}

CodecBenchRow codec_row(const Codec& codec, const std::string& label, const torch::Tensor& x,
                        const CodecBenchConfig& cfg) {
    std::vector<uint8_t> wire;
    std::vector<double> enc, dec, tot;
    repeat(cfg, [&](bool timed) {
        wire.clear();
        torch::Tensor out;
        const auto t0 = Clock::now();
        check(codec.encode(x, wire));
        const double e = since(t0);
        const auto t1 = Clock::now();
        size_t off = 0;
        check(codec.decode(wire.data(), wire.size(), off, x.sizes(), out));
        const double d = since(t1);
        if (timed) {
            enc.push_back(e);
            dec.push_back(d);
            tot.push_back(e + d);
        }
    });
    CodecBenchRow row;
    row.codec = label;
    row.wire_bytes = wire.size();
    row.encode_s = median(enc);
    row.decode_s = median(dec);
    row.total_s = median(tot);
    return row;
}

}  // namespace

std::vector<CodecBenchRow> bench_codecs(const CodecBenchConfig& cfg,
                                        const std::function<void(const CodecBenchRow&)>& on_row) {
    torch::set_num_threads(1);
    torch::NoGradGuard no_grad;
    std::vector<std::pair<std::string, std::unique_ptr<Codec>>> codecs;
    codecs.emplace_back("fp32", make_dense_codec(false));
    codecs.emplace_back("bf16", make_dense_codec(true));
    codecs.emplace_back("int8", make_int8_codec());
    codecs.emplace_back("fp4", make_fp4_codec());
    for (int64_t k : cfg.sparse_k)
        codecs.emplace_back("sparseloco k=" + std::to_string(k), make_sparseloco_codec({64, k}));
    std::vector<CodecBenchRow> rows;
    for (auto [r, c] : cfg.shapes) {
        auto gen = at::detail::createCPUGenerator(cfg.seed);
        const auto x = at::randn({r, c}, gen);
        auto emit = [&](CodecBenchRow row) {
            row.rows = r;
            row.cols = c;
            row.numel = r * c;
            if (on_row) on_row(row);
            rows.push_back(row);
        };
        emit(memcpy_row(x, cfg));
        for (auto& [label, codec] : codecs) emit(codec_row(*codec, label, x, cfg));
    }
    return rows;
}

}  // namespace tw
