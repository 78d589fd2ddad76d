// The replica worker's loop; see replica_worker.h.
#include "engine/worker/replica_worker.h"

#include <torch/optim/adamw.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <thread>

#include "core/algorithm.h"
#include "core/compute_model.h"
#include "core/config_io.h"
#include "core/fault_schedule.h"
#include "core/member_view.h"
#include "core/hash.h"
#include "core/layout.h"
#include "core/metric_names.h"
#include "core/network.h"
#include "core/sim_clock.h"
#include "core/time_budget.h"
#include "engine/worker/final_model_sender.h"
#include "engine/worker/node_data.h"
#include "engine/algo/ddp.h"
#include "engine/algo/outer.h"
#include "engine/algo/state_hash.h"
#include "engine/data/dataset.h"
#include "engine/data/stream_check.h"
#include "engine/pipeline/subspace.h"
#include "engine/train/trainer.h"
#include "engine/worker/recovery.h"
#include "engine/worker/stage_recovery.h"
#include "engine/worker/replica_places.h"
#include "engine/worker/run_checkpoint.h"
#include "engine/worker/stage_rounds.h"
#include "engine/worker/stage_state.h"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;
double since_s(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
// "0, 2, 3": replicas for events and errors.
std::string replica_list(std::vector<int> rs) {
    std::sort(rs.begin(), rs.end());
    std::string out;
    for (int r : rs) out += (out.empty() ? "" : ", ") + std::to_string(r);
    return out;
}
std::string num(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v);
    return b;
}

uint64_t weights_checksum(const std::vector<torch::Tensor>& params) {
    uint64_t h = kHashSeed;
    for (auto& p : params) {
        auto c = p.detach().contiguous();
        h = seeded_hash64(std::string_view(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size()), h);
    }
    return h;
}

class ReplicaWorker : public Worker {
public:
    ReplicaWorker(RunConfig cfg, NodeRole role, std::unique_ptr<Collective> mesh,
                  std::function<void(std::function<bool()>)> set_abort, GroupStore store)
        : cfg_(std::move(cfg)), role_(std::move(role)), mesh_(std::move(mesh)), set_abort_(std::move(set_abort)),
          store_(std::move(store)) {}

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
        event(EventLevel::kWarning, "leave", "replica " + std::to_string(role_.replica) +
                                                 " leaves the run as a whole: its gradient group failed (" + why.message() + ")");
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
    // first. `waiting` names the wait in errors.
    Result<std::optional<DonorMessage>> state_from_anyone(const std::string& waiting);
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
    void event(EventLevel level, const std::string& kind, const std::string& text) {
        if (sink_) sink_->event({since_s(t0_), role_.name, level, kind, text});
    }
    // A full replica of a run with pipeline replicas: S per-stage rounds (stage_rounds.h).
    Status stage_round(int64_t step);
    bool in_pipeline_run() const { return cfg_.cluster.stages > 1; }
    void record(int64_t step, const std::string& name, double v) {
        rows_.push_back({role_.name, step, outer_step_, since_s(t0_), clock_.now_s(), name, v});
    }
    void record_bytes(int64_t step);
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

    RunConfig cfg_;
    NodeRole role_;
    std::unique_ptr<Collective> mesh_;
    std::function<void(std::function<bool()>)> set_abort_;

    GroupStore store_;  // declared before grads_: the Gloo group closes first, then the store

    NetworkProfile net_;
    std::unique_ptr<Trainer> trainer_;
    std::unique_ptr<GradAllReduce> grads_;
    std::unique_ptr<OuterAlgorithm> outer_;  // replica leaders of the non-DDP algorithms
    std::unique_ptr<StageRounds> stage_rounds_;  // instead of outer_ in a run with pipeline replicas
    torch::Tensor t_fixed_;                      // [V, d] when that run compresses anything
    LinkClass grad_link_ = LinkClass::kIntraReplica;
    // The run's start: a restarted process counts wall time from it as its peers do (NodeRole::rejoin_age_ms).
    Clock::time_point t0_ = Clock::now() - std::chrono::milliseconds(role_.rejoin_age_ms(unix_now_ms()));
    std::vector<MetricRecord> rows_;
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
    int64_t tokens_done_ = 0;       // tokens this replica trained on
    MetricSink* sink_ = nullptr;
    WorkerControl* ctl_ = nullptr;
    RunCheckpoints run_ckpt_;
    ByteCounters bytes_before_;  // a resumed node's counters at its checkpoint (total_bytes adds them)
};

