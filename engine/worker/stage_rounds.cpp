// The per-stage outer rounds; see stage_rounds.h.
#include "engine/worker/stage_rounds.h"

#include <algorithm>
#include <cstring>

#include "core/algorithm.h"
#include "core/layout.h"
#include "core/metric_names.h"
#include "engine/algo/state_hash.h"
#include "engine/pipeline/hetero.h"
#include "engine/pipeline/subspace.h"

namespace tw {

void StageSlice::project_writers(std::vector<torch::Tensor>& tensors) const {
    if (rank == 0) return;
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < names.size(); ++i)
        if (is_residual_writer(names[i])) project_writer(names[i], tensors[i], u);
}

double StageSlice::global_hash() const {
    // The global weights: a compressed replica's live ones are already projected.
    return static_cast<double>(state_hash(algo ? algo->eval_params() : params) >> 12);
}

StageRounds::~StageRounds() = default;

Result<std::unique_ptr<StageRounds>> StageRounds::create(const RunConfig& cfg, int replica, int64_t first,
                                                         int64_t last, const std::vector<torch::Tensor>& params,
                                                         const std::vector<std::string>& names, Collective& mesh,
                                                         torch::Tensor t_fixed) {
    std::unique_ptr<StageRounds> r(new StageRounds(cfg, mesh));
    if (Status st = r->build(replica, first, last, params, names, std::move(t_fixed)); !st) return st;
    return r;
}

Status StageRounds::build(int replica, int64_t first, int64_t last, const std::vector<torch::Tensor>& params,
                          const std::vector<std::string>& names, torch::Tensor t_fixed) {
    t_fixed_ = std::move(t_fixed);
    const uint64_t seed = static_cast<uint64_t>(cfg_.run.seed);
    const int64_t S = cfg_.cluster.stages;
    const bool one_stage = first == last;
    slices_.reserve(static_cast<size_t>(last - first + 1));  // the hooks below keep pointers to slices
    for (int64_t s = first; s <= last; ++s) {
        StageSlice sl;
        sl.stage = s;
        for (size_t i = 0; i < params.size(); ++i)
            if (one_stage || stage_of_param(cfg_.model, names[i], S) == s)
                sl.names.push_back(names[i]), sl.params.push_back(params[i]);
        sl.rank = constraint_rank(cfg_, replica, s);
        if (sl.rank > 0) sl.u = subspace_basis(cfg_.model.d_model, sl.rank, seed);
        std::vector<int> members;
        for (int r = 0; r < cfg_.outer.replicas; ++r) members.push_back(pipeline_mesh_rank(cfg_, r, static_cast<int>(s)));
        sl.group = std::make_unique<GroupCollective>(mesh_, members);
        slices_.push_back(std::move(sl));
    }
    const int64_t k0 = run_constraint_rank(cfg_, 0);
    const bool ad2 = cfg_.pipeline.has("ad2") && k0 > 0;
    torch::Tensor u0 = ad2 ? subspace_basis(cfg_.model.d_model, k0, seed) : torch::Tensor();
    for (auto& sl : slices_) {
        if (sl.stage == 0 && ad2) {
            torch::NoGradGuard no_grad;
            for (size_t i = 0; i < sl.names.size(); ++i)
                if (sl.names[i] == "tok_emb") move_out_of_span_into_frozen(sl.params[i], t_fixed_, u0);
        }
        if (!algorithm_traits(cfg_).outer_rounds) continue;
        auto algo = make_outer_algorithm(cfg_, sl.params, sl.names, sl.group->rank(), sl.group->size());
        if (!algo) return algo.status();
        sl.algo = std::move(*algo);
        sl.project_writers(sl.params);  // the constraint holds from the first step
        RoundHooks h;
        const bool compressed = sl.rank > 0;
        StageSlice* self = &sl;
        if (compressed && cfg_.pipeline.has("ad3"))
            h.before_encode = [self](size_t i, torch::Tensor& e) {
                if (is_residual_writer(self->names[i])) project_writer(self->names[i], e, self->u);
            };
        const bool ad1 = compressed && cfg_.pipeline.has("ad1");
        if ((ad2 && sl.stage == 0) || ad1)
            h.after_round = [this, self, ad1, ad2, u0](std::vector<torch::Tensor>& global, std::vector<torch::Tensor>& live) {
                for (size_t i = 0; i < self->names.size(); ++i)
                    if (ad2 && self->names[i] == "tok_emb") {
                        move_out_of_span_into_frozen(global[i], t_fixed_, u0);
                        live[i].copy_(global[i]);
                    }
                if (ad1) self->project_writers(live);
            };
        h.delta_from_start = compressed && cfg_.pipeline.has("ad6");
        // AD1 where the algorithm has no after-round hook (DiLoCo, NoLoCo) is applied here, after
        // every round; AD2 then needs no move after a round, and AD3 / AD6 have no place.
        sl.ad1_after_round = !sl.algo->set_round_hooks(std::move(h)).after_round && cfg_.pipeline.has("ad1");
    }
    return Status::ok();
}

