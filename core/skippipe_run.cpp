// SkipPipe as a run (skippipe.h, "SkipPipe as a run"): the [skippipe] section's defaults and checks,
// the blocks and parameters of each stage, and a step's timing from the scheduler.
#include "core/skippipe.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <utility>

#include "core/algorithm.h"
#include "core/assert.h"
#include "core/routing.h"
#include "core/run_kind_parts.h"

namespace tw {

// ---- SkipPipe as a run ---------------------------------------------------------------------------

void resolve_skippipe_defaults(SkipPipeConfig& c) {
    if (!c.enabled()) return;
    const int64_t S = c.stages;
    if (c.path_stages == 0) c.path_stages = std::max<int64_t>(2, S - 1);
    if (c.memory_per_node == 0) c.memory_per_node = c.micro_batches;
    if (c.eval_paths.empty()) {
        std::vector<int64_t> stride, first_half;
        for (int64_t s = 0; s < S; s += 2) stride.push_back(s);
        for (int64_t s = 0; s < std::max<int64_t>(1, S / 2); ++s) first_half.push_back(s);
        c.eval_paths = {stride, first_half};
    }
    std::vector<int64_t> in_order(static_cast<size_t>(S));
    std::iota(in_order.begin(), in_order.end(), 0);
    std::vector<std::vector<int64_t>> unique;
    for (auto& e : c.eval_paths)
        if (e != in_order && std::find(unique.begin(), unique.end(), e) == unique.end()) unique.push_back(e);
    c.eval_paths = unique;
}

void validate_skippipe(const RunConfig& c, std::vector<std::string>& out) {
    const SkipPipeConfig& k = c.skippipe;
    if (!k.enabled()) {
        if (k.stages == 1) out.push_back("skippipe.stages 1: 0 (no SkipPipe) or at least 2 (stage 0 plus one more)");
        return;
    }
    const int64_t S = k.stages;
    SkipPipeProblem probe;  // the scheduler's own checks, with placeholder times
    probe.stages = static_cast<int>(S), probe.replicas = static_cast<int>(k.replicas);
    probe.path_stages = static_cast<int>(k.path_stages), probe.max_swaps = static_cast<int>(k.max_swaps);
    probe.micro_batches = static_cast<int>(k.micro_batches), probe.memory_per_node = static_cast<int>(k.memory_per_node);
    probe.fwd_s.assign(static_cast<size_t>(S), 1.0), probe.bwd_s = probe.fwd_s;
    std::string lines = validate(probe);
    for (size_t a = 0; !lines.empty();) {
        const size_t b = lines.find('\n', a);
        out.push_back("skippipe." + lines.substr(a, b == std::string::npos ? std::string::npos : b - a));
        if (b == std::string::npos) break;
        a = b + 1;
    }
    if (S > c.model.n_layer)
        out.push_back("skippipe.stages " + std::to_string(S) + " exceeds model.n_layer " +
                      std::to_string(c.model.n_layer) + " (a stage holds at least one block)");
    if (c.train.batch_size % k.micro_batches != 0)
        out.push_back("skippipe.micro_batches " + std::to_string(k.micro_batches) + " does not divide train.batch_size " +
                      std::to_string(c.train.batch_size));
    for (auto [name, v] : {std::pair<const char*, const std::vector<double>*>{"skippipe.block_s", &k.block_s},
                           {"skippipe.head_s", &k.head_s}})
        if (!v->empty() && v->size() != 2)
            out.push_back(std::string(name) + ": expected [forward_s, backward_s] (two numbers) or [] to measure, got " +
                          std::to_string(v->size()) + " entries");
    if (k.head_fraction != -1 && k.head_fraction < 0)
        out.push_back("skippipe.head_fraction: −1 (from the stage times) or a share in [0, 1]");
    if (k.transfer_s != -1 && k.transfer_s < 0)
        out.push_back("skippipe.transfer_s: −1 (from the [network] stage link) or seconds ≥ 0");
    for (size_t i = 0; i < k.eval_paths.size(); ++i) {
        const auto& e = k.eval_paths[i];
        std::vector<char> seen(static_cast<size_t>(S), 0);
        bool ok = !e.empty() && e.front() == 0;
        for (int64_t s : e) ok = ok && s >= 0 && s < S && !seen[static_cast<size_t>(s)]++;
        if (!ok)
            out.push_back("skippipe.eval_paths[" + std::to_string(i) +
                          "]: a path starts at stage 0 and visits distinct stages below skippipe.stages " +
                          std::to_string(S));
    }
    if (named_algorithm(c) != Algorithm::kNone || c.outer.replicas != 1)
        out.push_back("skippipe.stages " + std::to_string(S) +
                      ": a SkipPipe run syncs its stages itself; outer.algorithm must be \"none\" and outer.replicas 1 "
                      "(skippipe.replicas is N)");
    if (c.cluster.stages != 1 || c.cluster.nodes_per_replica != 1)
        out.push_back("skippipe.stages " + std::to_string(S) +
                      ": cluster.stages and cluster.nodes_per_replica must be 1 (SkipPipe places its own S·N nodes)");
    if (!c.train.ckpt_path.empty()) out.push_back("train.ckpt_path: checkpoints of SkipPipe runs are not supported");
}

std::vector<int64_t> skip_blocks_per_stage(int64_t n_layer, int64_t stages) {
    TW_ASSERT(stages >= 1 && stages <= n_layer);
    const int64_t base = n_layer / stages, extra = n_layer % stages;
    std::vector<int64_t> out;
    for (int64_t s = 0; s < stages; ++s) out.push_back(base + (s < extra ? 1 : 0));
    return out;
}

std::vector<int64_t> skip_stage_parameters(const ModelConfig& m, int64_t stages) {
    const int64_t d = m.d_model, f = m.ff_width();
    const int64_t per_block = 2 * d + 4 * d * d + 3 * f * d;  // two norms, wqkv + wo, w13 + w2
    std::vector<int64_t> out;
    for (int64_t n : skip_blocks_per_stage(m.n_layer, stages)) out.push_back(n * per_block);
    out[0] += m.vocab_size * d * (m.tie_embeddings ? 1 : 2) + d;  // embedding, (head), final norm
    return out;
}

namespace {
Result<SkipSchedule> checked_schedule(Result<SkipSchedule> s, const SkipPipeProblem& p, const char* what) {
    if (!s) return s;
    if (std::string e = check_schedule(p, *s); !e.empty())
        return Result<SkipSchedule>::error(std::string("invalid ") + what + " schedule (a scheduler bug): " + e);
    return s;
}
}  // namespace

Result<SkipPipeTiming> SkipPipeTiming::create(const RunConfig& cfg, const NetworkProfile& net, const FwdBwd& block,
                                              const FwdBwd& head) {
    const SkipPipeConfig& k = cfg.skippipe;
    if (!k.enabled()) return Result<SkipPipeTiming>::error("skippipe.stages: not a SkipPipe run");
    SkipPipeTiming t;
    const SkipStageTimes st = skip_stage_times(block, head, skip_blocks_per_stage(cfg.model.n_layer, k.stages));
    SkipPipeProblem& p = t.p_;
    p.stages = static_cast<int>(k.stages), p.replicas = static_cast<int>(k.replicas);
    p.path_stages = static_cast<int>(k.path_stages), p.max_swaps = static_cast<int>(k.max_swaps);
    p.micro_batches = static_cast<int>(k.micro_batches), p.memory_per_node = static_cast<int>(k.memory_per_node);
    p.fwd_s = st.fwd_s, p.bwd_s = st.bwd_s;
    p.head_fraction = k.head_fraction >= 0 ? k.head_fraction : st.head_fraction;
    const int64_t b = cfg.train.batch_size / std::max<int64_t>(1, k.micro_batches);
    t.act_bytes_ = static_cast<uint64_t>(b * cfg.model.seq_len * cfg.model.d_model) * sizeof(float);
    p.transfer_s = k.transfer_s >= 0 ? k.transfer_s : transfer_s(net.stage, t.act_bytes_);
    if (std::string e = validate(p); !e.empty()) return Result<SkipPipeTiming>::error("skippipe: " + e);
    t.p_full_ = p;
    t.p_full_.path_stages = p.stages, t.p_full_.max_swaps = 0;
    auto full = checked_schedule(schedule_full_pipeline(t.p_full_), t.p_full_, "full-pipeline");
    if (!full) return full.status();
    t.full_ = std::move(*full);
    t.train_full_ = k.full;
    t.seed_ = static_cast<uint64_t>(cfg.run.seed);
    t.params_ = skip_stage_parameters(cfg.model, k.stages);
    t.intra_ = net.intra, t.stage_ = net.stage;
    return t;
}

uint64_t SkipPipeTiming::stage_sync_bytes(int64_t s) const {
    return static_cast<uint64_t>(p_.replicas - 1) * 4u * static_cast<uint64_t>(params_[static_cast<size_t>(s)]);
}

Result<SkipStepTiming> SkipPipeTiming::step(int64_t step) const {
    auto skip = checked_schedule(schedule_skippipe(p_, seed_ + static_cast<uint64_t>(step)), p_, "SkipPipe");
    if (!skip) return skip.status();
    SkipStepTiming out;
    out.skip = std::move(*skip);
    out.schedule = train_full_ ? full_ : out.skip;
    out.iter_s = out.schedule.makespan_s;
    out.visited.assign(static_cast<size_t>(p_.stages), 0);
    for (const SkipPath& path : out.schedule.paths)
        for (const SkipVisit& v : path.visits) out.visited[static_cast<size_t>(v.stage)] = 1;
    double gather = 0;
    for (int s = 0; s < p_.stages; ++s)
        if (out.visited[static_cast<size_t>(s)] && p_.replicas > 1)
            gather = std::max(gather, transfer_s(intra_, stage_sync_bytes(s)));
    out.sync_s = gather + transfer_s(stage_, 8u * static_cast<uint64_t>(p_.stages - 1));
    return out;
}

Result<std::vector<double>> skippipe_clocks(const RunConfig& cfg, const NetworkProfile& net, const FwdBwd& block,
                                            const FwdBwd& head, int64_t steps) {
    auto timing = SkipPipeTiming::create(cfg, net, block, head);
    if (!timing) return timing.status();
    std::vector<double> out;
    double clock = 0;
    for (int64_t t = 0; t < steps; ++t) {
        auto st = timing->step(t);
        if (!st) return st.status();
        clock += st->iter_s + st->sync_s;
        out.push_back(clock);
    }
    return out;
}

Result<Timeline> skippipe_replay(const RunConfig& cfg, const std::vector<TraceNode>& nodes,
                                 const std::vector<double>& metrics, const NetworkProfile& net) {
    // Every node's clock is the schedules' after its last step: the same doubles, in the same order,
    // as the nodes computed them live.
    int64_t steps = 0;
    for (const TraceNode& n : nodes)
        if (!n.trace.compute_s.empty()) steps = std::max(steps, n.trace.compute_s.rbegin()->first);
    const FwdBwd block{metrics[0], metrics[1]}, head{metrics[2], metrics[3]};
    auto clocks = skippipe_clocks(cfg, net, block, head, steps);
    if (!clocks) return clocks.status();
    Timeline t;
    for (const TraceNode& n : nodes) {
        double compute = 0;
        std::map<int64_t, double> at;
        for (const auto& [step, c] : n.trace.compute_s) {
            compute += c;
            if (step >= 1 && step <= steps) at[step] = (*clocks)[static_cast<size_t>(step - 1)];
        }
        const double end = at.empty() ? 0.0 : at.rbegin()->second;
        t.sim_s.push_back(end);
        t.compute_s.push_back(compute);
        t.exposed_s.push_back(std::max(0.0, end - compute));
        t.clock_at.push_back(std::move(at));
    }
    return t;
}

}  // namespace tw