Status ReplicaWorker::setup(WorkerControl& ctl, MetricSink& sink) {
    auto net = network_profile(cfg_.network);
    if (!net) return net.status();
    net_ = *net;
    auto prepared = prepare_node_data(cfg_, role_, sink, since_s(t0_));
    if (!prepared) return prepared.status();
    auto compute = ComputeTime::create(cfg_, role_.replica);  // after the vocabulary is known
    if (!compute) return Status::error(role_.name + ": " + compute.message());
    compute_ = *compute;
    if (cfg_.outer.round_time_s > 0) {
        // Time-budgeted rounds (core/time_budget.h): this replica's H and step total, before the
        // Trainer (its schedule spans them) and the outer algorithm (its weights) are built.
        auto plan = time_budget(cfg_);
        if (!plan) return Status::error(role_.name + ": " + plan.message());
        // Checkpoints every K rounds on every replica alike (K rounds of the configured H cover at
        // least train.ckpt_every steps), so they meet at the same rounds though each replica runs
        // its own H: the resume point is a round, each replica at its own step of it.
        if (cfg_.train.ckpt_every > 0) {
            const int64_t every_rounds = (cfg_.train.ckpt_every + cfg_.outer.inner_steps - 1) / cfg_.outer.inner_steps;
            cfg_.train.ckpt_every = every_rounds * plan->inner_steps.at(static_cast<size_t>(role_.replica));
        }
        cfg_ = budgeted_config(cfg_, *plan, role_.replica);
        const auto r = static_cast<size_t>(role_.replica);
        sink.event({since_s(t0_), role_.name, EventLevel::kInfo, "time budget",
                    role_.name + ": " + std::to_string(cfg_.outer.inner_steps) + " inner steps per round of " +
                        std::to_string(cfg_.outer.round_time_s) + " simulated s (step " +
                        std::to_string(plan->step_s[r]) + " s), " + std::to_string(cfg_.train.steps) +
                        " steps in all, weight " + std::to_string(plan->mean_scale[r]) + " of a plain mean"});
    }
    data_ = std::move(prepared).value();
    auto faults = FaultSchedule::create(cfg_);
    if (!faults) return Status::error(role_.name + ": " + faults.message());
    faults_ = std::move(faults).value();
    const uint64_t seed = static_cast<uint64_t>(cfg_.run.seed);
    if (Status st = build_training(); !st) return st;
    // A one-node run resumes from its checkpoint when asked (other runs refuse train.ckpt_path).
    auto resumed = trainer_->resume_if_asked();
    if (!resumed) return resumed.status();
    if (!resumed->empty()) sink.event({since_s(t0_), role_.name, EventLevel::kInfo, "resume", *resumed});
    auto params = trainer_->model()->parameters();
    for (auto& p : params) n_params_ += p.numel();
    if (set_abort_) set_abort_([&ctl] { return ctl.stop.load(); });

    // DDP: every node of the run in one group; DiLoCo: the nodes of this replica.
    const bool ddp = algorithm_of(cfg_) == Algorithm::kDdp;
    grad_link_ = ddp ? round_link_class(cfg_) : LinkClass::kIntraReplica;
    if (role_.grad_group.size > 1) {
        if (!store_.client) return Status::error(role_.name + ": a gradient group without a store");
        DdpRendezvous r;
        r.store = store_.client;
        r.bind_host = store_.bind_host;
        r.rank = role_.grad_group.rank;
        r.size = role_.grad_group.size;
        r.prefix = ddp ? "ddp" : "replica-" + std::to_string(role_.replica);
        // A paused peer leaves the others waiting inside Gloo; a dead one closes its sockets, which
        // fails the wait at once. So the timeout only has to outlast a pause.
        r.timeout_ms = 30 * 60 * 1000;
        auto g = GradAllReduce::create(r, grad_link_);
        if (!g) return g.status();
        grads_ = std::move(*g);
        install_grad_sync();
    }
    if (in_pipeline_run()) {
        if (!mesh_) return Status::error(role_.name + ": a pipeline run needs the data-plane mesh");
        if (run_has_compression(cfg_)) {
            t_fixed_ = frozen_embedding(cfg_.model.vocab_size, cfg_.model.d_model, seed).mul_(cfg_.pipeline.frozen_std);
            trainer_->model()->set_frozen_embedding(t_fixed_);
        }
        std::vector<std::string> names;
        for (auto& item : trainer_->model()->named_parameters()) names.push_back(item.key());
        auto rounds = StageRounds::create(cfg_, role_.replica, 0, cfg_.cluster.stages - 1, params, names, *mesh_, t_fixed_);
        if (!rounds) return rounds.status();
        stage_rounds_ = std::move(*rounds);
        stage_rounds_->set_schedule(&faults_);  // a pipeline killed by the schedule leaves its rounds
        // Same seed → same weights, stage by stage among each stage's holders; a process restarted
        // mid-run skips it (its peers are training) and takes replica 0's state instead.
        if (role_.rejoin_step < 0 && role_.rejoin_live_from < 0)
            if (Status st = stage_rounds_->check_weights(role_.name); !st) return st;
    }
    // Same seed → same weights; verified, since a silent mismatch would poison every round. A node
    // process restarted mid-run skips it (its peers are training): it takes a peer's state instead.
    if (mesh_ && !in_pipeline_run() && role_.rejoin_step < 0 && role_.rejoin_live_from < 0) {
        const uint64_t mine = weights_checksum(params);
        std::vector<uint8_t> bytes(8);
        std::memcpy(bytes.data(), &mine, 8);
        auto all = mesh_->all_gather(bytes, LinkClass::kOuterSync);
        if (!all) return all.status();
        for (size_t i = 0; i < all->size(); ++i)
            if ((*all)[i] != bytes)
                return Status::error("mesh member " + std::to_string(i) + " starts from other weights than " +
                                     role_.name + " (different seed, model or data?)");
    }
    // After the start-up checks (they compare the initial weights), with the outer algorithm built.
    if (Status st = resume_run_checkpoint(sink); !st) return st;
    // A resumed node's transport starts afresh at its checkpoint's step; a rejoining process's
    // peers' transports started at the run's start or resume.
    if (stage_rounds_)
        stage_rounds_->start_at(role_.rejoin_step >= 0 || role_.rejoin_live_from >= 0 ? role_.rejoin_origin_step
                                                                                      : trainer_->step_index());
    real_at_last_round_ = real_exchange_s();  // the start-up checks are not a round
    if (elastic()) {
        // Every replica holds its own place; spares (mesh ranks R..) stand by (docs/faults.md).
        places_ = ReplicaPlaces(role_.replicas, mesh_->size());
        standby_ = role_.kind == "spare";
    } else if (role_.kind == "spare") {
        return Status::error(role_.name + ": a spare needs a run whose replicas may be lost (docs/faults.md)");
    }
    if (!standby_)
        sink.event({since_s(t0_), role_.name, EventLevel::kInfo, "start",
                    role_.name + " starts: " + std::to_string(count_parameters(cfg_.model)) + " parameters, data part " +
                        std::to_string(role_.global_rank()) + " of " + std::to_string(role_.world())});
    return Status::ok();
}

void ReplicaWorker::install_grad_sync() {
    if (!grads_) return;
    auto params = trainer_->model()->parameters();
    trainer_->set_grad_sync([this, params] {
        const auto t = Clock::now();
        Status st = grads_->average_grads(params);
        gloo_real_s_ += since_s(t);
        return st;
    });
}

Status ReplicaWorker::broadcast_from_leader(double& end_s) {
    auto params = trainer_->model()->parameters();
    auto clock = torch::full({1}, end_s, torch::kFloat32);
    params.push_back(clock);
    const auto t = Clock::now();
    if (Status st = grads_->broadcast(params, 0); !st) return st;
    gloo_real_s_ += since_s(t);
    end_s = clock_.follow_leader(end_s, clock.item<float>(), net_.intra, static_cast<uint64_t>(n_params_) * 4);
    return Status::ok();
}

Status ReplicaWorker::follow_in_group() {
    if (!grads_) return Status::ok();
    double end_s = clock_.now_s();
    if (Status st = broadcast_from_leader(end_s); !st) return st;
    clock_.wait_until(end_s);
    return Status::ok();
}

Status ReplicaWorker::build_training() {
    const PreparedData* data = data_.get();
    const uint64_t seed = static_cast<uint64_t>(cfg_.run.seed);
    // Every node reads its own disjoint part of the training stream; validation is shared. In a run
    // with pipeline replicas the parts are the replicas' (a pipeline reads its part through its first stage).
    const int part = in_pipeline_run() ? role_.replica : role_.global_rank();
    const int parts = in_pipeline_run() ? static_cast<int>(cfg_.outer.replicas) : role_.world();
    // prepare_node_data checked the whole stream; this node's part of it must hold a window too.
    if (Status st = check_train_part(cfg_, *data, part, parts); !st) return st;
    trainer_ = std::make_unique<Trainer>(
        cfg_,
        WindowLoader(data->train, select_spans(*data, false, cfg_.data.genres), cfg_.model.seq_len,
                     cfg_.train.batch_size, seed, part, parts),
        WindowLoader(data->val, select_spans(*data, true, cfg_.data.genres), cfg_.model.seq_len,
                     cfg_.train.batch_size, seed));
    trainer_->set_stop_check([this] { return ctl_ && ctl_->stop.load(); });
    outer_.reset();
    if (algorithm_traits(cfg_).outer_rounds && mesh_ && !in_pipeline_run()) {
        std::vector<std::string> names;
        for (auto& item : trainer_->model()->named_parameters()) names.push_back(item.key());
        auto algo = make_outer_algorithm(cfg_, trainer_->model()->parameters(), names, role_.replica, role_.replicas);
        if (!algo) return algo.status();
        outer_ = std::move(*algo);
    }
    return Status::ok();
}

// DDP's all-reduce ran inside the step; here the simulated clocks meet (the slowest node sets the
// start) and the ring's 2·(W−1) sequential transfers advance them.
Status ReplicaWorker::ddp_round(int64_t step, double step_compute_s) {
    if (!grads_) return Status::ok();
    const int W = grads_->size();
    const uint64_t bytes =
        GradAllReduce::ring_allreduce_bytes(n_params_, 4, W, grads_->rank());
    const int64_t hops = 2 * (W - 1);
    // Across replicas the ring runs over their access links (core/network.h round_link).
    const LinkSpec link = grad_link_ == LinkClass::kOuterSync ? round_link(net_, role_.replica, {}, hops) : link_of(net_, grad_link_);
    std::vector<double> clocks{clock_.now_s()};
    if (mesh_) {
        auto all = mesh_->all_gather({}, grad_link_, clock_.now_s(), &clocks);
        if (!all) return all.status();
        // Round agreement: after the all-reduce and the optimizer step every node of the DDP group
        // holds the same weights (the mesh is that group). Framing only: no payload bytes.
        std::vector<int> everyone;
        for (int r = 0; r < mesh_->size(); ++r) everyone.push_back(r);
        if (Status st = mesh_->agree(everyone, state_hash(trainer_->model()->parameters())); !st)
            return Status::error("ddp: step " + std::to_string(step) + ": " + st.message());
    }
    const double end_s = round_end_s(clocks, link, bytes, hops);
    const double exposed = clock_.finish_round_at(end_s);
    record_round(step, bytes, hops, step_compute_s, end_s - *std::max_element(clocks.begin(), clocks.end()), exposed);
    return Status::ok();
}

