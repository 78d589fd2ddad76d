// NoLoCo, arXiv 2506.10911: slow/fast weights averaged within random groups seeded by the step.
#include "engine/algo/noloco.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>

#include "core/assert.h"
#include "engine/algo/aggregation_guard.h"
#include "engine/algo/ring_allreduce.h"
#include "engine/codec/codec.h"

namespace tw {
namespace {

// Uniform in [0, n) without std::uniform_int_distribution (implementation-defined): reject the
// 2^64 mod n lowest draws, then reduce.
uint64_t bounded(std::mt19937_64& rng, uint64_t n) {
    const uint64_t threshold = (0 - n) % n;
    for (;;) {
        const uint64_t r = rng();
        if (r >= threshold) return r % n;
    }
}

}  // namespace

std::vector<std::vector<int>> noloco_groups(int64_t step, int replicas, int64_t group_size) {
    TW_ASSERT(replicas >= 1 && group_size >= 1);
    std::vector<int> perm(static_cast<size_t>(replicas));
    for (int i = 0; i < replicas; ++i) perm[static_cast<size_t>(i)] = i;
    std::mt19937_64 rng(static_cast<uint64_t>(step));
    for (int i = replicas - 1; i > 0; --i)
        std::swap(perm[static_cast<size_t>(i)], perm[bounded(rng, static_cast<uint64_t>(i) + 1)]);
    const int64_t n_groups = std::max<int64_t>(1, replicas / group_size);
    std::vector<std::vector<int>> groups;
    for (int64_t k = 0; k < n_groups; ++k) {
        const auto first = perm.begin() + k * group_size;
        const auto last = k + 1 == n_groups ? perm.end() : first + group_size;
        std::vector<int> g(first, last);
        std::sort(g.begin(), g.end());
        groups.push_back(std::move(g));
    }
    return groups;
}

bool NoLoCo::round_at(int64_t step) const { return step % cfg_.inner_steps == 0; }

// φ and δ: a newcomer takes its donor's (there is no global copy in NoLoCo; the donor's slow
// weights are the nearest thing, and its own averaging pulls them together again).
OuterState NoLoCo::save_state() const {
    OuterState s;
    put_tensors(s, "slow", slow_);
    put_tensors(s, "delta", delta_);
    return s;
}

Status NoLoCo::load_state(const OuterState& s) {
    if (std::string u = unknown_state(s, {"slow", "delta"}); !u.empty()) return Status::error("noloco: unknown state " + u);
    for (const char* k : {"slow", "delta"}) {
        auto got = take_tensors(s, k, std::string(k) == "slow" ? slow_ : delta_);
        if (!got) return Status::error("noloco: " + got.message());
        if (!*got) return Status::error(std::string("noloco: the state has no ") + k);
    }
    return Status::ok();
}

NoLoCo::NoLoCo(std::vector<torch::Tensor> params, NoLoCoConfig cfg, int replica, int replicas)
    : params_(std::move(params)), cfg_(cfg), replica_(replica), replicas_(replicas) {
    torch::NoGradGuard no_grad;
    for (auto& p : params_) {
        TORCH_CHECK(p.scalar_type() == torch::kFloat32 && p.is_contiguous(),
                    "noloco: parameters must be contiguous fp32");
        slow_.push_back(p.detach().clone());
        delta_.push_back(torch::zeros_like(p));
        n_params_ += p.numel();
    }
}

std::vector<int> NoLoCo::group_of(int64_t step, int* index, int* count, int rank, int members) const {
    if (members < 0) rank = replica_, members = replicas_;
    auto groups = noloco_groups(step, members, cfg_.group_size);
    for (size_t k = 0; k < groups.size(); ++k) {
        if (std::find(groups[k].begin(), groups[k].end(), rank) == groups[k].end()) continue;
        if (index) *index = static_cast<int>(k);
        if (count) *count = static_cast<int>(groups.size());
        return groups[k];
    }
    TW_ASSERT(false && "a permutation covers every replica");
    return {};
}

Result<RoundReport> NoLoCo::after_step(int64_t step, Collective& c, double sim_clock_s) {
    using R = Result<RoundReport>;
    if (step % cfg_.inner_steps != 0) return RoundReport{};
    torch::NoGradGuard no_grad;
    if (c.size() > replicas_)
        return R::error("noloco: built for " + std::to_string(replicas_) + " replicas, the collective has " +
                        std::to_string(c.size()) + " members");
    // The groups are drawn over the collective's members: every replica, or the survivors
    // (docs/faults.md), whose ranks are then their positions among the survivors.
    int index = 0, count = 1;
    const std::vector<int> group = group_of(step, &index, &count, c.rank(), c.size());

    // Payload: [φ_i flattened | (θ_i − φ_i) flattened], 2·P fp32 values.
    std::vector<torch::Tensor> parts;
    for (auto& s : slow_) parts.push_back(s.reshape({-1}));
    for (size_t i = 0; i < params_.size(); ++i) parts.push_back((params_[i] - slow_[i]).reshape({-1}));
    auto flat = torch::cat(parts);
    RoundReport rep;
    rep.synced = true;
    rep.hops = 1;
    rep.what = "group " + std::to_string(index + 1) + " of " + std::to_string(count);
    rep.members = group;  // for the timeline: this round waits only for these replicas
    RingSpec ring;        // the group in ascending rank order, when the ring carries the round
    const auto fp32 = make_dense_codec(false);
    ring.members = group;
    ring.segments = {2 * n_params_};
    ring.codec = fp32.get();
    ring.tag = "noloco";
    if (!torch::isfinite(flat).all().item<bool>()) {
        // The group fails at once.
        if (cfg_.topology == Topology::kRing) ring_refuse(c, ring, sim_clock_s);
        else (void)c.exchange(group, {}, LinkClass::kOuterSync, sim_clock_s, nullptr);
        return R::error("noloco: replica " + std::to_string(replica_) + "'s weights hold NaN or Inf at step " +
                        std::to_string(step));
    }
    if (cfg_.topology == Topology::kRing) {
        // The group's mean of [φ | θ − φ], the guard on the second half as in the mesh.
        auto done = ring_allreduce_mean(c, ring, flat, sim_clock_s, RingGuard{cfg_.guard_ratio, n_params_, n_params_});
        if (!done) return done.status();
        rep.bytes_sent = done->bytes_sent;
        rep.hops = done->hops;
        rep.clocks = std::move(done->clocks);
        rep.guard_clipped = done->guard_clipped;
        return finish_round(flat, group, std::move(rep));
    }
    std::vector<uint8_t> mine(static_cast<size_t>(flat.numel()) * 4);
    std::memcpy(mine.data(), flat.data_ptr<float>(), mine.size());

    auto got = c.exchange(group, mine, LinkClass::kOuterSync, sim_clock_s, &rep.clocks);
    if (!got) return got.status();

    // Sums in group order (ranks ascending), identical on every member of the group.
    std::vector<double> norms;  // of the θ_j − φ_j halves, for the guard
    for (size_t j = 0; j < got->size(); ++j) {
        auto& bytes = (*got)[j];
        const std::string who = "noloco: replica " + std::to_string(group[j]);
        if (bytes.empty()) return R::error(who + " sent no payload (its weights hold NaN or Inf)");
        if (bytes.size() != mine.size())
            return R::error(who + " sent " + std::to_string(bytes.size()) + " bytes, expected " +
                            std::to_string(mine.size()) + " (different model?)");
        if (cfg_.guard_ratio <= 0) continue;
        std::vector<float> d(static_cast<size_t>(n_params_));  // unaligned bytes: copy, do not cast
        std::memcpy(d.data(), bytes.data() + n_params_ * 4, d.size() * 4);
        double sq = 0;  // sequential double sum: the same bits on every member
        for (float v : d) sq += static_cast<double>(v) * v;
        norms.push_back(std::sqrt(sq));
    }
    const auto scale =
        norm_clip_scales(norms, cfg_.guard_ratio, NormReference::kLowerMedianOfOthers, &rep.guard_clipped);
    auto sum = torch::zeros({2 * n_params_}, torch::kFloat32);
    for (size_t j = 0; j < got->size(); ++j) {
        auto payload = torch::from_blob((*got)[j].data(), {2 * n_params_}, torch::kFloat32);
        if (scale.empty() || scale[j] == 1.0f) {
            sum += payload;
        } else {
            auto t = payload.clone();
            t.narrow(0, n_params_, n_params_).mul_(scale[j]);
            sum += t;
        }
    }
    sum /= static_cast<double>(got->size());
    rep.bytes_sent = static_cast<uint64_t>(group.size() - 1) * mine.size();
    return finish_round(sum, group, std::move(rep));
}

// The update from the group's mean payload [φ̄ | d̄] (2·P), whichever topology averaged it.
Result<RoundReport> NoLoCo::finish_round(const torch::Tensor& sum, const std::vector<int>& group, RoundReport rep) {
    if (!torch::isfinite(sum).all().item<bool>())
        return Result<RoundReport>::error("noloco: non-finite values in the group's payloads");
    int64_t off = 0;
    for (size_t i = 0; i < params_.size(); ++i) {
        const int64_t n = params_[i].numel();
        const auto phi_bar = sum.narrow(0, off, n).view(params_[i].sizes());
        const auto d_bar = sum.narrow(0, n_params_ + off, n).view(params_[i].sizes());
        off += n;
        delta_[i].mul_(cfg_.momentum).add_(d_bar, cfg_.lr_outer).add_(phi_bar - slow_[i], cfg_.lr_outer);
        slow_[i].add_(delta_[i]);
        params_[i].copy_(slow_[i]);
    }
    last_group_ = group;
    last_mean_ = sum;
    return rep;
}


void noloco_problems(const OuterBuild& b, std::vector<std::string>& p) {
    const OuterConfig& o = b.cfg.outer;
    if (o.dtype != "fp32")
        p.push_back("outer.dtype \"" + o.dtype + "\" does not apply to noloco (it exchanges fp32 weights); leave it at fp32");
    if (o.group_size < 1 || o.group_size > b.replicas)
        p.push_back("outer.group_size " + std::to_string(o.group_size) + " must be in [1, outer.replicas = " +
                    std::to_string(b.replicas) + "]");
}

Result<std::unique_ptr<OuterAlgorithm>> make_noloco(OuterBuild b) {
    const OuterConfig& o = b.cfg.outer;
    NoLoCoConfig nc{o.inner_steps, o.lr, o.momentum, o.group_size, o.guard_ratio, topology_of(b.cfg)};
    return std::unique_ptr<OuterAlgorithm>(std::make_unique<NoLoCo>(std::move(b.params), nc, b.replica, b.replicas));
}
namespace {

class NoLoCoRounds : public RoundCostModel {
public:
    explicit NoLoCoRounds(const RunConfig& cfg) : cfg_(cfg), fp32_(make_dense_codec(false)), period_(round_period(cfg)) {}
    RoundCost at(int64_t step, int r, const std::vector<TensorShape>& tensors) const override {
        if (step % period_ != 0) return {};
        // φ and θ − φ, 2·P fp32 values, to each other member of the group (or around its ring).
        const int64_t P = sum_numel(tensors);
        const std::vector<TensorShape> payload{{"phi", {P}}, {"delta", {P}}};
        RoundCost cost;
        for (auto& g : noloco_groups(step, static_cast<int>(cfg_.outer.replicas), cfg_.outer.group_size)) {
            if (std::find(g.begin(), g.end(), r) == g.end()) continue;
            cost = dense_exchange_cost(cfg_, *fp32_, payload, {2 * P}, g, r);
            for (int m : g)
                if (m < 64) cost.group |= uint64_t{1} << m;
        }
        cost.synced = true;
        return cost;
    }

private:
    RunConfig cfg_;
    std::unique_ptr<Codec> fp32_;  // φ and θ − φ
    int64_t period_;
};

}  // namespace

Result<std::unique_ptr<RoundCostModel>> plan_noloco_rounds(const RunConfig& cfg) {
    return std::unique_ptr<RoundCostModel>(std::make_unique<NoLoCoRounds>(cfg));
}

}  // namespace tw