const StageSlice* StageRounds::slice_of(int64_t stage) const {
    for (auto& x : slices_)
        if (x.stage == stage) return &x;
    return nullptr;
}

Status StageRounds::check_weights(const std::string& who) {
    for (int64_t s = 0; s < cfg_.cluster.stages; ++s) {
        const StageSlice* sl = slice_of(s);
        if (!sl) {
            if (Status st = sit_out_round(); !st) return st;
            continue;
        }
        const double h = sl->global_hash();
        std::vector<uint8_t> mine(8);
        std::memcpy(mine.data(), &h, 8);
        auto all = sl->group->all_gather(mine, LinkClass::kOuterSync);
        if (!all) return all.status();
        for (size_t i = 0; i < all->size(); ++i)
            if ((*all)[i] != mine)
                return Status::error("stage " + std::to_string(s) + ": replica " + std::to_string(i) +
                                     " starts from other weights than " + who);
    }
    return Status::ok();
}

Result<StageRoundsReport> StageRounds::round(int64_t step, double start_s) {
    StageRoundsReport out;
    if (!algorithm_traits(cfg_).outer_rounds || step % cfg_.outer.inner_steps != 0) return out;
    out.synced = true;
    out.latest_s = start_s;
    for (int64_t s = 0; s < cfg_.cluster.stages; ++s) {
        StageSlice* sl = nullptr;
        for (auto& x : slices_)
            if (x.stage == s) sl = &x;
        // Two mesh rounds per stage: the exchange, then the round agreement among its holders (a node
        // holding no slice of the stage sits both out alone).
        if (!sl) {
            if (Status st = sit_out_round(); !st) return st;
            if (Status st = mesh_.agree({mesh_.rank()}, 0); !st) return st;
            continue;
        }
        auto rep = sl->algo->after_step(step, *sl->group, start_s);
        if (!rep) return rep.status();
        out.bytes += rep->bytes_sent;
        // Every holder of stage s must now hold the same state (θ_s; NoLoCo: its group's mean).
        auto agreed = agree_on_round(*sl->algo, *sl->group);
        if (!agreed) return Status::error("stage " + std::to_string(s) + ": " + agreed.message());
        out.stage_hashes.emplace_back(s, *agreed >> 12);
        out.guard_clipped += rep->guard_clipped;
        out.hops = std::max(out.hops, rep->hops);
        for (double c : rep->clocks) out.latest_s = std::max(out.latest_s, c);
        uint64_t mask = 0;
        for (int r = 0; r < std::min<int>(64, static_cast<int>(cfg_.outer.replicas)); ++r)
            if (rep->members.empty() || std::count(rep->members.begin(), rep->members.end(), r)) mask |= uint64_t{1} << r;
        out.grouped = out.grouped || !rep->members.empty();
        out.member_masks.push_back(mask);
        // Without SparseLoCo's hooks, AD1 is applied here (DiLoCo, NoLoCo).
        if (sl->ad1_after_round) sl->project_writers(sl->params);
    }
    return out;
}

Result<uint64_t> StageRounds::agree_t_fixed(const torch::Tensor& t_fixed) {
    const uint64_t h = state_hash({t_fixed});
    std::vector<int> everyone;
    for (int r = 0; r < mesh_.size(); ++r) everyone.push_back(r);
    if (Status st = mesh_.agree(everyone, h); !st) return Status::error("T_fixed: " + st.message());
    return h >> 12;
}

std::vector<int> StageRoundsReport::members(int64_t replicas) const {
    std::vector<int> out;
    for (int r = 0; r < replicas; ++r) {
        bool in = member_masks.empty();
        for (uint64_t m : member_masks) in = in || r >= 64 || ((m >> r) & 1);
        if (in) out.push_back(r);
    }
    return out;
}

std::vector<std::pair<std::string, double>> stage_round_rows(const StageRoundsReport& r) {
    std::vector<std::pair<std::string, double>> rows;
    for (auto& [stage, h] : r.stage_hashes) rows.emplace_back(metric::round_stage_hash(stage), static_cast<double>(h));
    if (r.guard_clipped > 0) rows.emplace_back(metric::kRoundGuardClipped, static_cast<double>(r.guard_clipped));
    if (r.grouped)
        for (uint64_t mask : r.member_masks) rows.emplace_back(metric::kRoundGroupMask, static_cast<double>(mask));
    return rows;
}

void StageRounds::project_writers() {
    for (auto& sl : slices_) sl.project_writers(sl.params);
}

void StageRounds::swap_in_global(GlobalWeightsSwap& swap) const {
    for (auto& sl : slices_)
        if (sl.algo) swap.add(sl.params, sl.algo->eval_params());
}

}  // namespace tw