// The outer algorithm's step (DiLoCo, SparseLoCo, Streaming DiLoCo, NoLoCo) on the replica leaders;
// the other nodes of a replica then receive the leader's weights and clock over their Gloo group.
// The clock rule is the one `runs retime` replays (core/timeline.h).
Status ReplicaWorker::outer_round(int64_t step) {
    if (!algorithm_traits(cfg_).outer_rounds) return Status::ok();
    RoundReport rep;
    std::vector<int> late;
    if (elastic() && down_until_ >= 0) {
        // Disconnected: it trains on alone and takes part in no round; after the round it rejoins
        // at, the state of a live peer replaces its own (docs/faults.md).
        if (!outer_->round_at(step)) return Status::ok();
        if (step >= down_until_) {
            down_until_ = -1;
            if (Status st = receive_state(step, scheduled_members(step)); !st) return st;
        }
        return follow_in_group();  // the replica's other nodes take what the leader holds
    }
    if (group_follower() && !faults_.empty() && step % cfg_.outer.inner_steps == 0 &&
        !faults_.in_round(role_.replica, step)) {
        // The leader is away from this round (disconnected, or back after it with a peer's state):
        // its weights and clock all the same, and no round of this replica to record.
        return follow_in_group();
    }
    if (elastic() && outer_->round_at(step)) {
        auto r = elastic_round(step, late);
        if (!r) return Status::error("step " + std::to_string(step) + ": " + r.message());
        rep = std::move(*r);
    } else if (outer_) {
        auto r = outer_->after_step(step, *mesh_, clock_.now_s());
        if (!r) return r.status();
        rep = std::move(*r);
        if (rep.synced) {
            // Round agreement among the round's members (the algorithm says what they now hold alike).
            if (auto h = agree_on_round(*outer_, *mesh_); !h)
                return Status::error("step " + std::to_string(step) + ": " + h.message());
        }
    } else {
        rep.synced = step % cfg_.outer.inner_steps == 0;  // DiLoCo's schedule (multi-node replicas: DiLoCo only)
    }
    if (!rep.synced) return Status::ok();
    ++outer_step_;
    double end_s = clock_.now_s();
    // Over the members' access links (core/sim_clock.h outer_round_end_s). The round's own cost is
    // its end were every member to arrive at once (for a mesh or a ring, round_comm_s to the bit).
    const Topology topology = topology_of(cfg_);
    const std::vector<double> at_once(std::max<size_t>(rep.clocks.size(), 1), 0.0);
    const double comm_s = outer_round_end_s(net_, topology, role_.replica, rep.members, at_once, rep.bytes_sent, rep.hops);
    if (outer_) {
        if (rep.clocks.empty()) rep.clocks.push_back(clock_.now_s());
        end_s = outer_round_end_s(net_, topology, role_.replica, rep.members, rep.clocks, rep.bytes_sent, rep.hops);
    }
    // A late leader (outer.round_deadline_s) takes the donor's state first, so its group then
    // takes that, not the weights its own round left it (docs/faults.md "Stragglers").
    const bool late_leader = grads_ && elastic() && std::count(late.begin(), late.end(), role_.replica) > 0;
    if (late_leader) {
        if (Status st = catch_up(step, end_s, late); !st) return st;
        end_s = std::max(end_s, clock_.now_s());
    }
    if (grads_) {
        // The leader's weights and clock reach the replica's other nodes.
        if (Status st = broadcast_from_leader(end_s); !st) {
            if (!may_leave() || (ctl_ && ctl_->stop.load())) return st;
            leave(st);
            return Status::ok();
        }
        // What every node of the replica now holds, where a node may have taken a peer's state.
        if (cfg_.outer.round_deadline_s > 0 || cfg_.cluster.restart_lost > 0)
            record(step, metric::kRoundWeightsHash,
                   static_cast<double>(state_hash(trainer_->model()->parameters()) >> 12));
    }
    double exposed = 0;
    if (rep.overlap_steps > 0) clock_.defer(step + rep.overlap_steps, end_s);  // training goes on; the clock waits then
    else exposed = clock_.wait_for_round(end_s);
    record_round(step, rep.bytes_sent, rep.hops, round_compute_s_, comm_s, exposed);
    if (rep.overlap_steps > 0) record(step, metric::kRoundOverlapSteps, static_cast<double>(rep.overlap_steps));
    if (rep.guard_clipped > 0) {
        record(step, metric::kRoundGuardClipped, static_cast<double>(rep.guard_clipped));
        guard_events_.push_back(std::to_string(rep.guard_clipped) + " contribution(s) scaled down by the aggregation guard in " +
                                (rep.what.empty() ? "the round" : rep.what) + " at step " + std::to_string(step));
    }
    if (!rep.members.empty()) {
        uint64_t mask = 0;
        for (int m : rep.members)
            if (m < 64) mask |= uint64_t{1} << m;
        record(step, metric::kRoundGroupMask, static_cast<double>(mask));
    }
    round_compute_s_ = 0;
    if (elastic() && !late_leader) return catch_up(step, end_s, late);
    return Status::ok();
}

