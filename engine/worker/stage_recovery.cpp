// The hand-over of stage slices to a rejoining replica; see stage_recovery.h.
#include "engine/worker/stage_recovery.h"

#include <algorithm>

#include <torch/torch.h>

#include "core/layout.h"
#include "core/pipeline_program.h"
#include "engine/worker/recovery.h"

namespace tw {
namespace {

// The joiner's first slice carries T_fixed: a pipeline's stage node holds one slice, a full
// replica all S from stage 0.
int64_t first_stage_of(const RunConfig& cfg, int replica, int64_t stage) {
    return cfg.is_pipeline_replica(replica) ? stage : 0;
}

// Takes the entries named `name` out of `s` (at most one is expected).
std::vector<torch::Tensor> take_entry(OuterState& s, const std::string& name) {
    std::vector<torch::Tensor> out;
    OuterState rest;
    for (auto& e : s) {
        if (e.first == name) out.push_back(e.second);
        else rest.push_back(std::move(e));
    }
    s = std::move(rest);
    return out;
}

Status same_shape(const std::string& what, const torch::Tensor& got, const torch::Tensor& want) {
    if (got.scalar_type() != want.scalar_type() || got.sizes() != want.sizes())
        return Status::error(what + " of another dtype or shape than this node's");
    return Status::ok();
}

}  // namespace

Result<StageHandOver> send_stage_states(const RunConfig& cfg, int replica, const FaultSchedule& schedule, int64_t step,
                                        const std::vector<int>& late, double clock_s, Collective& mesh,
                                        const StageRecoveryParts& parts) {
    StageHandOver out;
    if (replica != 0 || !parts.rounds) return out;
    std::vector<int> to_send = late;
    if (!schedule.empty())
        for (int r : schedule.rejoining(step)) to_send.push_back(r);
    // Restarted replicas the round admitted have said they are up already (Membership::kReadyLive).
    const std::vector<int>& admitted = parts.rounds->admitted();
    to_send.insert(to_send.end(), admitted.begin(), admitted.end());
    std::sort(to_send.begin(), to_send.end());
    to_send.erase(std::unique(to_send.begin(), to_send.end()), to_send.end());
    for (int r : to_send) {
        if (parts.rounds->replica_lost(r)) continue;  // gone again: nobody to send to
        int told = -1;  // the joiner's node whose word this node has had
        const bool said_up = std::count(admitted.begin(), admitted.end(), r) > 0;
        for (auto& sl : parts.rounds->slices()) {
            const int to = pipeline_mesh_rank(cfg, r, static_cast<int>(sl.stage));
            if (to != told && !said_up) {
                // A restarted node says when it is up; the state is never sent to one that has died.
                if (Status st = mesh.membership().wait_ready(to, static_cast<uint64_t>(step)); !st) {
                    if (parts.rounds->replica_lost(r)) break;
                    return Status::error("waiting for replica " + std::to_string(r) + "'s stage-" +
                                         std::to_string(sl.stage) + " node to rejoin: " + st.message());
                }
            }
            told = to;
            if (!sl.algo) return Status::error("stage " + std::to_string(sl.stage) + " has no outer state to hand over");
            RecoveryState s;
            s.step = step;
            s.rounds = parts.rounds->rounds_done();
            s.clock_s = clock_s;
            s.members = parts.rounds->present();
            s.lost = mesh.membership().lost_members();
            s.outer = donor_state(*sl.algo, sl.params);
            s.outer.emplace_back("stage", torch::tensor({sl.stage}, torch::kInt64));
            if (parts.t_fixed.defined() && sl.stage == first_stage_of(cfg, r, sl.stage))
                s.outer.emplace_back("t_fixed", parts.t_fixed.detach().clone());
            if (has_embedding_shadow(cfg, r, static_cast<int>(sl.stage))) {
                // θ_global's embedding: this node's copy, or stage 0's global weights it holds.
                const StageSlice* first = parts.rounds->slice_of(0);
                torch::Tensor emb = parts.shadow ? parts.shadow->eval_params().at(0)
                                    : first && first->algo ? first->algo->eval_params().at(0)
                                                           : torch::Tensor();
                if (!emb.defined())
                    return Status::error("replica " + std::to_string(r) + "'s stage-" + std::to_string(sl.stage) +
                                         " node needs θ_global's embedding, which this node does not hold");
                s.outer.emplace_back("shadow.emb", emb.detach().clone());
            }
            const auto bytes = encode_recovery(s);
            // Not counted on the link's round counters: recovery bytes are their own figure.
            if (Status st = mesh.send(to, bytes, LinkClass::kOuterSync, clock_s, /*count=*/false); !st) return st;
            out.bytes += bytes.size();
            out.texts.push_back("sent stage " + std::to_string(sl.stage) + "'s state after the round at step " +
                                std::to_string(step) + " to replica " + std::to_string(r) + " (mesh rank " +
                                std::to_string(to) + "): " + std::to_string(bytes.size()) + " B");
        }
    }
    return out;
}

Result<StageHandOver> receive_stage_states(const RunConfig& cfg, int replica, int64_t step, Collective& mesh,
                                           const NetworkProfile& net, StageRecoveryParts& parts, int64_t live_from) {
    StageHandOver out;
    if (!parts.rounds) return Status::error("no stage rounds to rejoin");
    const bool live = live_from >= 0;
    const std::vector<int> own = parts.rounds->mesh_ranks_of(replica);
    if (live) {
        // The round is not known yet: the wait starts in an epoch before any the state can come
        // from (the round at live_from or later), keeping the next round's frames however far
        // ahead.
        parts.rounds->enter_rejoin_epoch(std::max(live_from - 1, parts.rounds->origin_step()));
        mesh.membership().await_admission();
    } else {
        // The donors send in the epoch the holders train in after the round; entered now, no frame
        // of the next round is ever too far ahead for this node (Membership::begin_epoch).
        parts.rounds->enter_rejoin_epoch(step);
    }
    // Every peer but this replica's other fresh nodes hears that this node is up: the donor sends
    // the state only then, and after a scheduled kill the other holders send the next round's frames
    // only then (StageRounds::await_fresh_holders).
    const uint64_t up = live ? Membership::kReadyLive : static_cast<uint64_t>(step);
    for (int k = 0; k < mesh.size(); ++k)
        if (!std::count(own.begin(), own.end(), k)) mesh.membership().tell_ready(k, up);
    std::vector<int> members, lost;
    for (auto& sl : parts.rounds->slices()) {
        const std::string where = "stage " + std::to_string(sl.stage) + "'s state from replica 0: ";
        const int from = pipeline_mesh_rank(cfg, 0, static_cast<int>(sl.stage));
        RecoveryState s;
        uint64_t size = 0;
        for (;;) {
            int got_from = -1;
            auto m = mesh.recv_any({from}, &got_from);
            if (!m) return Status::error("waiting for " + where + m.message());
            if (!is_recovery_message(*m)) continue;  // a message of an abandoned round
            auto d = decode_recovery(*m);
            if (!d) return Status::error(where + d.message());
            if (live && step < 0 && d->step >= live_from) {
                // The first state after the restart: the round this node was admitted at. The
                // epoch its holders train in after it admits this process (core/collective.h).
                step = d->step;
                parts.rounds->enter_rejoin_epoch(step);
            }
            if (d->step != step) continue;  // an older one (live: sent to the process that died)
            s = std::move(*d);
            size = m->size();
            break;
        }
        for (int r : s.members)
            if (r >= cfg.outer.replicas) return Status::error(where + "names replica " + std::to_string(r) + " of " +
                                                              std::to_string(cfg.outer.replicas));
        if (std::find(s.members.begin(), s.members.end(), 0) == s.members.end())
            return Status::error(where + "its round went without replica 0");
        for (int k : s.lost)
            if (k >= mesh.size()) return Status::error(where + "names mesh rank " + std::to_string(k) + " of " + std::to_string(mesh.size()));
        // Everything is checked before anything of the slice changes.
        const auto stage = take_entry(s.outer, "stage");
        if (stage.size() != 1 || stage[0].scalar_type() != torch::kInt64 || stage[0].numel() != 1 ||
            stage[0].item<int64_t>() != sl.stage)
            return Status::error(where + "not this slice's state (stage entry missing or another stage)");
        const auto table = take_entry(s.outer, "t_fixed");
        const bool wants_table = parts.t_fixed.defined() && sl.stage == first_stage_of(cfg, replica, sl.stage);
        if (table.size() != (wants_table ? 1u : 0u))
            return Status::error(where + (wants_table ? "no T_fixed" : "a T_fixed this slice does not take"));
        if (wants_table)
            if (Status st = same_shape(where + "T_fixed", table[0], parts.t_fixed); !st) return st;
        const auto emb = take_entry(s.outer, "shadow.emb");
        const bool wants_emb = parts.shadow && parts.shadow_emb.defined();
        if (emb.size() != (wants_emb ? 1u : 0u))
            return Status::error(where + (wants_emb ? "no copy of θ_global's embedding" : "an embedding this node keeps no copy of"));
        if (wants_emb)
            if (Status st = same_shape(where + "the embedding", emb[0], parts.shadow_emb); !st) return st;
        if (!sl.algo) return Status::error(where + "this node has no outer state to take it into");
        if (Status st = apply_donor_state(*sl.algo, sl.params, s.outer); !st) return Status::error(where + st.message());
        torch::NoGradGuard no_grad;
        // A compressed slice under AD1 holds its global weights projected into its own subspace
        // after a round (the donor's live ones may be another subspace's, or none).
        if (sl.rank > 0 && cfg.pipeline.has("ad1")) {
            const auto global = sl.algo->eval_params();
            for (size_t i = 0; i < sl.params.size(); ++i) sl.params[i].copy_(global[i]);
            sl.project_writers(sl.params);
        }
        if (wants_table) parts.t_fixed.copy_(table[0]);
        if (wants_emb) {
            if (Status st = parts.shadow->load_state({{"global.0", emb[0]}}); !st) return Status::error(where + st.message());
            parts.shadow_emb.copy_(emb[0]);
        }
        if (s.rounds != parts.rounds->rounds_done())
            return Status::error(where + "counts " + std::to_string(s.rounds) + " rounds since the transports started, this node " +
                                 std::to_string(parts.rounds->rounds_done()));
        members = s.members;
        lost = s.lost;
        out.bytes += size;
        const LinkSpec link = round_link(net, replica, {0, replica}, 1);
        out.ready_s = std::max(out.ready_s, s.clock_s + transfer_s(link, size));
        out.texts.push_back("took stage " + std::to_string(sl.stage) + "'s state after the round at step " +
                            std::to_string(step) + " from replica 0: " + std::to_string(size) + " B");
    }
    if (live) {
        // Counted lost here while it waited (its own nodes' restart, stale words about them): the
        // donor's list is what holds now.
        for (int k = 0; k < mesh.size(); ++k)
            if (k != mesh.rank() && !std::count(lost.begin(), lost.end(), k)) mesh.membership().forgive(k);
    }
    for (int k : lost)
        if (k != mesh.rank()) mesh.membership().declare_lost(k);
    parts.rounds->rejoin(step, members);
    out.step = step;
    return out;
}

}  // namespace tw
