// The per-stage outer rounds of a run with pipeline replicas (docs/methods.md §7): the model is cut
// into S stage slices, and every H steps the holders of each slice (every full replica's slice s
// and every pipeline's stage-s node) sync it with the outer algorithm, S groups one after the
// other over the data-plane mesh, with the AD switches' hooks. A full replica holds all S slices
// and runs the replica worker's loop with these rounds in place of its whole-model round; a stage
// node holds one slice and sits out the other stages' rounds alone, so every member's sequence of
// mesh rounds stays aligned.
//
// Stragglers (outer.round_deadline_s, survivors only): stage 0's holders first gather their clocks
// in the round's first attempt; a replica whose stage-0 node (where a pipeline's backward ends)
// arrived more than the deadline after the first is left out of every stage's round (replica 0
// never is: it evaluates and hands the state over). Each pipeline's stage-0 node tells its later
// stages who was late (framing only), and the late replica's nodes take replica 0's state after the
// round (stage_recovery.h), their own pseudo-gradient of the round dropped.
//
// Survivors (docs/faults.md, core/layout.h pipeline_survives_loss): in a run that allows it, each
// stage's round runs among the stage's holders of the replicas still present, as attempts numbered
// with Membership::begin_epoch; the holders first compare the replicas they count present
// (stage_members.h), and a round a loss interrupts is rolled back (the slice's algorithm state and
// live weights) and redone among the survivors. A replica counts lost as soon as any of its nodes
// is (a pipeline replica leaves as a whole); its other nodes are told they are out.
//
// Restarted replicas (cluster.restart_lost, docs/faults.md "Restarted nodes"): a replica lost for
// real whose nodes were all started afresh (a pipeline restarts as a whole) says so from each node
// (Membership::kReadyLive). In every attempt of stage 0's round its holders gather one word each,
// the mask of absent replicas whose every node they have heard; those in every mask are admitted,
// and a pipeline's stage 0 passes the list on to its later stages with the late list. After the
// round every node counts the admitted replicas in again (forgive) and present from the next round
// on; replica 0's holders send them each stage's state (stage_recovery.h).
//
// Ownership: keeps handles to the node's live parameters (changes their values in place) and to
// T_fixed (AD2 moves the embedding's out-of-span part into it; same storage as the model's).
// The mesh is borrowed and must outlive this object; the config is copied. Not thread-safe: one worker thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "core/collective.h"
#include "core/config.h"
#include "core/fault_schedule.h"
#include "core/member_view.h"
#include "core/status.h"
#include "engine/algo/outer.h"
#include "engine/pipeline/hetero.h"

namespace tw {

// One stage slice this node holds.
struct StageSlice {
    int64_t stage = 0;
    std::vector<torch::Tensor> params;  // the live tensors of the stage, in the model's order
    std::vector<std::string> names;
    int64_t rank = 0;  // constraint rank of its residual writers; 0 = free
    torch::Tensor u;   // [d, rank] subspace basis (rank > 0)
    std::unique_ptr<MemberView> group;  // the stage's holders, one per replica, in replica order
    std::unique_ptr<OuterAlgorithm> algo;    // null when the run's algorithm has no outer rounds
    bool ad1_after_round = false;  // AD1 applied after each round here (the algorithm has no hook for it)

    // Puts `tensors` (this slice's params or a copy of them) back into the writers' subspace.
    void project_writers(std::vector<torch::Tensor>& tensors) const;
    // 52 bits of the state hash of the slice's global weights: exact as a metric value (a double).
    double global_hash() const;
};

// What one step's rounds did on this node, summed over the slices it holds.
struct StageRoundsReport {
    bool synced = false;     // false: not a round step (nothing else is set)
    uint64_t bytes = 0;      // payload bytes this node sent, every slice's
    int64_t hops = 1;        // the most sequential transfers of any slice's round
    int64_t guard_clipped = 0;
    double latest_s = 0;     // the latest member clock of any slice's round (at least the start)
    std::vector<std::pair<int64_t, uint64_t>> stage_hashes;  // (stage, 52-bit agreed hash) per slice held
    std::vector<uint64_t> member_masks;  // per slice held: the replicas its round exchanged with
    bool grouped = false;                // some round exchanged with a group only (NoLoCo), or among survivors
    int64_t present = 0;                 // replicas present in the rounds (survivors; 0 = not tracked)
    int64_t attempts = 1;                // the most attempts any slice's round took
    bool survivors = false;              // fewer than every replica, or a redone round: rows record it
    std::vector<std::string> lost;       // one text per round redone after a loss (member-lost events)
    // outer.round_deadline_s: the replicas left out of this round as late (ascending), and, when this
    // node's replica is one of them, how late it was (simulated s after the first arrival; −1 = on
    // time). A late replica's nodes ran no stage round: each takes replica 0's state after it.
    std::vector<int> late;
    double late_s = -1;