Result<RoundReport> ReplicaWorker::elastic_round(int64_t step, std::vector<int>& late) {
    using R = Result<RoundReport>;
    const int me = role_.replica;
    ++rounds_;
    // The round's attempt numbers follow from its step, the same on every member: a joiner, a
    // restarted process or a spare knows them without having counted the rounds it missed.
    std::vector<int> members;
    for (int r : scheduled_members(step))
        if (!lost(r)) members.push_back(r);
    members = places_.by_rank(members);
    // A member of the last round that is gone now is noticed the way a real loss is: by waiting out
    // the heartbeat timeout. The simulated clock pays that wait once (docs/faults.md), so a
    // scheduled kill costs what a real one would.
    for (int r : last_round_) {
        if (std::find(members.begin(), members.end(), r) != members.end()) continue;
        clock_.wait_until(clock_.now_s() + cfg_.cluster.heartbeat_timeout_s);
        break;
    }
    last_round_ = members;
    const auto round_start = Clock::now();
    // What a redo starts from: the algorithm's state and the live weights as the round found them.
    auto params = trainer_->model()->parameters();
    const OuterState snapshot = outer_->save_state();
    std::vector<torch::Tensor> live_before;
    for (auto& p : params) live_before.push_back(p.detach().clone());
    for (int attempt = 0;; ++attempt) {
        if (static_cast<int64_t>(members.size()) < cfg_.cluster.min_replicas) {
            return R::error("quorum lost: " + std::to_string(members.size()) + " replica(s) left (" + replica_list(members) +
                            "), cluster.min_replicas is " + std::to_string(cfg_.cluster.min_replicas));
        }
        if (attempt >= 15) return R::error("the round was redone 15 times; giving up");
        enter_epoch(epoch_of(step, attempt));
        MemberView all(*mesh_, places_.ranks_of(members));
        std::vector<int> on_time = members;
        late.clear();
        RoundReport rep;
        double late_by = 0;
        std::vector<int> admit;
        Status st = admission(all, members, admit);
        if (st && cfg_.outer.round_deadline_s > 0) {
            // Arrivals: every member's clock, framing only (no payload bytes). Whoever arrives more
            // than the deadline after the first is left out; everyone computes the same split.
            std::vector<double> clocks;
            auto got = all.all_gather({}, LinkClass::kOuterSync, clock_.now_s(), &clocks);
            if (!got) {
                st = got.status();
            } else {
                const double first = *std::min_element(clocks.begin(), clocks.end());
                on_time.clear();
                for (size_t i = 0; i < members.size(); ++i) {
                    if (clocks[i] <= first + cfg_.outer.round_deadline_s) on_time.push_back(members[i]);
                    else late.push_back(members[i]);
                    if (members[i] == me) late_by = clocks[i] - first;
                }
            }
        }
        const bool in_round = std::find(on_time.begin(), on_time.end(), me) != on_time.end();
        if (st && in_round) {
            MemberView view(*mesh_, places_.ranks_of(on_time));
            auto r = outer_->after_step(step, view, clock_.now_s());
            if (!r) {
                st = r.status();
            } else {
                rep = std::move(*r);
                auto h = agree_on_round(*outer_, view);
                if (!h) st = h.status();
                else record(step, metric::kRoundStateHash, static_cast<double>(*h >> 12));
                // The report's members are view ranks (NoLoCo's group) or none (all of the view);
                // replicas, ascending, from here on.
                if (!rep.members.empty()) {
                    for (int& m : rep.members) m = slot_of(view.base_rank(m));
                } else if (static_cast<int>(on_time.size()) < role_.replicas) {
                    rep.members = on_time;
                }
                std::sort(rep.members.begin(), rep.members.end());
            }
        } else if (st) {
            // Late: out of this round's aggregate; it applies the round through the donor's state
            // (catch_up) and its own pseudo-gradient of the round is dropped (docs/faults.md).
            rep.synced = true;
            rep.bytes_sent = 0;
            rep.hops = 0;
            rep.members = on_time;
            std::sort(rep.members.begin(), rep.members.end());
            rep.what = "left out: late";
            record(step, metric::kRoundLateS, late_by);
        }
        if (st) {
            if (!members_.empty() && members_ != members && me == members.front()) {
                event(EventLevel::kInfo, "members",
                      "the round at step " + std::to_string(step) + " runs among replicas " + replica_list(members));
            }
            members_ = on_time;
            admitted_ = admit;
            if (attempt > 0 || static_cast<int64_t>(members.size()) < cfg_.outer.replicas) {
                record(step, metric::kRoundMembers, static_cast<double>(on_time.size()));
                record(step, metric::kRoundAttempts, static_cast<double>(attempt + 1));
            }
            if (attempt > 0) record(step, metric::kRoundLossWallS, since_s(round_start));
            if (!late.empty()) {
                if (me == on_time.front())
                    event(EventLevel::kWarning, "late", "round at step " + std::to_string(step) + ": replica(s) " + replica_list(late) +
                                                          " arrived more than " + num(cfg_.outer.round_deadline_s) +
                                                          " simulated s after the first and were left out");
            }
            return rep;
        }
        // The attempt failed. A lost member: every survivor gives the attempt up and redoes it
        // among the others from the same state; any other error ends the run as before.
        if (ctl_ && ctl_->stop.load()) return st;
        std::vector<int> peers;
        for (int r : members)
            if (r != me) peers.push_back(r);
        mesh_->membership().abandon(places_.ranks_of(peers));
        std::vector<int> gone, rest, quit;
        for (int r : members) (lost(r) ? gone : rest).push_back(r);
        // A peer that gave the attempt up redoes it; so does this member, though it found nobody
        // lost: the peer counted in a member this one already knew lost (one heard the lost
        // member's last hash and took the previous round, the other took it from that peer).
        for (int r : rest)
            if (r != me && mesh_->membership().gave_up(places_.ranks_of({r}).front())) quit.push_back(r);
        if (gone.empty() && quit.empty()) return st;
        if (Status s = outer_->load_state(snapshot); !s) return R::error("rolling back the round: " + s.message());
        {
            torch::NoGradGuard no_grad;
            for (size_t i = 0; i < params.size(); ++i) params[i].copy_(live_before[i]);
        }
        if (gone.empty()) {
            event(EventLevel::kInfo, "member-lost",
                  "round at step " + std::to_string(step) + ": replica " + replica_list(quit) + " gave the attempt up (" +
                      st.message() + "); the round is redone among replicas " + replica_list(rest));
            continue;
        }
        event(EventLevel::kWarning, "member-lost",
              "round at step " + std::to_string(step) + ": replica " + replica_list(gone) + " lost (" + st.message() +
                  "); the round is redone among replicas " + replica_list(rest));
        members = rest;
        last_round_ = members;
        clock_.wait_until(clock_.now_s() + cfg_.cluster.heartbeat_timeout_s);  // the wait that found it lost
    }
}

Status ReplicaWorker::send_state(int to, int slot, int64_t step, double clock_s) {
    RecoveryState s;
    s.step = step;
    s.rounds = rounds_;
    s.clock_s = clock_s;
    s.members = members_;
    s.lost = mesh_->membership().lost_members();
    s.slot = slot;
    s.holders = places_.holders();
    s.outer = donor_state(*outer_, trainer_->model()->parameters());
    const auto bytes = encode_recovery(s);
    // Not counted on the link's round counters: recovery bytes are their own figure.
    if (Status st = mesh_->send(to, bytes, LinkClass::kOuterSync, clock_s, /*count=*/false); !st) return st;
    recovery_sent_ += bytes.size();
    const std::string whom = slot >= 0 ? "the spare at mesh rank " + std::to_string(to) + ", which takes replica " +
                                             std::to_string(slot) + "'s place"
                                       : "replica " + std::to_string(slot_of(to));
    event(EventLevel::kInfo, "recovery", "sent the state after the round at step " + std::to_string(step) + " to " + whom +
                                             ": " + std::to_string(bytes.size()) + " B");
    return Status::ok();
}

std::vector<std::pair<int, int>> ReplicaWorker::refill(int64_t step) {
    if (cfg_.cluster.spares == 0 || places_.empty()) return {};
    // A place is free when its holder is lost, or killed with no rejoin; a replica away for a while
    // (disconnected, or killed and coming back) keeps its own.
    std::vector<int> free;
    for (int r = 0; r < role_.replicas; ++r)
        if (std::find(last_round_.begin(), last_round_.end(), r) == last_round_.end() &&
            (lost(r) || faults_.gone_for_good(r, step)))
            free.push_back(r);
    return places_.refill(free, [this](int k) { return rank_lost(k); });
}

Status ReplicaWorker::catch_up(int64_t step, double end_s, const std::vector<int>& late) {
    const int me = role_.replica;
    // Every member of the round computes the same refills (the same round, the same lost places).
    const auto spares = refill(step);
    std::vector<int> to = late;
    for (int r : faults_.rejoining(step))
        if (!lost(r)) to.push_back(r);
    // Restarted replicas admitted in this round: every member counts them in from the next round.
    const std::vector<int> admitted = std::exchange(admitted_, {});
    for (int r : admitted) mesh_->membership().forgive(rank_of(r));
    to.insert(to.end(), admitted.begin(), admitted.end());
    if (to.empty() && spares.empty()) return Status::ok();
    if (std::find(late.begin(), late.end(), me) != late.end()) return receive_state(step, members_, /*joining=*/false);
    if (members_.empty() || members_.front() != me) return Status::ok();
    for (int r : to) {
        // A replica rejoining by the schedule says when it is up (a restarted process takes a while);
        // an admitted one has said so already.
        if (std::find(late.begin(), late.end(), r) == late.end() &&
            std::find(admitted.begin(), admitted.end(), r) == admitted.end())
            if (Status st = mesh_->membership().wait_ready(rank_of(r), static_cast<uint64_t>(step)); !st) {
                if (lost(r)) continue;  // gone again: nobody to send to
                return Status::error(role_.name + ": waiting for replica " + std::to_string(r) + " to rejoin: " + st.message());
            }
        if (Status st = send_state(rank_of(r), -1, step, end_s); !st) return st;
    }
    for (auto [r, k] : spares)
        if (Status st = send_state(k, r, step, end_s); !st) return st;
    return Status::ok();
}

Status ReplicaWorker::rejoin_stages(int64_t back) {
    // Every slice's weights and outer state are replaced by replica 0's; AdamW starts afresh.
    trainer_->reset_optimizer();
    if (Status st = take_stage_states(back); !st) return st;
    trainer_->set_step_index(back);
    ctl_->step = back;
    return Status::ok();
}

