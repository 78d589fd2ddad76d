// The per-stage outer rounds; see stage_rounds.h.
#include "engine/worker/stage_rounds.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/algorithm.h"
#include "core/layout.h"
#include "core/little_endian.h"
#include "core/member_view.h"
#include "engine/worker/recovery.h"
#include "engine/worker/stage_members.h"
#include "core/metric_names.h"
#include "engine/algo/state_hash.h"
#include "engine/pipeline/hetero.h"
#include "engine/pipeline/subspace.h"

namespace tw {
namespace {

std::string replica_list(const std::vector<int>& rs) {
    std::string out;
    for (int r : rs) out += (out.empty() ? "" : ", ") + std::to_string(r);
    return out.empty() ? "none" : out;
}

std::vector<int> without(const std::vector<int>& a, const std::vector<int>& b) {
    std::vector<int> out;
    for (int r : a)
        if (std::find(b.begin(), b.end(), r) == b.end()) out.push_back(r);
    return out;
}

std::string seconds(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", s);
    return buf;
}

}  // namespace

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
    survivors_ = pipeline_survives_loss(cfg_);
    admits_ = survivors_ && cfg_.cluster.restart_lost > 0;
    replica_ = replica;
    for (int r = 0; r < cfg_.outer.replicas; ++r) present_.push_back(r);
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
        sl.group = std::make_unique<MemberView>(mesh_, members);
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
    if (survivors_) return survivor_round(step, start_s);
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

bool StageRounds::replica_lost(int r) const {
    const auto lost = mesh_.membership().lost_members();
    for (int k : mesh_ranks_of(r))
        if (std::count(lost.begin(), lost.end(), k)) return true;
    return false;
}

// The same S stage rounds as round()'s, each in its own transport epochs: a node that sits a stage
// out starts that stage's first attempt too (alone, nothing is sent), so whoever redoes a stage's
// round is never in step with the others' numbering by chance; after the S stages every node starts
// the same epoch for the training that follows, so the point-to-point activations of the next steps
// are never taken for a given-up attempt's.
Result<StageRoundsReport> StageRounds::survivor_round(int64_t step, double start_s) {
    StageRoundsReport out;
    out.synced = true;
    out.latest_s = start_s;
    ++rounds_done_;
    late_.clear();  // the last round's late replicas are members again
    late_known_ = false;
    const bool judged = cfg_.outer.round_deadline_s > 0;
    // Stage 0's holders settle who is late and whom they admit; a pipeline's later stages hear it
    // from their stage 0 before their own stage.
    const bool worded = judged || admits_;
    admitted_.clear();
    if (schedule_ && !schedule_->empty()) {
        // The schedule's members of this round, less the replicas lost for good: a replica back
        // from a scheduled absence is in again.
        std::vector<int> now;
        bool dropped = false;
        for (int r = 0; r < cfg_.outer.replicas; ++r) {
            const bool in = schedule_->in_round(r, step);
            if (in && std::find(excluded_.begin(), excluded_.end(), r) == excluded_.end()) now.push_back(r);
            dropped = dropped || (!in && std::find(present_.begin(), present_.end(), r) != present_.end());
        }
        // A member of the last round down by the schedule: the survivors notice it as they would a
        // real loss, by waiting out the heartbeat timeout (the clock pays it; the rounds do not redo).
        if (dropped) out.latest_s = std::max(out.latest_s, start_s + cfg_.cluster.heartbeat_timeout_s);
        present_ = now;
    }
    const std::vector<int> at_start = present_;
    for (int64_t s = 0; s < cfg_.cluster.stages; ++s) {
        StageSlice* sl = nullptr;
        for (auto& x : slices_)
            if (x.stage == s) sl = &x;
        if (!sl) {
            mesh_.membership().begin_epoch(stage_epoch(s, 0));
            if (Status st = sit_out_round(); !st) return st;
            if (Status st = mesh_.agree({mesh_.rank()}, 0); !st) return st;
            // A pipeline's later stage learns from its stage 0 who was late, before its own stage.
            if (worded && s == 0) {
                if (Status st = take_word_from_stage0(out); !st) return st;
                if (out.late_s >= 0) {  // late: this replica sits the round out
                    take_in_admitted();
                    return out;
                }
            }
            continue;
        }
        if (Status st = survivor_slice_round(*sl, step, start_s, out); !st) return st;
        if (worded && s == 0) {
            if (cfg_.is_pipeline_replica(replica_))
                if (Status st = tell_later_stages(out.late_s); !st) return st;
            out.late = late_;
            if (out.late_s >= 0) {  // late: none of this replica's stages takes part
                take_in_admitted();
                return out;
            }
        }
    }
    mesh_.membership().begin_epoch(stage_epoch(cfg_.cluster.stages, 0));
    // Whoever this round lost is out for good (a real loss; a scheduled absence is the schedule's).
    for (int r : at_start)
        if (std::find(present_.begin(), present_.end(), r) == present_.end()) excluded_.push_back(r);
    out.present = static_cast<int64_t>(present_.size());
    // Rows name the members only when the rounds ran among fewer than every replica or were redone:
    // a run without a loss records what it did before survivors existed.
    out.survivors = out.present < cfg_.outer.replicas || out.attempts > 1;
    out.grouped = out.grouped || out.survivors;
    take_in_admitted();
    return out;
}

std::vector<int> StageRounds::mesh_ranks_of(int r) const {
    std::vector<int> ranks;
    const int64_t stages = cfg_.is_pipeline_replica(r) ? cfg_.cluster.stages : 1;
    for (int64_t s = 0; s < stages; ++s) ranks.push_back(pipeline_mesh_rank(cfg_, r, static_cast<int>(s)));
    return ranks;
}

uint64_t StageRounds::heard_restarted() const {
    uint64_t heard = 0;
    for (int r = 0; r < cfg_.outer.replicas && r < 64; ++r) {
        if (std::find(present_.begin(), present_.end(), r) != present_.end()) continue;
        bool all = true;  // every node of a pipeline restarts with it: each says it is up
        for (int k : mesh_ranks_of(r)) all = all && mesh_.membership().heard_live(k);
        if (all) heard |= uint64_t{1} << r;
    }
    return heard;
}

void StageRounds::take_in_admitted() {
    for (int r : admitted_) {
        for (int k : mesh_ranks_of(r)) mesh_.membership().forgive(k);
        excluded_.erase(std::remove(excluded_.begin(), excluded_.end(), r), excluded_.end());
        if (std::find(present_.begin(), present_.end(), r) == present_.end()) present_.push_back(r);
    }
    std::sort(present_.begin(), present_.end());
}

void StageRounds::enter_rejoin_epoch(int64_t step) {
    // Every synced round since the transports started counts one, H steps apart.
    rounds_done_ = step / cfg_.outer.inner_steps - origin_step_ / cfg_.outer.inner_steps;
    mesh_.membership().begin_epoch(stage_epoch(cfg_.cluster.stages, 0));
}

void StageRounds::rejoin(int64_t step, const std::vector<int>& members) {
    present_ = members;
    if (std::find(present_.begin(), present_.end(), replica_) == present_.end()) present_.push_back(replica_);
    std::sort(present_.begin(), present_.end());
    // A replica the schedule had in that round that was not in it was lost for good.
    excluded_.clear();
    for (int r = 0; r < cfg_.outer.replicas; ++r)
        if (r != replica_ && (!schedule_ || schedule_->in_round(r, step)) &&
            std::find(members.begin(), members.end(), r) == members.end())
            excluded_.push_back(r);
}

bool StageRounds::left_out() const {
    return mesh_.membership().counted_out() || replica_lost(replica_) ||
           std::find(present_.begin(), present_.end(), replica_) == present_.end();
}

std::string StageRounds::out_reason() const {
    const auto lost = mesh_.membership().lost_members();
    const std::vector<int> ranks = mesh_ranks_of(replica_);  // in stage order
    for (size_t s = 0; s < ranks.size(); ++s)
        if (std::count(lost.begin(), lost.end(), ranks[s]))
            return "its stage-" + std::to_string(s) + " node (mesh member " + std::to_string(ranks[s]) + ") was lost";
    if (mesh_.membership().counted_out()) return "a peer counts a node of it lost";
    return "the holders of its stage left it out of their rounds";
}

// One attempt after another until one commits:
//  1. the replicas present: those of the last attempt minus every replica a node of which counts
//     lost here (a pipeline leaves as a whole);
//  2. the nodes of the replicas out of the round that may not know it (alive, as far as this node
//     knows) are told so (Membership::tell_out): they must not wait for a round that never comes;
//  3. the holders compare their sets of present replicas (stage_members.h) in a framing-only round;
//  4. the algorithm's round among them, then the round agreement.
// An attempt that fails is given up (the view is told at once) and redone from the state the round
// found when a member of it is now out, gave the attempt up, or counted other replicas present;
// any other error ends the run. A member that gives an attempt up always redoes it (or leaves, or
// fails the run, which then ends), so redoing on its word never waits for nobody.
Status StageRounds::survivor_slice_round(StageSlice& sl, int64_t step, double start_s, StageRoundsReport& out) {
    const std::string stage = "stage " + std::to_string(sl.stage);
    // What a redo starts from: the slice's algorithm state and live weights as the round found them.
    const OuterState snapshot = sl.algo->save_state();
    std::vector<torch::Tensor> live_before;
    for (auto& p : sl.params) live_before.push_back(p.detach().clone());
    // Stage 0's round moves the embedding's out-of-span part into T_fixed (AD2's hook): a redo
    // starts from the table the round found, or the move would be made twice.
    const bool holds_table = sl.stage == 0 && t_fixed_.defined();
    const torch::Tensor table_before = holds_table ? t_fixed_.clone() : torch::Tensor();
    const int me = replica_;
    const int stage_rank = static_cast<int>(sl.stage);
    // With a deadline, stage 0's holders judge the arrivals in the first attempt that gets that far
    // (a redo after the late have left keeps the verdict: they no longer wait in it).
    const bool judge = sl.stage == 0 && cfg_.outer.round_deadline_s > 0;
    await_fresh_holders(sl.stage, step);
    for (uint64_t attempt = 0;; ++attempt) {
        std::vector<int> rest;
        for (int r : present_)
            if (!replica_lost(r)) rest.push_back(r);
        present_ = rest;
        if (left_out())
            return Status::error(stage + ": this node's replica " + std::to_string(me) +
                                 " is out of the rounds (a node of it is lost)");
        if (std::find(present_.begin(), present_.end(), 0) == present_.end())
            return Status::error(stage + ": replica 0 is lost; it evaluates the global model, and a run with pipeline "
                                         "replicas does not go on without it");
        if (static_cast<int64_t>(present_.size()) < cfg_.cluster.min_replicas)
            return Status::error("quorum lost: " + std::to_string(present_.size()) + " replica(s) left (" +
                                 replica_list(present_) + "), cluster.min_replicas is " +
                                 std::to_string(cfg_.cluster.min_replicas));
        if (attempt >= kAttempts)
            return Status::error(stage + ": the round was redone " + std::to_string(kAttempts) + " times; giving up");
        mesh_.membership().begin_epoch(stage_epoch(sl.stage, attempt));
        std::vector<int> out_ranks;
        for (int r = 0; r < cfg_.outer.replicas; ++r)
            // A replica the schedule has down ends by itself at its step; told out now, a pipeline
            // still behind would leave before reaching it. A late one is only out of this round.
            if (std::find(present_.begin(), present_.end(), r) == present_.end() &&
                !(schedule_ && !schedule_->in_round(r, step)) && !is_late(r))
                out_ranks.push_back(pipeline_mesh_rank(cfg_, r, stage_rank));
        if (!out_ranks.empty()) mesh_.membership().tell_out(out_ranks);
        // The attempt's members: the replicas present, less those already found late.
        const std::vector<int> attempt_members = late_known_ ? without(present_, late_) : present_;
        std::vector<int> ranks;
        for (int r : attempt_members) ranks.push_back(pipeline_mesh_rank(cfg_, r, stage_rank));
        MemberView view(mesh_, ranks);
        Status st;
        bool views_differ = false;
        // Arrivals (framing only): whoever's clock is more than the deadline after the first is late.
        std::vector<int> late_now = late_known_ ? late_ : std::vector<int>{};
        double my_late_s = -1;
        // cluster.restart_lost: each holder's mask of the absent replicas whose every node it has
        // heard is up again; those in every holder's mask are admitted (the same list everywhere).
        std::vector<int> admit;
        if (sl.stage == 0 && admits_) {
            std::vector<int> all;
            for (int i = 0; i < view.size(); ++i) all.push_back(i);
            auto words = view.gather_words(all, heard_restarted());
            if (!words) st = words.status();
            else admit = admitted_by_every_word(*words, cfg_.outer.replicas);
        }
        if (st && judge && !late_known_) {
            std::vector<double> clocks;
            auto got = view.all_gather({}, LinkClass::kOuterSync, start_s, &clocks);
            if (!got) {
                st = got.status();
            } else {
                const double first = *std::min_element(clocks.begin(), clocks.end());
                for (size_t i = 0; i < attempt_members.size(); ++i) {
                    const bool late = attempt_members[i] != 0 && clocks[i] > first + cfg_.outer.round_deadline_s;
                    if (late) late_now.push_back(attempt_members[i]);
                    if (late && attempt_members[i] == me) my_late_s = clocks[i] - first;
                }
            }
        }
        const std::vector<int> on_time = without(attempt_members, late_now);
        std::vector<double> sets;
        const uint64_t mine = replica_mask(on_time);
        auto checked = st ? view.all_gather({}, LinkClass::kOuterSync, static_cast<double>(mine), &sets)
                          : Result<std::vector<std::vector<uint8_t>>>(st);
        if (!checked) {
            st = checked.status();
        } else if (auto v = check_views(mine, sets, cfg_.outer.replicas); !v) {
            st = Status::error(stage + ": " + v.message());
        } else if (!v->agreed) {
            views_differ = true;
            present_ = v->present;
            st = Status::error("replicas " + replica_list(attempt_members) + " present here, " +
                               replica_list(v->other) + " at another holder");
        } else if (my_late_s >= 0) {
            // Late, and every holder agrees who is: out of this round; the state comes after it.
            late_ = late_now;
            late_known_ = true;
            out.late_s = my_late_s;
            if (sl.stage == 0 && admits_) admitted_ = admit;
            return Status::ok();
        } else {
            if (judge) late_ = late_now, late_known_ = true;  // the late have left: a redo keeps the verdict
            std::vector<int> round_ranks;
            for (int r : on_time) round_ranks.push_back(pipeline_mesh_rank(cfg_, r, stage_rank));
            MemberView round_view(mesh_, round_ranks);
            auto rep = sl.algo->after_step(step, round_view, start_s);
            if (rep) {
                // Every holder of stage s must now hold the same state (θ_s; NoLoCo: its group's mean).
                auto agreed = agree_on_round(*sl.algo, round_view);
                // The holders of stage 0 hold T_fixed as its round left it; they compare it here,
                // among the members of the round (a pipeline's later stages compare theirs with
                // their stage 0 after it has sent them the round: agree_t_fixed).
                if (agreed && holds_table) {
                    std::vector<int> all;
                    for (int i = 0; i < round_view.size(); ++i) all.push_back(i);
                    if (Status t = round_view.agree(all, state_hash({t_fixed_})); !t)
                        agreed = Result<uint64_t>::error("T_fixed: " + t.message());
                }
                if (agreed) {
                    out.bytes += rep->bytes_sent;
                    out.stage_hashes.emplace_back(sl.stage, *agreed >> 12);
                    out.guard_clipped += rep->guard_clipped;
                    out.hops = std::max(out.hops, rep->hops);
                    for (double c : rep->clocks) out.latest_s = std::max(out.latest_s, c);
                    // The report's members are view ranks (NoLoCo's group) or none (all of the view).
                    uint64_t mask = 0;
                    for (size_t i = 0; i < on_time.size(); ++i)
                        if (on_time[i] < 64 &&
                            (rep->members.empty() ||
                             std::count(rep->members.begin(), rep->members.end(), static_cast<int>(i))))
                            mask |= uint64_t{1} << on_time[i];
                    out.grouped = out.grouped || !rep->members.empty() || !late_.empty();
                    out.member_masks.push_back(mask);
                    out.attempts = std::max<int64_t>(out.attempts, static_cast<int64_t>(attempt) + 1);
                    if (sl.ad1_after_round) sl.project_writers(sl.params);
                    if (sl.stage == 0 && admits_) admitted_ = admit;
                    return Status::ok();
                }
                st = Status::error(stage + ": " + agreed.message());
            } else {
                st = rep.status();
            }
        }
        // The attempt failed: whoever waits for this node in it fails at once (the late, once known,
        // wait for nothing of it).
        std::vector<int> peers;
        for (int i = 0; i < view.size(); ++i)
            if (i != view.rank() && !(late_known_ && is_late(attempt_members[static_cast<size_t>(i)])))
                peers.push_back(view.base_rank(i));
        mesh_.membership().abandon(peers);
        bool member_out = false, member_gave_up = false;
        for (size_t i = 0; i < attempt_members.size(); ++i) {
            member_out = member_out || replica_lost(attempt_members[i]);
            member_gave_up = member_gave_up || (ranks[i] != mesh_.rank() && mesh_.membership().gave_up(ranks[i]));
        }
        if (!views_differ && !member_out && !member_gave_up) return st;
        if (Status s = sl.algo->load_state(snapshot); !s) return Status::error(stage + ": rolling back the round: " + s.message());
        {
            torch::NoGradGuard no_grad;
            for (size_t i = 0; i < sl.params.size(); ++i) sl.params[i].copy_(live_before[i]);
            if (holds_table) t_fixed_.copy_(table_before);
        }
        std::vector<int> left, gone;
        for (int r : attempt_members)
            (replica_lost(r) || std::find(present_.begin(), present_.end(), r) == present_.end() ? gone : left).push_back(r);
        // No member of this attempt out: a peer gave it up, having found a loss this node had not,
        // or the holders counted the replicas present apart and the redo is among the same ones.
        const std::string who = !gone.empty() ? "replica " + replica_list(gone) + " lost"
                                : views_differ ? "the holders counted the replicas present apart"
                                               : "a member gave the attempt up";
        out.lost.push_back("round at step " + std::to_string(step) + ", " + stage + ": " + who + " (" + st.message() +
                           "); the round is redone among replicas " + replica_list(left));
        // The survivors noticed the loss by waiting out the heartbeat timeout: the clock pays it.
        out.latest_s = std::max(out.latest_s, start_s + cfg_.cluster.heartbeat_timeout_s);
    }
}

void StageRounds::await_fresh_holders(int64_t stage, int64_t step) {
    const int64_t back = step - cfg_.outer.inner_steps;
    if (!schedule_ || schedule_->empty() || back < 0) return;
    for (int r : schedule_->rejoining(back)) {
        const FaultEvent* down = schedule_->down_at(r, back);
        if (r == replica_ || !down || down->kind != FaultKind::kKill) continue;
        if (std::find(present_.begin(), present_.end(), r) == present_.end()) continue;
        const int k = pipeline_mesh_rank(cfg_, r, static_cast<int>(stage));
        // Lost meanwhile: the attempt finds it out as it finds any loss.
        if (k != mesh_.rank()) (void)mesh_.membership().wait_ready(k, static_cast<uint64_t>(back));
    }
}

// The message: u32 count, count × u32 late replica (ascending), f64 this replica's lateness (−1 =
// on time), u64 the mask of the replicas admitted (cluster.restart_lost). Not counted: framing,
// like the clock gather and the words it reports.
Status StageRounds::tell_later_stages(double late_s) {
    std::vector<uint8_t> msg;
    le::Appender a{msg};
    a.u32(static_cast<uint32_t>(late_.size()));
    for (int r : late_) a.u32(static_cast<uint32_t>(r));
    a.f64(late_s);
    a.u64(replica_mask(admitted_));
    for (int s = 1; s < cfg_.cluster.stages; ++s)
        if (Status st = mesh_.send(pipeline_mesh_rank(cfg_, replica_, s), msg, LinkClass::kInterStage, 0, /*count=*/false); !st)
            return Status::error("telling stage " + std::to_string(s) + " who was late: " + st.message());
    return Status::ok();
}

Status StageRounds::take_word_from_stage0(StageRoundsReport& out) {
    auto m = mesh_.recv(pipeline_mesh_rank(cfg_, replica_, 0));
    if (!m) return Status::error("waiting for stage 0's word on who was late: " + m.message());
    // From a peer: checked before it is believed.
    le::Reader r{m->data(), m->size()};
    uint32_t n = 0;
    const auto bad = [](const std::string& why) { return Status::error("stage 0's word on who was late: " + why); };
    if (!r.u32(n) || n >= static_cast<uint32_t>(cfg_.outer.replicas)) return bad("no count, or more late than replicas");
    std::vector<int> late;
    for (uint32_t i = 0; i < n; ++i) {
        uint32_t x = 0;
        if (!r.u32(x) || x == 0 || x >= static_cast<uint32_t>(cfg_.outer.replicas) || (!late.empty() && static_cast<int>(x) <= late.back()))
            return bad("replicas not ascending within 1.." + std::to_string(cfg_.outer.replicas - 1));
        late.push_back(static_cast<int>(x));
    }
    double late_s = 0;
    uint64_t admitted = 0;
    if (!r.f64(late_s) || !r.u64(admitted) || r.left() != 0)
        return bad(std::to_string(m->size()) + " bytes, not a late list, a lateness and an admission mask");
    std::vector<int> admit;
    for (int x = 0; x < 64; ++x) {
        if (!(admitted >> x & 1)) continue;
        // This node's own replica is in the round (stage 0 spoke for it); the admitted one was absent
        // from stage 0's round, whether or not this stage has counted it lost yet.
        if (x >= cfg_.outer.replicas || x == replica_ || x == 0)
            return bad("admits replica " + std::to_string(x) + ", which cannot be restarted into this run");
        admit.push_back(x);
    }
    late_ = std::move(late);
    late_known_ = true;
    admitted_ = std::move(admit);
    const bool me = is_late(replica_);
    if (me != (late_s >= 0) || !std::isfinite(late_s) || (!me && late_s != -1))
        return bad("this replica's lateness " + seconds(late_s) + " does not match the list");
    out.late = late_;
    out.late_s = me ? late_s : -1;
    return Status::ok();
}

std::string late_event_text(int64_t step, const std::vector<int>& late, double deadline_s) {
    return "round at step " + std::to_string(step) + ": replica(s) " + replica_list(late) + " arrived more than " +
           seconds(deadline_s) + " simulated s after the first and were left out";
}

Result<uint64_t> StageRounds::agree_t_fixed(const torch::Tensor& t_fixed) {
    const uint64_t h = state_hash({t_fixed});
    // Among survivors no node can tell every other node present; the table is compared where it is
    // made instead: stage 0's holders in its round (survivor_slice_round), and here each pipeline's
    // nodes with their stage 0 (a node of it lost: the agreement fails and the pipeline leaves).
    std::vector<int> group;
    if (!survivors_)
        for (int r = 0; r < mesh_.size(); ++r) group.push_back(r);
    else if (cfg_.is_pipeline_replica(replica_))
        for (int s = 0; s < cfg_.cluster.stages; ++s) group.push_back(pipeline_mesh_rank(cfg_, replica_, s));
    else
        group.push_back(mesh_.rank());  // a full replica holds stage 0, compared in its round: alone,
                                        // so every node's sequence of mesh rounds stays aligned
    if (Status st = mesh_.agree(group, h); !st) return Status::error("T_fixed: " + st.message());
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
    if (r.survivors) {
        rows.emplace_back(metric::kRoundMembers, static_cast<double>(r.present));
        rows.emplace_back(metric::kRoundAttempts, static_cast<double>(r.attempts));
    }
    return rows;
}

std::vector<std::pair<std::string, double>> StageRounds::late_rows(double late_s) const {
    std::vector<std::pair<std::string, double>> rows{{metric::kRoundLateS, late_s}};
    for (auto& sl : slices_)
        if (sl.algo)
            rows.emplace_back(metric::round_stage_hash(sl.stage),
                              static_cast<double>(state_hash(sl.algo->agreed_state().tensors) >> 12));
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