    // The replicas any of this node's rounds exchanged with, ascending (core/network.h round_link).
    std::vector<int> members(int64_t replicas) const;
};

// The `late` event's text: which replicas a round at `step` left out past the deadline.
std::string late_event_text(int64_t step, const std::vector<int>& late, double deadline_s);

// The metric rows a synced round adds beside round_metrics (core/metrics.h): each stage's agreed
// hash, the guard's count when it scaled anything, and the member masks when a round was grouped.
std::vector<std::pair<std::string, double>> stage_round_rows(const StageRoundsReport& r);

class StageRounds {
public:
    // Slices for stages [first, last] of `replica` out of `params`/`names` (a full replica passes
    // the whole model and 0..S−1; a stage node its stage's parameters and that stage). Builds each
    // slice's stage group and outer algorithm with the AD switches' hooks, moves the embedding's
    // out-of-span part into `t_fixed` under AD2 (every holder of stage 0 alike), and projects the
    // writers into their subspace so the constraint holds from the first step.
    static Result<std::unique_ptr<StageRounds>> create(const RunConfig& cfg, int replica, int64_t first, int64_t last,
                                                       const std::vector<torch::Tensor>& params,
                                                       const std::vector<std::string>& names, Collective& mesh,
                                                       torch::Tensor t_fixed);
    ~StageRounds();

    // Same seed → same weights: each stage's holders compare their slice's global hash (S rounds).
    Status check_weights(const std::string& who);
    // Every H steps (step % H == 0): S rounds, each among the stage's holders, each followed by the
    // round agreement; a stage this node holds no slice of is sat out alone. `start_s` is this
    // node's clock when the round starts.
    Result<StageRoundsReport> round(int64_t step, double start_s);
    // Whether the data plane counts replica `r` lost: any of its nodes found silent or gone.
    bool replica_lost(int r) const;
    // Survivors: whether this node's replica is out of the rounds — a node of it counts lost here,
    // a peer counted it out (Membership::tell_out), or the holders' sets of present replicas left it
    // out. Its nodes then leave the run (the pipeline as a whole).
    bool left_out() const;
    // Why left_out() holds, for the `leave` event.
    std::string out_reason() const;
    // Survivors only: whether this run's rounds go on among the replicas present.
    bool survives_loss() const { return survivors_; }
    // A fault schedule ([faults], core/fault_schedule.h): a replica it has down is out of the rounds
    // from the first one it misses on every holder alike, and that round's clock pays the heartbeat
    // timeout the survivors would wait for it (as docs/faults.md says of scheduled kills). Borrowed;
    // must outlive this object. Null or empty: none.
    void set_schedule(const FaultSchedule* schedule) { schedule_ = schedule; }
    // The step the rounds are counted from: 0, or the step a resumed run's nodes start at (every
    // node's transport starts afresh then, and so does the count the attempts are numbered by).
    void start_at(int64_t step) { origin_step_ = step; }
    // Synced rounds since the transports started (the attempts' numbering).
    int64_t rounds_done() const { return rounds_done_; }
    int64_t origin_step() const { return origin_step_; }
    // The mesh ranks of replica r's nodes: a pipeline's S stage nodes, a full replica's one.
    std::vector<int> mesh_ranks_of(int r) const;
    // Rejoining after a scheduled absence (docs/faults.md "Pipeline replicas"). The node (its
    // process stays; the transport keeps counting) first enters the transport epoch the holders
    // train in after the round at `step` (enter_rejoin_epoch), so no frame of the next round is
    // ever too far ahead for it (the caller checks the donor counts the same rounds). Then, holding
    // the state, it takes the round's members from the donor (the replicas present in it): it is in
    // the rounds from the next one on, and a replica the schedule had in that round but the round
    // went without counts lost for good here too.
    void enter_rejoin_epoch(int64_t step);
    // Before a stage's first round after a scheduled kill's rejoin at `step` − H: waits for each
    // rejoining holder's ready word (receive_stage_states sends it to every peer). A frame of this
    // round sent earlier could reach the process that was about to be killed, still reading while
    // it waited for its pipeline's nodes to stop together, and be lost with it; after the word,
    // frames reach the fresh process. Silence ends the wait as any loss does.
    void await_fresh_holders(int64_t stage, int64_t step);
    void rejoin(int64_t step, const std::vector<int>& members);
    // The replicas present in the last round, ascending (survivors; every replica otherwise);
    // after a round that admitted restarted replicas, they are in it too.
    const std::vector<int>& present() const { return present_; }
    // The restarted replicas the last round admitted (cluster.restart_lost), ascending: present
    // from the next round on, each to be sent the state after this one.
    const std::vector<int>& admitted() const { return admitted_; }
    // Every node of the run must hold the same T_fixed (AD2 changes it everywhere alike): one mesh
    // round over every node. Returns the 52-bit hash agreed on.
    Result<uint64_t> agree_t_fixed(const torch::Tensor& t_fixed);