Status ReplicaWorker::take_stage_states(int64_t step, int64_t live_from) {
    StageRecoveryParts parts{stage_rounds_.get(), t_fixed_, {}, nullptr};
    auto got = receive_stage_states(cfg_, role_.replica, step, *mesh_, net_, parts, live_from);
    if (!got) return Status::error(role_.name + ": rejoining: " + got.message());
    if (live_from >= 0) trainer_->set_step_index(got->step);
    recovery_recv_ += got->bytes;
    clock_.wait_until(got->ready_s);  // the state crosses replica 0's uplink and this node's downlink
    for (auto& text : got->texts) event(EventLevel::kInfo, "rejoin", text);
    return Status::ok();
}

Status ReplicaWorker::receive_state(int64_t step, const std::vector<int>& candidates, bool joining) {
    // The donor is the lowest of the round's members by mesh rank that is alive: wait for each in
    // that order, moving on when one is lost. recv_any over one peer has no backstop: a live donor
    // that has not reached the round yet is waited for as long as that takes.
    for (int d : places_.by_rank(candidates)) {
        if (d == role_.replica) continue;
        if (joining) {
            enter_epoch(epoch_of(step, 0));
            mesh_->membership().tell_ready(rank_of(d), static_cast<uint64_t>(step));
        }
        for (;;) {
            int from = -1;
            auto m = mesh_->recv_any({rank_of(d)}, &from);
            if (!m) {
                if (lost(d) && !(ctl_ && ctl_->stop.load())) break;  // the next candidate
                return Status::error(role_.name + ": waiting for the state of replica " + std::to_string(d) + ": " + m.message());
            }
            if (!is_recovery_message(*m)) continue;  // a message of an abandoned round
            auto s = decode_recovery(*m);
            if (!s) return Status::error(role_.name + ": the state from replica " + std::to_string(d) + ": " + s.message());
            if (s->step != step) continue;  // an older one
            return take_state(*s, m->size(), from);
        }
    }
    return Status::error(role_.name + ": no live replica sent the state after the round at step " + std::to_string(step));
}

Result<std::optional<ReplicaWorker::DonorMessage>> ReplicaWorker::state_from_anyone(const std::string& waiting) {
    using R = Result<std::optional<DonorMessage>>;
    std::vector<int> peers;
    for (int k = 0; k < mesh_->size(); ++k)
        if (k != mesh_->rank()) peers.push_back(k);
    for (;;) {
        int from = -1;
        auto m = mesh_->recv_any(peers, &from);
        if (!m) {
            if (ctl_ && ctl_->stop.load()) return m.status();
            bool all_gone = true;
            for (int k : peers) all_gone = all_gone && rank_lost(k);
            if (!all_gone) return R::error(role_.name + ": " + waiting + ": " + m.message());
            return std::optional<DonorMessage>();
        }
        if (!is_recovery_message(*m)) continue;  // a frame of a round (or sent to a predecessor)
        auto s = decode_recovery(*m);
        if (!s) return R::error(role_.name + ": the state from mesh rank " + std::to_string(from) + ": " + s.message());
        return std::optional<DonorMessage>(DonorMessage{std::move(*s), m->size(), from});
    }
}

Status ReplicaWorker::stand_by(bool& needed) {
    needed = false;
    event(EventLevel::kInfo, "standby", role_.name + " stands by to take the place of a replica lost for good");
    // Nothing but a donor's state is sent to a spare (it is in no round), so any peer may send it.
    auto got = state_from_anyone("standing by");
    if (!got) return got.status();
    if (!*got) {
        event(EventLevel::kInfo, "standby", role_.name + " was not needed: every other node has left the run");
        return Status::ok();
    }
    const DonorMessage& d = **got;
    if (d.state.slot < 0)
        return Status::error(role_.name + ": mesh rank " + std::to_string(d.from) + " sent a spare state without a place to take");
    if (Status st = take_state(d.state, d.bytes, d.from); !st) return st;
    needed = true;
    return Status::ok();
}

Status ReplicaWorker::admission(MemberView& all, const std::vector<int>& members, std::vector<int>& admit) {
    admit.clear();
    if (cfg_.cluster.restart_lost == 0) return Status::ok();
    // Each member's mask of the absent replicas whose fresh process it has heard; a replica is
    // admitted when every member heard it, so all compute the same list (framing only, no bytes).
    uint64_t heard = 0;
    for (int r = 0; r < role_.replicas && r < 64; ++r)
        if (std::find(members.begin(), members.end(), r) == members.end() && mesh_->membership().heard_live(rank_of(r)))
            heard |= uint64_t{1} << r;
    std::vector<int> everyone(members.size());
    for (size_t i = 0; i < members.size(); ++i) everyone[i] = static_cast<int>(i);
    auto words = all.gather_words(everyone, heard);
    if (!words) return words.status();
    admit = admitted_by_every_word(*words, role_.replicas);
    return Status::ok();
}

Status ReplicaWorker::share_step_in_group(bool& joined) {
    auto step = torch::full({1}, joined ? trainer_->step_index() : int64_t{-1}, torch::kInt64);
    const auto t = Clock::now();
    if (Status st = grads_->broadcast({step}, 0); !st) return st;
    gloo_real_s_ += since_s(t);
    const int64_t at = step.item<int64_t>();
    joined = at >= 0;
    if (joined && !mesh_) trainer_->set_step_index(at);
    if (!joined && !mesh_) event(EventLevel::kInfo, "rejoin", role_.name + " did not rejoin: its leader did not");
    return Status::ok();
}

Status ReplicaWorker::rejoin_live(bool& joined) {
    joined = false;
    // Its transport starts at the round of the lowest step its peers had reported, a lower bound of
    // the one it joins after (a state message of an earlier attempt is never taken for one of a
    // later). Its peers may be many rounds further by the time they admit it (a process takes a
    // second to start, a round of a small model milliseconds): await_admission keeps their next
    // round's frames, which may come before the state, however far ahead they are.
    enter_epoch(epoch_of(role_.rejoin_live_from, 0));
    std::vector<int> peers;
    for (int k = 0; k < mesh_->size(); ++k)
        if (k != mesh_->rank()) peers.push_back(k);
    mesh_->membership().await_admission();  // after its first epoch: until the state's round begins
    for (int k : peers) mesh_->membership().tell_ready(k, Membership::kReadyLive);
    event(EventLevel::kInfo, "start", role_.name + ": a fresh process after a loss; it waits for its peers to admit it at a round boundary");
    for (;;) {
        auto got = state_from_anyone("waiting to rejoin");
        if (!got) return got.status();
        if (!*got) {
            event(EventLevel::kInfo, "rejoin", role_.name + " did not rejoin: every other node had left the run");
            return Status::ok();
        }
        const DonorMessage& d = **got;
        if (d.state.slot >= 0)
            return Status::error(role_.name + ": mesh rank " + std::to_string(d.from) + " offered a spare's place to a restarted replica");
        if (d.state.step < role_.rejoin_live_from) continue;  // sent to its predecessor
        if (Status st = take_state(d.state, d.bytes, d.from); !st) return st;
        trainer_->set_step_index(d.state.step);
        joined = true;
        return Status::ok();
    }
}

Status ReplicaWorker::rejoin_stages_live(bool& joined) {
    joined = false;
    event(EventLevel::kInfo, "start", role_.name + ": a fresh process after a loss; it waits for its peers to admit it at a round boundary");
    if (Status st = take_stage_states(-1, role_.rejoin_live_from); !st) {
        if (ctl_ && ctl_->stop.load()) return st;
        // Replica 0's node, which alone sends the state, has left or ended: nothing to join.
        event(EventLevel::kWarning, "rejoin", role_.name + " did not rejoin: " + st.message());
        return Status::ok();
    }
    outer_step_ = stage_rounds_->rounds_done() - 1;  // the index of the round it was admitted at, as its peers count
    joined = true;
    return Status::ok();
}

