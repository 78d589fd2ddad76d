// The replica worker (replica_worker.h) as a class, shared by the source files that hold its parts:
// the training loop and its rounds (replica_worker.cpp), the rounds that survive lost replicas —
// attempts redone among the survivors, late replicas, spares, joiners and restarted processes —
// (replica_recovery.cpp), and the fault schedule's application (replica_faults.cpp). Internal to
// engine/worker: nothing outside those three files includes it.
//
// Thread-safety: one worker thread; the abort predicate it installs is read by the transport.
#pragma once

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include <torch/optim/adamw.h>

#include "core/algorithm.h"
#include "core/compute_model.h"
#include "core/config_io.h"
#include "core/fault_schedule.h"
#include "core/hash.h"
#include "core/layout.h"
#include "core/member_view.h"
#include "core/metric_names.h"
#include "core/network.h"
#include "core/sim_clock.h"
#include "core/time_budget.h"
#include "engine/algo/ddp.h"
#include "engine/algo/outer.h"
#include "engine/algo/state_hash.h"
#include "engine/data/dataset.h"
#include "engine/data/stream_check.h"
#include "engine/pipeline/subspace.h"
#include "engine/train/trainer.h"
#include "engine/worker/final_model_sender.h"
#include "engine/worker/node_data.h"
#include "engine/worker/recovery.h"
#include "engine/worker/replica_places.h"
#include "engine/worker/replica_worker.h"
#include "engine/worker/node_summary.h"
#include "engine/worker/node_worker.h"
#include "engine/worker/run_checkpoint.h"
#include "engine/worker/scheduled_faults.h"
#include "engine/worker/stage_recovery.h"
#include "engine/worker/stage_round_step.h"
#include "engine/worker/stage_rounds.h"
#include "engine/worker/stage_state.h"
#include "engine/worker/worker_recorder.h"

namespace tw::replica_impl {

using Clock = WorkerClock;
// "0, 2, 3": replicas for events and errors.
inline std::string replica_list(std::vector<int> rs) {
    std::sort(rs.begin(), rs.end());
    std::string out;
    for (int r : rs) out += (out.empty() ? "" : ", ") + std::to_string(r);
    return out;
}
inline std::string num(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v);
    return b;
}

inline uint64_t weights_checksum(const std::vector<torch::Tensor>& params) {
    uint64_t h = kHashSeed;
    for (auto& p : params) {
        auto c = p.detach().contiguous();
        h = seeded_hash64(std::string_view(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size()), h);
    }
    return h;
}

class ReplicaWorker : public NodeWorker {
public:
    ReplicaWorker(NodeParts parts, GroupStore store) : NodeWorker(std::move(parts)), store_(std::move(store)) {}