    // The rows a late replica's node records once it has taken replica 0's state after the round:
    // round.late_s, and each slice's agreed state's 52-bit hash as the members' round agreement
    // records it (round.stage<s>_hash), so what it now holds can be compared with theirs.
    std::vector<std::pair<std::string, double>> late_rows(double late_s) const;
    // The writers of every slice back into their subspace (the `project` constraint, AD5).
    void project_writers();
    // The global weights of every slice swapped in for an evaluation.
    void swap_in_global(GlobalWeightsSwap& swap) const;

    std::vector<StageSlice>& slices() { return slices_; }
    const StageSlice* slice_of(int64_t stage) const;

private:
    StageRounds(const RunConfig& cfg, Collective& mesh) : cfg_(cfg), mesh_(mesh) {}
    Status build(int replica, int64_t first, int64_t last, const std::vector<torch::Tensor>& params,
                 const std::vector<std::string>& names, torch::Tensor t_fixed);
    // A node holding no slice of a stage joins that stage's mesh round alone (nothing is sent).
    Status sit_out_round() { return mesh_.exchange({mesh_.rank()}, {}, LinkClass::kOuterSync).status(); }
    // round() in a run whose rounds go on among survivors (a synced step only).
    Result<StageRoundsReport> survivor_round(int64_t step, double start_s);
    // One slice's round among the present replicas' holders, redone among the survivors after a loss.
    // Stage 0's with a deadline first judges the arrivals (late_); a late node's returns at once.
    Status survivor_slice_round(StageSlice& sl, int64_t step, double start_s, StageRoundsReport& out);
    // A pipeline's stage-0 node tells its later stages the round's late replicas, its replica's
    // lateness and the replicas admitted (framing only); the later stages take it before their own
    // stage.
    Status tell_later_stages(double late_s);
    Status take_word_from_stage0(StageRoundsReport& out);
    // The mask of the absent replicas every node of which this node has heard is up again.
    uint64_t heard_restarted() const;
    // After a round: the replicas it admitted count lost nowhere here and are present from the next.
    void take_in_admitted();
    bool is_late(int r) const { return std::find(late_.begin(), late_.end(), r) != late_.end(); }
    // Transport epochs (Membership::begin_epoch): attempt `a` of stage s's round in synced round n,
    // then, after the S stages, the training that follows (its point-to-point activations).
    // Attempts per stage round: a loss, then holders that counted the replicas present apart, with
    // room for a second loss. (S + 2) · kAttempts epochs must fit the transport's window of early
    // frames (a holder may lead another by a whole synced round): core/layout.h kMaxSurvivorStages.
    static constexpr uint64_t kAttempts = 6;
    uint64_t stage_epoch(int64_t s, uint64_t a) const {
        return (static_cast<uint64_t>(rounds_done_) * static_cast<uint64_t>(cfg_.cluster.stages + 1) +
                static_cast<uint64_t>(s)) * kAttempts + a;
    }

    const RunConfig cfg_;
    Collective& mesh_;
    std::vector<StageSlice> slices_;
    torch::Tensor t_fixed_;
    bool survivors_ = false;     // pipeline_survives_loss(cfg_)
    bool admits_ = false;        // survivors_ and cluster.restart_lost: stage 0's rounds admit restarted replicas
    int replica_ = 0;            // this node's replica
    int64_t rounds_done_ = 0;    // synced rounds so far, counting this one (survivors: the epochs)
    int64_t origin_step_ = 0;    // start_at
    std::vector<int> present_;   // replicas present, ascending (survivors)
    std::vector<int> excluded_;  // replicas lost for good (survivors): never back in a round
    // This round's late replicas (outer.round_deadline_s), once stage 0's holders have judged the
    // arrivals (late_known_): they stay present, out of this round's stage groups only.
    std::vector<int> late_;
    bool late_known_ = false;
    std::vector<int> admitted_;  // the restarted replicas this round admitted (stage 0's holders' words)
    const FaultSchedule* schedule_ = nullptr;
};

}  // namespace tw