Status ReplicaWorker::take_state(const RecoveryState& s, size_t bytes, int from) {
    const std::string where = role_.name + ": the state from mesh rank " + std::to_string(from) + ": ";
    // The places are checked before anything is taken on: they decide whom this node talks to.
    ReplicaPlaces next = places_;
    if (Status st = next.adopt(s.holders); !st) return Status::error(where + st.message());
    const int mine = s.slot >= 0 ? s.slot : role_.replica;
    if (s.slot >= 0 && !standby_) return Status::error(where + "offers replica " + std::to_string(s.slot) + "'s place to a node that holds one");
    if (next.rank_of(mine) != mesh_->rank())
        return Status::error(where + "gives replica " + std::to_string(mine) + "'s place to mesh rank " +
                             std::to_string(next.rank_of(mine)) + ", not this node's " + std::to_string(mesh_->rank()));
    places_ = std::move(next);
    if (s.slot >= 0) {
        // A spare becomes replica `slot`: its part of the data from the donor's step on, a fresh
        // optimizer, the replica's compute model; then the state like any joiner.
        role_.replica = s.slot;
        standby_ = false;
        auto compute = ComputeTime::create(cfg_, role_.replica);
        if (!compute) return Status::error(role_.name + ": " + compute.message());
        compute_ = *compute;
        outer_.reset();
        trainer_.reset();
        if (Status st = build_training(); !st) return st;
        trainer_->set_step_index(s.step);
        if (ctl_) ctl_->step = s.step;
    }
    auto params = trainer_->model()->parameters();
    if (Status st = apply_donor_state(*outer_, params, s.outer); !st) return Status::error(where + st.message());
    rounds_ = s.rounds;
    enter_epoch(epoch_of(s.step, 0));  // a spare's first: see receive_state
    members_ = s.members;
    last_round_ = s.members;
    for (int k : s.lost)
        if (k != mesh_->rank()) mesh_->membership().declare_lost(k);
    recovery_recv_ += bytes;
    // The state crosses the donor's uplink and this replica's downlink after the round's end.
    const int me = role_.replica, d = slot_of(from) < 0 ? me : slot_of(from);
    const LinkSpec link = round_link(net_, me, {std::min(d, me), std::max(d, me)}, 1);
    clock_.wait_until(s.clock_s + transfer_s(link, bytes));
    const std::string what = "the state after the round at step " + std::to_string(s.step) + " from replica " +
                             std::to_string(d) + ": " + std::to_string(bytes) + " B";
    if (s.slot >= 0) event(EventLevel::kInfo, "spare", role_.name + " takes replica " + std::to_string(s.slot) + "'s place with " + what);
    else event(EventLevel::kInfo, "rejoin", "took " + what);
    return Status::ok();
}

// The same clock rule as outer_round's: the uplink carries this node's payloads of every slice
// back to back after the slowest holder. The rows are the stage node's (pipeline_worker.cpp).
Status ReplicaWorker::stage_round(int64_t step) {
    if (down_until_ >= 0 && step % cfg_.outer.inner_steps == 0) {
        // Disconnected: no round; after the one it rejoins at, replica 0's state replaces its own.
        if (step < down_until_) return Status::ok();
        down_until_ = -1;
        return take_stage_states(step);
    }
    auto rep = stage_rounds_->round(step, clock_.now_s());
    if (!rep) return rep.status();
    if (!rep->synced) return Status::ok();
    ++outer_step_;
    // Rounds redone among the survivors after a loss (stage_rounds.h, docs/faults.md).
    for (auto& text : rep->lost) event(EventLevel::kWarning, "member-lost", text);
    if (rep->late_s >= 0) {
        // Past outer.round_deadline_s: out of the round, its own pseudo-gradient dropped; every
        // slice takes replica 0's state after it (its AdamW kept, as after a disconnect).
        round_compute_s_ = 0;
        if (Status st = take_stage_states(step); !st) return st;
        for (auto& [name, v] : stage_rounds_->late_rows(rep->late_s)) record(step, name, v);
        return Status::ok();
    }
    if (role_.replica == 0 && !rep->late.empty())
        event(EventLevel::kWarning, "late", late_event_text(step, rep->late, cfg_.outer.round_deadline_s));
    const LinkSpec link = round_link(net_, role_.replica, rep->members(cfg_.outer.replicas), rep->hops);
    const double exposed = clock_.wait_for_round(round_end_s({rep->latest_s}, link, rep->bytes, rep->hops));
    if (t_fixed_.defined()) {
        auto h = stage_rounds_->agree_t_fixed(t_fixed_);
        if (!h) return h.status();
        record(step, metric::kRoundTFixedHash, static_cast<double>(*h));
    }
    for (auto& [name, v] : stage_round_rows(*rep)) record(step, name, v);
    if (rep->guard_clipped > 0)
        guard_events_.push_back(std::to_string(rep->guard_clipped) +
                                " contribution(s) scaled down by the aggregation guard at step " + std::to_string(step));
    record_round(step, rep->bytes, rep->hops, round_compute_s_, round_comm_s(link, rep->bytes, rep->hops), exposed);
    round_compute_s_ = 0;
    // Replica 0 hands every slice's state to the pipeline replicas rejoining after this round.
    auto sent = send_stage_states(cfg_, role_.replica, faults_, step, rep->late, clock_.now_s(), *mesh_,
                                  StageRecoveryParts{stage_rounds_.get(), t_fixed_, {}, nullptr});
    if (!sent) return Status::error(role_.name + ": " + sent.message());
    recovery_sent_ += sent->bytes;
    for (auto& text : sent->texts) event(EventLevel::kInfo, "recovery", text);
    return Status::ok();
}

// Validation loss of the global (outer) model: the algorithm's global copy swapped in for the
// evaluation (Streaming DiLoCo and NoLoCo keep local weights that differ from it), then swapped back.
double ReplicaWorker::evaluate_global() {
    if (!outer_ && !stage_rounds_) return trainer_->evaluate();
    GlobalWeightsSwap swap;
    if (stage_rounds_) stage_rounds_->swap_in_global(swap);
    else swap.add(trainer_->model()->parameters(), outer_->eval_params());
    return trainer_->evaluate();
}

void ReplicaWorker::record_round(int64_t step, uint64_t bytes, int64_t hops, double compute_s, double comm_s,
                                 double exposed_s) {
    const double real = real_exchange_s();
    for (auto& [name, v] : round_metrics(bytes, hops, compute_s, comm_s, exposed_s, real - real_at_last_round_))
        record(step, name, v);
    real_at_last_round_ = real;
}

ByteCounters ReplicaWorker::total_bytes() const {
    ByteCounters total = bytes_before_;
    for (const ByteCounters* c : {mesh_ ? &mesh_->counters() : nullptr, grads_ ? &grads_->counters() : nullptr}) {
        if (!c) continue;
        for (int k = 0; k < 3; ++k) total.sent_bytes[k] += c->sent_bytes[k], total.recv_bytes[k] += c->recv_bytes[k];
    }
    return total;
}

Status ReplicaWorker::checkpoint(bool final, MetricSink& sink) {
    auto written = trainer_->checkpoint_if_due(final);
    if (!written) return Status::error(role_.name + ": checkpoint: " + written.message());
    if (!written->empty()) sink.event({since_s(t0_), role_.name, EventLevel::kInfo, "checkpoint", *written});
    return Status::ok();
}

Status ReplicaWorker::save_run_checkpoint(int64_t step, MetricSink& sink) {
    NodeProgress p{step,      outer_step_, clock_.state(), total_bytes(), last_loss_,
                   last_val_, recovery_sent_, recovery_recv_};
    const OuterState state = outer_          ? outer_->save_state()
                             : stage_rounds_ ? save_stage_state(stage_parts())
                                             : OuterState{};
    auto w = run_ckpt_.save(p, *trainer_->model(), trainer_->optimizer(), state, config_hash(cfg_));
    if (!w) return Status::error(role_.name + ": checkpoint: " + w.message());
    report_checkpoint(*w, step, role_.name, since_s(t0_),
                      [this](int64_t s, const std::string& name, double v) { record(s, name, v); }, sink);
    return Status::ok();
}

