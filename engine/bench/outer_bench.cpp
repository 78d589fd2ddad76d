// DiLoCo outer-step overhead benchmark; see outer_bench.h.
#include "engine/bench/outer_bench.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <thread>

#include "engine/algo/diloco.h"
#include "engine/model/llama.h"
#include "engine/runtime/threads.h"

namespace tw {
namespace {

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
}

// What one replica thread hands back: its timings of every timed round, or the error that ended it.
struct ReplicaTimings {
    std::vector<SyncTimings> rounds;
    int64_t params = 0;
    std::string error;
};

// One replica: model, DiLoCo, then warm-up + timed rounds over `c`.
void run_replica(const RunConfig& cfg, const OuterBenchConfig& oc, Collective& c, ReplicaTimings& out) {
    try {
        Llama model(cfg.model, static_cast<uint64_t>(cfg.run.seed));  // same seed: same θ on every replica
        auto params = model->parameters();
        const WireDtype wire = oc.dtype == "bf16" ? WireDtype::kBf16 : WireDtype::kFp32;
        DiLoCo d(params, DiLoCoConfig{oc.lr_outer, oc.momentum, wire});
        out.params = d.num_params();
        // Stands in for H inner steps: what the outer step costs does not depend on the values.
        torch::NoGradGuard no_grad;
        // Own generator per replica: the global one is shared by the threads.
        auto gen = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(cfg.run.seed) + 1 + c.rank());
        std::vector<torch::Tensor> nudge;
        for (auto& p : params) nudge.push_back(1e-3 * torch::randn(p.sizes(), gen));
        for (int64_t k = 0; k < oc.warmup_rounds + oc.rounds; ++k) {
            for (size_t i = 0; i < params.size(); ++i) params[i].add_(nudge[i]);
            if (Status st = d.sync(c); !st) { out.error = st.message(); return; }
            if (k >= oc.warmup_rounds) out.rounds.push_back(d.last_timings());
        }
    } catch (const std::exception& e) {
        out.error = e.what();
    }
}

}  // namespace

Result<OuterBenchResult> bench_outer(const RunConfig& cfg, const std::vector<Collective*>& members,
                                     const OuterBenchConfig& oc) {
    using R = Result<OuterBenchResult>;
    if (oc.dtype != "fp32" && oc.dtype != "bf16") return R::error("bench outer: dtype \"" + oc.dtype + "\" (fp32 | bf16)");
    if (members.empty() || oc.rounds < 1) return R::error("bench outer: needs at least one replica and one round");
    configure_compute_threads(static_cast<int>(cfg.run.threads));
    std::vector<ReplicaTimings> per(members.size());
    std::vector<std::thread> threads;
    for (size_t r = 0; r < members.size(); ++r)
        threads.emplace_back([&, r] { run_replica(cfg, oc, *members[r], per[r]); });
    for (auto& t : threads) t.join();

    OuterBenchResult res;
    res.replicas = static_cast<int>(members.size());
    res.dtype = oc.dtype;
    res.params = per[0].params;
    res.payload_bytes = DiLoCo::payload_bytes(res.params, oc.dtype == "bf16" ? WireDtype::kBf16 : WireDtype::kFp32);
    std::vector<double> encode, apply, overhead, comm;
    for (size_t r = 0; r < per.size(); ++r) {
        if (!per[r].error.empty()) return R::error("bench outer: replica " + std::to_string(r) + ": " + per[r].error);
        for (const SyncTimings& t : per[r].rounds) {
            encode.push_back(t.encode_s);
            apply.push_back(t.apply_s);
            overhead.push_back(t.encode_s + t.apply_s);
            comm.push_back(t.comm_s);
        }
    }
    res.samples = static_cast<int64_t>(encode.size());
    res.encode_s = median(encode);
    res.apply_s = median(apply);
    res.overhead_s = median(overhead);
    res.comm_s = median(comm);
    return res;
}

}  // namespace tw