    Result<WorkerSummary> run(WorkerControl& ctl, MetricSink& sink) override;

private:
    Status setup(WorkerControl& ctl, MetricSink& sink);
    // The trainer over the prepared data and, on a replica leader of an outer algorithm, the
    // algorithm: at the start, and again when a killed worker comes back (docs/faults.md).
    Status build_training();
    Status ddp_round(int64_t step, double step_compute_s);
    Status outer_round(int64_t step);
    // ---- rounds that survive lost replicas (docs/faults.md) ----
    // Whether this node's rounds run among the replicas present: a replica leader of an outer
    // algorithm, no pipelines.
    bool elastic() const { return outer_ && mesh_ && !in_pipeline_run(); }
    // Whether this node's replica leaves the run as a whole when its gradient group fails (a node of
    // it lost): any node of a replica of several nodes under an outer algorithm (docs/faults.md).
    bool may_leave() const { return grads_ && algorithm_traits(cfg_).outer_rounds && !in_pipeline_run(); }
    // A node of a replica of several nodes that is not its leader (no mesh, no outer algorithm): it
    // follows its leader's weights and clock after every round, and the fault schedule of its
    // replica (docs/faults.md "Replicas of several nodes").
    bool group_follower() const { return grads_ && !mesh_ && algorithm_traits(cfg_).outer_rounds && !in_pipeline_run(); }
    // The gradient average over the replica's Gloo group, on the current trainer's parameters
    // (again after a killed worker is rebuilt).
    void install_grad_sync();
    // The leader's weights and clock reach the replica's other nodes over their Gloo group (after
    // a round, or after the leader took a live peer's state); no round rows. A no-op alone.
    Status follow_in_group();
    // Over the Gloo group: the leader's weights and `end_s` (its clock) go out, every node's `end_s`
    // becomes the leader's plus the transfer (SimClock::follow_leader).
    Status broadcast_from_leader(double& end_s);
    // The replica leaves: an event names why; the worker ends after this step (its peers find the
    // leader gone and redo their round without it).
    void leave(const Status& why) {
        leaving_ = true;
        rec_.warn("leave", "replica " + std::to_string(role_.replica) +
                               " leaves the run as a whole: its gradient group failed (" + why.message() + ")");
    }
    // Every mesh rank but this node's: whoever may send a node that is in no round its state.
    std::vector<int> mesh_peers() const {
        std::vector<int> out;
        for (int k = 0; k < mesh_->size(); ++k)
            if (k != mesh_->rank()) out.push_back(k);
        return out;
    }
    // Whether the data plane counts replica `r` lost (the node holding its place found silent or
    // gone, or told so by a peer).
    bool lost(int r) const { return rank_lost(rank_of(r)); }
    bool rank_lost(int k) const {
        const auto l = mesh_->membership().lost_members();
        return std::find(l.begin(), l.end(), k) != l.end();
    }
    // ---- spares (cluster.spares, docs/faults.md "Spares"): places_ says who holds each replica ----
    int rank_of(int r) const { return places_.rank_of(r); }
    int slot_of(int k) const { return places_.replica_at(k); }
    // Whether replica r takes part in the round at `step`: scheduled in, or its place refilled.
    bool scheduled(int r, int64_t step) const { return faults_.in_round(r, step) || places_.refilled(r); }
    std::vector<int> scheduled_members(int64_t step) const {
        std::vector<int> out;
        for (int r = 0; r < role_.replicas; ++r)
            if (scheduled(r, step)) out.push_back(r);
        return out;
    }
    // After the round at `step`: the places lost for good, each given to a spare standing by (every
    // member computes the same pairs); returns (replica, spare's mesh rank).
    std::vector<std::pair<int, int>> refill(int64_t step);
    // A spare's wait: until a donor hands it a lost replica's place (taken on), or every peer is
    // gone (`needed` = false: the run ended without it).
    Status stand_by(bool& needed);
    // A recovery message of `bytes` from mesh rank `from`.
    struct DonorMessage {
        RecoveryState state;
        size_t bytes = 0;
        int from = -1;
    };
    // A waiting node's next recovery message from any other mesh member (a spare, a restarted
    // process: it is in no round, so any peer may send it); nullopt when every peer left the run
    // first, which the info event `gone` (kind, text) then says. `waiting` names the wait in errors.
    Result<std::optional<DonorMessage>> state_from_anyone(const std::string& waiting,
                                                          const std::pair<std::string, std::string>& gone);
    // ---- restarted nodes (cluster.restart_lost, docs/faults.md "Restarted nodes") ----
    // A fresh process after a real loss: tells every peer it is up (Membership::kReadyLive) and
    // waits for the state a donor sends once the members admit it after a round; `joined` = false
    // when every peer ended first (the run finished without it).
    Status rejoin_live(bool& joined);
    // The same for a full replica of a run with pipeline replicas: its stage rounds admit it, and
    // it takes every slice from replica 0's node (stage_recovery.h).
    Status rejoin_stages_live(bool& joined);
    // A replica of several nodes restarted as a whole: the leader's step (its `joined` = false: −1,
    // the run ended without it) reaches the group's other nodes, which set it and `joined`.
    Status share_step_in_group(bool& joined);
    // In a round attempt among `members` (replicas, mesh-rank order) over `all`: the restarted
    // replicas every member has heard from (the AND of the members' masks), in `admit`.
    Status admission(MemberView& all, const std::vector<int>& members, std::vector<int>& admit);
    // Takes on a donor's state `s` (a message of `bytes` from mesh rank `from`) after the round at s.step.
    Status take_state(const RecoveryState& s, size_t bytes, int from);
    // One round among the members present, redone among the survivors when a member is lost in it;
    // `late` receives the members left out by the deadline. The report's members are replicas.
    Result<RoundReport> elastic_round(int64_t step, std::vector<int>& late);
    // After the round at `step` ended at simulated `end_s`: the donor sends the state to the
    // replicas that rejoin now and to the late ones; a late replica receives it.
    Status catch_up(int64_t step, double end_s, const std::vector<int>& late);
    // A joiner's or late replica's side: waits for the donor's state (the lowest of `candidates`
    // that is alive) and takes it on. A joiner (`joining`) first tells the donor it is ready: the
    // donor waits for that word, so a state is never sent to a process that has since died.
    Status receive_state(int64_t step, const std::vector<int>& candidates, bool joining = true);
    // A full replica of a run with pipeline replicas, back after a scheduled kill: a fresh inner
    // optimizer and every stage slice's state from replica 0's holders (stage_recovery.h).
    Status rejoin_stages(int64_t back);
    // Replica 0's state of every slice after the round at `step` in place of this node's; a
    // restarted process passes −1 and live_from (stage_recovery.h) and goes on from the round it
    // was admitted at.
    Status take_stage_states(int64_t step, int64_t live_from = -1);
    // The transport's attempt number of the round at `step` (a multiple of the round period):
    // 16 per round, so an attempt's frames and the next round's stay inside the transport's window.
    uint64_t epoch_of(int64_t step, int attempt) const {
        return static_cast<uint64_t>(step / round_period(cfg_)) * 16 + static_cast<uint64_t>(attempt);
    }
    // Begins attempt `e` unless one as late has begun: a joiner enters the round it joins after
    // before it waits, so the next round's frames from its peers are not "too far ahead" for it.
    void enter_epoch(uint64_t e) {
        if (e <= epoch_) return;
        mesh_->membership().begin_epoch(e);
        epoch_ = e;
    }
    // To mesh rank `to`; `slot` ≥ 0 hands a spare that replica's place.
    Status send_state(int to, int slot, int64_t step, double clock_s);
    // The scheduled faults that start after step `step` (a kill returns with `left` set when the
    // replica does not come back).
    Status apply_faults(int64_t step, double step_compute_s, bool& left);
    // A full replica of a run with pipeline replicas: S per-stage rounds (stage_rounds.h).
    Status stage_round(int64_t step);
    bool in_pipeline_run() const { return cfg_.cluster.stages > 1; }
    // train.ckpt_path (one-node runs): a checkpoint when due, or `final`; an event names it.
    Status checkpoint(bool final, MetricSink& sink);
    // Run-scoped checkpoints (train.ckpt_every, run_checkpoint.h): the one of step `step`, its
    // rows last among the step's; and, resuming, the load of role.resume_step's.
    Status save_run_checkpoint(int64_t step, MetricSink& sink);
    Status resume_run_checkpoint(MetricSink& sink);
    // A full replica of a pipeline run: its stage slices' outer state and T_fixed (stage_state.h).
    StageStateParts stage_parts();
    // The metrics every synchronisation round reports, whatever the algorithm.
    void record_round(int64_t step, uint64_t bytes, int64_t hops, double compute_s, double comm_s, double exposed_s);
    // Measured exchange seconds so far: the mesh's rounds and the wall time inside Gloo's calls.
    double real_exchange_s() const { return (mesh_ ? mesh_->real_exchange_s() : 0) + gloo_real_s_; }
    ByteCounters total_bytes() const;  // the mesh's and the Gloo group's counters added up
    WorkerSummary summarise() const;
    double evaluate_global();
    // The lowest replica of the last round evaluates (replica 0 unless it was lost or is away).
    bool is_evaluator() const {
        return role_.rank == 0 && down_until_ < 0 && (members_.empty() ? role_.replica == 0 : members_.front() == role_.replica);
    }