Status ReplicaWorker::resume_run_checkpoint(MetricSink& sink) {
    run_ckpt_ = RunCheckpoints(cfg_, role_);
    if (!run_ckpt_.resuming()) return Status::ok();
    auto loaded = run_ckpt_.load(*trainer_->model(), trainer_->optimizer());
    if (!loaded) return Status::error(role_.name + ": resume: " + loaded.message());
    if (outer_) {
        if (Status st = outer_->load_state(loaded->outer_state); !st)
            return Status::error(role_.name + ": resume: " + loaded->path + ": " + outer_->name() + " state: " + st.message());
    } else if (stage_rounds_) {
        if (Status st = load_stage_state(loaded->outer_state, stage_parts()); !st)
            return Status::error(role_.name + ": resume: " + loaded->path + ": " + st.message());
    } else if (!loaded->outer_state.empty()) {
        return Status::error(role_.name + ": resume: " + loaded->path + " holds an outer algorithm's state; this node runs none");
    }
    const NodeProgress& p = loaded->progress;
    trainer_->set_step_index(p.step);
    outer_step_ = p.outer_step;
    clock_.restore(p.clock);
    bytes_before_ = p.bytes;
    last_loss_ = p.last_loss, last_val_ = p.last_val;
    recovery_sent_ = p.recovery_sent, recovery_recv_ = p.recovery_recv;
    // A checkpoint's step ends a round: its members are the last round's, so a member gone at the
    // next one is noticed (and its heartbeat timeout paid) as in an uninterrupted run.
    if (elastic()) last_round_ = places_.by_rank(scheduled_members(p.step));
    sink.event({since_s(t0_), role_.name, EventLevel::kInfo, "resume",
                "resumed from " + loaded->path + " at step " + std::to_string(p.step)});
    return Status::ok();
}

StageStateParts ReplicaWorker::stage_parts() {
    StageStateParts parts;
    for (auto& sl : stage_rounds_->slices()) parts.slices.emplace_back(sl.stage, sl.algo.get());
    parts.t_fixed = t_fixed_;
    return parts;
}

void ReplicaWorker::record_bytes(int64_t step) {
    for (auto& [name, v] : byte_metrics(total_bytes(), true)) record(step, name, v);
    if (recovery_sent_ > 0) record(step, metric::kBytesRecoverySent, static_cast<double>(recovery_sent_));
    if (recovery_recv_ > 0) record(step, metric::kBytesRecoveryRecv, static_cast<double>(recovery_recv_));
}

