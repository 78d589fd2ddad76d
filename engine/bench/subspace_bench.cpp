// Subspace boundary cost against stage compute: medians of runs, one configured thread count.
#include "engine/bench/subspace_bench.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>

#include "core/assert.h"
#include "engine/model/llama.h"
#include "engine/pipeline/subspace.h"
#include "engine/runtime/threads.h"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

Status validate(const SubspaceBenchConfig& c) {
    std::string problems;
    auto add = [&](const std::string& p) { problems += (problems.empty() ? "" : "; ") + p; };
    if (c.model.vocab_size <= 0) add("model.vocab_size must be set");
    if (c.n_stages < 2 || c.n_stages > c.model.n_layer)
        add(std::to_string(c.n_stages) + " stages need 2.." + std::to_string(c.model.n_layer) + " (model.n_layer)");
    if (c.batch < 1) add("batch " + std::to_string(c.batch) + " must be ≥ 1");
    if (c.runs < 1) add("runs " + std::to_string(c.runs) + " must be ≥ 1");
    for (int64_t k : c.ranks)
        if (k < 1 || k > c.model.d_model)
            add("rank " + std::to_string(k) + " is outside 1..d_model " + std::to_string(c.model.d_model));
    return problems.empty() ? Status::ok() : Status::error("bench subspace: " + problems);
}

// Median stage forward + backward over cfg.runs after two untimed ones.
double time_stage(Llama& stage, const torch::Tensor& ids, const torch::Tensor& upstream, int64_t runs) {
    std::vector<double> t;
    for (int64_t r = -2; r < runs; ++r) {
        for (auto& p : stage->parameters()) p.mutable_grad() = torch::Tensor();
        const auto t0 = Clock::now();
        stage->forward(ids).backward(upstream);
        if (r >= 0) t.push_back(ms_since(t0));
    }
    return median(t);
}

struct Inputs {
    torch::Tensor x, g, ids, t_fixed;
    int64_t B, T, d, V;
};

SubspaceBenchRow time_codec(const Inputs& in, int64_t k, WireDtype c, const SubspaceBenchConfig& cfg) {
    const torch::Tensor u = k > 0 ? subspace_basis(in.d, k, cfg.seed) : torch::Tensor();
    const torch::Tensor t_fixed = k > 0 ? in.t_fixed : torch::Tensor();
    std::vector<double> enc, dec, tot;
    SubspaceBenchRow row;
    for (int64_t r = -1; r < cfg.runs; ++r) {  // run −1 warms up
        double e = 0, dsum = 0;
        int64_t rounds = 0;
        const auto start = Clock::now();
        do {
            auto t0 = Clock::now();
            auto fwd = encode_activations(in.x, in.ids, t_fixed, u, c, in.V);
            auto t1 = Clock::now();
            auto x = decode_activations(fwd, in.B, in.T, in.d, t_fixed, u, c, in.V, nullptr);
            auto t2 = Clock::now();
            auto bwd = encode_gradient(in.g, u, c);
            auto t3 = Clock::now();
            auto g = decode_gradient(bwd, in.B, in.T, in.d, u, c);
            auto t4 = Clock::now();
            TW_ASSERT(x.is_ok() && g.is_ok());
            using Ms = std::chrono::duration<double, std::milli>;
            e += Ms(t1 - t0).count() + Ms(t3 - t2).count();
            dsum += Ms(t2 - t1).count() + Ms(t4 - t3).count();
            row.forward_bytes = fwd.size();
            row.backward_bytes = bwd.size();
            ++rounds;
        } while (ms_since(start) < 1e3 * cfg.min_time_s);
        if (r < 0) continue;
        enc.push_back(e / static_cast<double>(rounds));
        dec.push_back(dsum / static_cast<double>(rounds));
        tot.push_back((e + dsum) / static_cast<double>(rounds));
    }
    row.rank = k;
    row.dtype = to_string(c);
    row.encode_ms = median(enc);
    row.decode_ms = median(dec);
    row.codec_ms = median(tot);
    row.dense_bytes = static_cast<uint64_t>(in.B * in.T * in.d) * 4;
    return row;
}

}  // namespace

Result<SubspaceBenchResult> bench_subspace(const SubspaceBenchConfig& cfg,
                                           const std::function<void(const SubspaceBenchRow&)>& on_row) {
    if (Status s = validate(cfg); !s) return s;
    SubspaceBenchResult res;
    res.threads = configure_compute_threads(cfg.threads);
    const ModelConfig& m = cfg.model;
    Llama stage(m, cfg.seed, stage_spec(m, 0, cfg.n_stages));
    Inputs in{{}, {}, {}, {}, cfg.batch, m.seq_len, m.d_model, m.vocab_size};
    auto gen = at::make_generator<at::CPUGeneratorImpl>(cfg.seed + 1);
    in.ids = torch::randint(in.V, {in.B, in.T}, gen, torch::kLong);
    in.g = at::normal(0.0, 1.0, {in.B, in.T, in.d}, gen, torch::kFloat32);
    in.t_fixed = frozen_embedding(in.V, in.d, cfg.seed);

    res.B = in.B;
    res.T = in.T;
    res.d = in.d;
    res.stage_layers = stage->spec().last_layer - stage->spec().first_layer;
    res.stage_params = stage->num_parameters();
    res.stage_ms = time_stage(stage, in.ids, in.g, cfg.runs);
    {
        torch::NoGradGuard no_grad;
        in.x = stage->forward(in.ids);
    }

    auto emit = [&](SubspaceBenchRow row) {
        row.stage_ms = res.stage_ms;
        row.fraction = res.stage_ms > 0 ? row.codec_ms / res.stage_ms : 0;
        if (on_row) on_row(row);
        res.rows.push_back(row);
    };
    emit(time_codec(in, 0, WireDtype::kFp32, cfg));
    for (int64_t k : cfg.ranks)
        for (WireDtype c : {WireDtype::kFp32, WireDtype::kBf16, WireDtype::kInt8}) emit(time_codec(in, k, c, cfg));
    return res;
}

}  // namespace tw
