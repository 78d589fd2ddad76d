// One node's per-stage outer rounds after a step; see stage_round_step.h.
#include "engine/worker/stage_round_step.h"

#include "core/algorithm.h"
#include "core/metric_names.h"
#include "core/round_clock.h"

namespace tw {

Status stage_round_step(const StageRoundNode& n, int64_t step, const StageRoundActs& acts) {
    if (n.down_until >= 0 && algorithm_traits(n.cfg).outer_rounds && step % n.cfg.outer.inner_steps == 0) {
        // Disconnected: no round; after the one it rejoins at, replica 0's state replaces its own.
        if (step < n.down_until) return Status::ok();
        n.down_until = -1;
        return acts.take_states(step);
    }
    auto rep = n.rounds.round(step, n.clock.now_s());
    if (!rep) return rep.status();
    if (!rep->synced) return Status::ok();
    ++n.outer_step;
    // Rounds redone among the survivors after a loss (stage_rounds.h, docs/faults.md).
    for (auto& text : rep->lost) n.rec.warn("member-lost", text);
    if (rep->late_s >= 0) {
        // Past outer.round_deadline_s: the replica is out of the round, its own pseudo-gradient
        // dropped; each slice takes replica 0's state after it (its AdamW kept, as after a disconnect).
        n.round_compute_s = 0;
        if (Status st = acts.take_states(step); !st) return st;
        n.rec.record_all(step, n.rounds.late_rows(rep->late_s));
        return Status::ok();
    }
    if (n.reports_late && !rep->late.empty())
        n.rec.warn("late", late_event_text(step, rep->late, n.cfg.outer.round_deadline_s));
    const RoundTiming timing{RoundKind::kStages, LinkClass::kOuterSync,
                             n.replica,          rep->members(n.cfg.outer.replicas),
                             {rep->latest_s},    rep->bytes,
                             rep->hops};
    const LinkSpec link = round_link(n.net, n.replica, timing.members, rep->hops);  // for the round's own cost
    const double exposed = close_round(n.clock, RoundKind::kStages, round_end(n.net, topology_of(n.cfg), timing));
    if (acts.after_close)
        if (Status st = acts.after_close(step); !st) return st;
    if (n.t_fixed.defined()) {
        auto h = n.rounds.agree_t_fixed(n.t_fixed);
        if (!h) return h.status();
        n.rec.record(step, metric::kRoundTFixedHash, static_cast<double>(*h));
    }
    n.rec.record_all(step, stage_round_rows(*rep));
    acts.record_round(step, *rep, round_comm_s(link, rep->bytes, rep->hops), exposed);
    n.round_compute_s = 0;
    // Replica 0's node hands its slices' state to the nodes of replicas rejoining after this round.
    auto sent = send_stage_states(n.cfg, n.replica, n.faults, step, rep->late, n.clock.now_s(), n.mesh, n.recovery);
    if (!sent) return Status::error(n.rec.node() + ": " + sent.message());
    n.recovery_sent += sent->bytes;
    for (auto& text : sent->texts) n.rec.info("recovery", text);
    return Status::ok();
}

}  // namespace tw