Status ReplicaWorker::apply_faults(int64_t step, double step_compute_s, bool& left) {
    left = false;
    if (faults_.empty() || !(elastic() || group_follower() || stage_rounds_)) return Status::ok();
    for (const FaultEvent* e : faults_.starting(role_.replica, step)) {
        const std::string what = e->text() + (e->churn ? " (churn)" : "");
        switch (e->kind) {
            case FaultKind::kPause: {
                // A stall of T − S steps' worth of this node's own step time, on its simulated clock.
                const double stall = static_cast<double>(e->until_step - e->at_step) * step_compute_s;
                clock_.wait_until(clock_.now_s() + stall);
                event(EventLevel::kWarning, "fault", e->stall_text(stall));
                break;
            }
            case FaultKind::kSlow:
                event(EventLevel::kWarning, "fault", e->slow_text());
                break;
            case FaultKind::kDisconnect: {
                const int64_t back = faults_.rejoin_round(*e);
                // A follower trains on with its leader (its group is cut off as a whole) and takes
                // the leader's weights at every round (outer_round).
                if (!group_follower()) down_until_ = back < 0 ? cfg_.train.steps + 1 : back;
                event(EventLevel::kWarning, "fault", what + ": cut off; it trains on alone" +
                                                         (back < 0 ? std::string(" to the end")
                                                                   : ", and takes the state of a live peer after the round at step " +
                                                                         std::to_string(back)));
                break;
            }
            case FaultKind::kKill: {
                const int64_t back = faults_.rejoin_round(*e);
                if (cfg_.cluster.mode == "local") {
                    // A child process: its coordinator kills it for real on this report (coordinator/
                    // scheduled_kills.h), and starts a fresh one to rejoin. The rows so far go first.
                    // Every node of a replica of several nodes does so after the same step, outside
                    // any collective; the fresh processes meet in a fresh Gloo group (the leader's
                    // fresh store holds none of the old one's keys).
                    if (mesh_) mesh_->membership().go_quiet();
                    event(EventLevel::kWarning, "fault", what + ": the node process is killed");
                    event(EventLevel::kInfo, kProcessKillEvent, std::to_string(faults_.index_of(*e)));
                    sink_->metrics(std::exchange(rows_, {}));
                    while (!ctl_->stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
                    left = true;
                    return Status::ok();
                }
                event(EventLevel::kWarning, "fault", what + ": the worker stops; its weights, optimizer and outer state are gone");
                if (back < 0) {
                    left = true;  // the worker ends here (its summary reports the steps it ran)
                    return Status::ok();
                }
                if (stage_rounds_) return rejoin_stages(back);
                outer_.reset();
                trainer_.reset();
                // A fresh worker: rebuilt from the data, the state of a live peer after the round at
                // `back` (its leader's, for the other nodes of a replica of several nodes).
                if (Status st = build_training(); !st) return st;
                install_grad_sync();
                trainer_->set_step_index(back);
                if (elastic())
                    if (Status st = receive_state(back, scheduled_members(back)); !st) return st;
                if (Status st = follow_in_group(); !st) return st;
                ctl_->step = back;
                return Status::ok();
            }
        }
    }
    return Status::ok();
}

Result<WorkerSummary> ReplicaWorker::run(WorkerControl& ctl, MetricSink& sink) {
    sink_ = &sink;
    ctl_ = &ctl;
    if (Status st = setup(ctl, sink); !st) return st;
    ctl.step = trainer_->step_index();  // a resumed node starts where its checkpoint stands
    const int64_t steps = cfg_.train.steps;
    const int64_t tokens_per_step = cfg_.train.batch_size * cfg_.model.seq_len;
    bool stopped = false, abandoned = false;
    Status failure;
    tokens_done_ = trainer_->step_index() * tokens_per_step;  // a resumed run's tokens so far
    if (role_.rejoin_step >= 0) {
        // A fresh process after a scheduled kill (coordinator/scheduled_kills.h): like a worker
        // rebuilt in-process, it takes the state of a live peer after the round it rejoins at.
        const int64_t back = role_.rejoin_step;
        if (!(elastic() || group_follower() || stage_rounds_) || faults_.empty())
            return Status::error(role_.name + ": a rejoin needs a fault schedule");
        const FaultEvent* e = faults_.down_at(role_.replica, back);
        if (e) tokens_done_ = e->at_step * tokens_per_step;
        trainer_->set_step_index(back);
        if (stage_rounds_) {
            // A full replica of a pipeline run: every slice from replica 0's holder of its stage,
            // with the round count the killed process had.
            if (e) outer_step_ += faults_.rounds_taken(role_.replica, role_.rejoin_origin_step, e->at_step, cfg_.outer.inner_steps);
            if (Status st = take_stage_states(back); !st) return st;
        }
        if (elastic())
            if (Status st = receive_state(back, scheduled_members(back)); !st) return st;
        // A replica of several nodes restarted as a whole: its other nodes take the leader's state.
        if (Status st = follow_in_group(); !st) return st;
        ctl.step = back;
        sink.event({since_s(t0_), role_.name, EventLevel::kInfo, "start",
                    role_.name + ": a fresh process rejoins after the round at step " + std::to_string(back)});
    }
    if (role_.rejoin_live_from >= 0) {
        // A fresh process after a real loss (cluster.restart_lost): the leader is admitted by its
        // peers; a replica of several nodes was restarted as a whole, and its other nodes learn
        // the step and take the weights from their leader. A full replica of a run with pipeline
        // replicas is admitted by its stage rounds and takes every slice from replica 0.
        if (!elastic() && !group_follower() && !stage_rounds_)
            return Status::error(role_.name + ": a restarted process rejoins a replica of an outer algorithm only");
        bool joined = false;
        Status st = elastic() ? rejoin_live(joined) : stage_rounds_ ? rejoin_stages_live(joined) : Status::ok();
        if (!st && !ctl.stop.load()) return st;
        if (st && grads_) st = share_step_in_group(joined);
        if (st && joined && grads_) st = follow_in_group();
        if (!st && !ctl.stop.load()) return st;
        if (!st || !joined) {
            if (!rows_.empty()) sink.metrics(std::exchange(rows_, {}));
            return summarise();
        }
        tokens_done_ = role_.rejoin_tokens;
        ctl.step = trainer_->step_index();
    }
    if (standby_) {
        // A spare trains only once it holds a place; a run that never needs it ends it here.
        bool needed = false;
        Status st = stand_by(needed);
        if (!st && !ctl.stop.load()) return st;
        if (!st || !needed) {
            if (!rows_.empty()) sink.metrics(std::exchange(rows_, {}));
            if (ctl.stop.load()) sink.event({since_s(t0_), role_.name, EventLevel::kInfo, "stop", "stopped standing by"});
            return summarise();
        }
        ctl.step = trainer_->step_index();
    }
    while (trainer_->step_index() < steps) {
        if (!ctl.wait_while_paused()) {
            stopped = true;
            break;
        }
        const StepReport s = trainer_->step();
        if (!trainer_->sync_status() && may_leave() && !ctl.stop.load()) {
            leave(trainer_->sync_status());  // nothing of the step was applied
            break;
        }
        if (!trainer_->sync_status()) {
            failure = trainer_->sync_status();
            abandoned = true;  // nothing of the step was applied: the state is still the last step's
            break;
        }
        if (stage_rounds_) stage_rounds_->project_writers();  // the `project` constraint (AD5)
        double compute_s = compute_.train_step(s.compute_s);  // measured, or modelled (flops)
        if (const double k = faults_.compute_factor(role_.replica, s.step); k != 1) compute_s *= k;  // [faults] slow
        clock_.compute(compute_s);
        round_compute_s_ += compute_s;
        last_loss_ = s.loss;
        record(s.step, metric::kTrainLoss, s.loss);
        record(s.step, metric::kTrainLr, s.lr);
        record(s.step, metric::kTrainGradNorm, s.grad_norm);
        tokens_done_ += tokens_per_step;  // this replica's own: a step it was down for is not counted
        record(s.step, metric::kTrainTokens, static_cast<double>(tokens_done_));
        record(s.step, metric::kTrainComputeS, compute_s);
        if (compute_.modelled()) record(s.step, metric::kTrainRealComputeS, compute_.take_measured_s());
        record(s.step, metric::kTrainTokensPerS, tokens_per_step / compute_s);
        clock_.settle_due(s.step);  // results of overlapped exchanges due now: the clock waits for them
        Status st = algorithm_of(cfg_) == Algorithm::kDdp ? ddp_round(s.step, compute_s)
                    : stage_rounds_                     ? stage_round(s.step)
                                                        : outer_round(s.step);
        if (!st) {
            failure = st;
            break;
        }
        record_bytes(s.step);
        for (auto& text : std::exchange(guard_events_, {}))
            sink.event({since_s(t0_), role_.name, EventLevel::kWarning, "guard", text});
        // The global model's validation loss: every outer round (DiLoCo), every eval_every steps
        // (DDP, single node) and at the end; one node evaluates, all hold the same weights then.
        const bool outer_algo = algorithm_traits(cfg_).outer_rounds;
        const bool round_end = outer_algo && s.step % cfg_.outer.inner_steps == 0;
        const bool periodic = !outer_algo && cfg_.train.eval_every > 0 && s.step % cfg_.train.eval_every == 0;
        if (is_evaluator() && (round_end || periodic || s.step == steps)) {
            // NaN: a stop request cut the evaluation short; nothing is recorded.
            if (const double v = evaluate_global(); !std::isnan(v)) {
                last_val_ = v;
                last_val_step_ = s.step;
                record(s.step, metric::kValLoss, last_val_);
            }
        }
        if (s.step < steps)
            if (Status st = checkpoint(false, sink); !st) {
                failure = st;
                break;
            }
        // Run-scoped checkpoints at round boundaries, where every member holds the round's result.
        if (s.step < steps && run_ckpt_.due(s.step, !outer_algo || round_end))
            if (Status st = save_run_checkpoint(s.step, sink); !st) {
                failure = st;
                break;
            }
        ctl.step = s.step;
        sink.metrics(std::exchange(rows_, {}));
        bool left = false;
        if (Status st = apply_faults(s.step, compute_s, left); !st) {
            failure = st;
            break;
        }
        if (left || leaving_) break;  // killed for good, or left as a whole: the run goes on without it
    }
    // A clean stop (between steps, or a DDP step abandoned by it) leaves a consistent state:
    // checkpoint it. A round aborted half-way does not.
    const bool clean_stop = failure.is_ok() ? stopped : abandoned && ctl.stop.load();
    if (clean_stop && run_ckpt_.enabled() && !run_ckpt_.holds(trainer_->step_index()) &&
        trainer_->step_index() > 0)
        if (Status st = save_run_checkpoint(trainer_->step_index(), sink); !st) failure = st;
    if (!rows_.empty()) sink.metrics(std::exchange(rows_, {}));
    const WorkerSummary summary = summarise();
    // Closing the Gloo group now wakes any peer still waiting for this node inside a collective.
    grads_.reset();
    // A collective aborted because of a stop request is a stop, not a failure.
    if (!failure.is_ok() && !ctl.stop.load()) return failure;
    stopped = stopped || ctl.stop.load();
    if (Status st = checkpoint(true, sink); !st) return st;  // at the end, or where a stop left it
    if (stopped) sink.event({since_s(t0_), role_.name, EventLevel::kInfo, "stop",
                             "stopped at step " + std::to_string(trainer_->step_index())});
    // The run's model, from the node that evaluates it: the global weights where the algorithm
    // keeps them apart from the live ones.
    if (is_evaluator() && !leaving_ && trainer_->step_index() > 0) {
        GlobalWeightsSwap swap;
        if (stage_rounds_) stage_rounds_->swap_in_global(swap);
        else if (outer_) swap.add(trainer_->model()->parameters(), outer_->eval_params());
        send_final_model(sink, role_.name, final_model_tensors(*trainer_->model()),
                         data_ ? data_->tokenizer_files : std::vector<std::string>{});
    }

    return summary;
}

WorkerSummary ReplicaWorker::summarise() const {
    const double compute_s = clock_.compute_s(), exposed_s = clock_.exposed_s();
    WorkerSummary out{{summary::kSteps, static_cast<double>(trainer_->step_index())},
                      {metric::kTrainLoss, last_loss_},
                      {metric::kValLoss, last_val_},
                      {summary::kValStep, static_cast<double>(last_val_step_)},
                      {summary::kSimS, clock_.now_s()},
                      {summary::kComputeS, compute_s},
                      {summary::kExposedCommS, exposed_s},
                      {summary::kUtilisation, compute_s / (compute_s + exposed_s)},
                      {summary::kWallS, since_s(t0_)}};
    // Beside stage nodes, whose utilisation also counts bubbles, the share lost to outer syncs alone.
    if (stage_rounds_) out[summary::kSyncUtilisation] = compute_s / std::max(1e-12, compute_s + clock_.sync_exposed_s());
    for (auto& [name, v] : byte_metrics(total_bytes(), false)) out[name] = v;
    if (recovery_sent_ > 0) out[metric::kBytesRecoverySent] = static_cast<double>(recovery_sent_);
    if (recovery_recv_ > 0) out[metric::kBytesRecoveryRecv] = static_cast<double>(recovery_recv_);
    return out;
}

}  // namespace

std::unique_ptr<Worker> make_replica_worker(const RunConfig& cfg, const NodeRole& role,
                                            std::unique_ptr<Collective> mesh,
                                            std::function<void(std::function<bool()>)> set_abort, GroupStore store) {
    return std::make_unique<ReplicaWorker>(cfg, role, std::move(mesh), std::move(set_abort), std::move(store));
}

}  // namespace tw