    GroupStore store_;  // declared before grads_: the Gloo group closes first, then the store

    NetworkProfile net_;
    std::unique_ptr<Trainer> trainer_;
    std::unique_ptr<GradAllReduce> grads_;
    std::unique_ptr<OuterAlgorithm> outer_;  // replica leaders of the non-DDP algorithms
    std::unique_ptr<StageRounds> stage_rounds_;  // instead of outer_ in a run with pipeline replicas
    torch::Tensor t_fixed_;                      // [V, d] when that run compresses anything
    LinkClass grad_link_ = LinkClass::kIntraReplica;
    SimClock clock_;  // this node's simulated clock (core/sim_clock.h)
    ComputeTime compute_;  // measured or modelled seconds of a step (core/compute_model.h)
    double round_compute_s_ = 0;
    double gloo_real_s_ = 0, real_at_last_round_ = 0;
    int64_t outer_step_ = -1;
    int64_t n_params_ = 0;
    double last_loss_ = NAN, last_val_ = NAN;
    int64_t last_val_step_ = -1;  // the step of last_val_: with faults, several replicas evaluate in turn
    std::vector<std::string> guard_events_;  // warnings of the last round, for the sink
    std::shared_ptr<PreparedData> data_;
    FaultSchedule faults_;          // [faults] (empty: no scheduled faults)
    // Member lists of rounds are replicas in the order of the mesh ranks holding them (a MemberView's
    // order; ascending replicas until a spare takes a place).
    std::vector<int> members_;      // replicas of the last round's aggregate (empty until the first)
    std::vector<int> last_round_;   // replicas present at the last round (the late included)
    ReplicaPlaces places_;          // who holds each replica's place (elastic runs; engine/worker/replica_places.h)
    bool standby_ = false;          // a spare not (yet) holding a place
    bool leaving_ = false;          // the replica leaves the run (may_leave)
    std::vector<int> admitted_;     // restarted replicas admitted in the last round: state sent, counted in from the next
    int64_t rounds_ = 0;            // synchronisation rounds this replica's place took part in
    uint64_t epoch_ = 0;            // the transport's attempt number last begun (enter_epoch)
    int64_t down_until_ = -1;       // disconnected: away through the round at this step; −1 = present
    uint64_t recovery_sent_ = 0, recovery_recv_ = 0;
    RecoveryBytes recovery() const { return {recovery_sent_, recovery_recv_}; }
    int64_t tokens_done_ = 0;  // tokens this replica trained on
    WorkerControl* ctl_ = nullptr;
    RunCheckpoints run_ckpt_;
    ByteCounters bytes_before_;  // a resumed node's counters at its checkpoint (total_bytes adds them)
};

}  // namespace tw::replica_impl
