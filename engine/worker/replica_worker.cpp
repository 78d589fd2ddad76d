// The replica worker's loop; see replica_worker.h.
#include "engine/worker/replica_worker.h"
#include "engine/worker/replica_worker_impl.h"

#include "core/round_clock.h"

namespace tw {
namespace replica_impl {

Status ReplicaWorker::setup(WorkerControl& ctl, MetricSink& sink) {
    auto inputs = prepare_node_inputs(cfg_, role_, sink, rec_.wall_s(), role_.replica);
    if (!inputs) return inputs.status();
    net_ = inputs->net, data_ = inputs->data, compute_ = inputs->compute;
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
        rec_.info("time budget", role_.name + ": " + std::to_string(cfg_.outer.inner_steps) +
                                     " inner steps per round of " + std::to_string(cfg_.outer.round_time_s) +
                                     " simulated s (step " + std::to_string(plan->step_s[r]) + " s), " +
                                     std::to_string(cfg_.train.steps) + " steps in all, weight " +
                                     std::to_string(plan->mean_scale[r]) + " of a plain mean");
    }
    auto faults = FaultSchedule::create(cfg_);
    if (!faults) return Status::error(role_.name + ": " + faults.message());
    faults_ = std::move(faults).value();
    const uint64_t seed = static_cast<uint64_t>(cfg_.run.seed);
    if (Status st = build_training(); !st) return st;
    // A one-node run resumes from its checkpoint when asked (other runs refuse train.ckpt_path).
    auto resumed = trainer_->resume_if_asked();
    if (!resumed) return resumed.status();
    if (!resumed->empty()) rec_.info("resume", *resumed);
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
        standby_ = role_.kind == NodeKind::kSpare;
    } else if (role_.kind == NodeKind::kSpare) {
        return Status::error(role_.name + ": a spare needs a run whose replicas may be lost (docs/faults.md)");
    }
    if (!standby_)
        rec_.info("start", role_.name + " starts: " + std::to_string(count_parameters(cfg_.model)) +
                               " parameters, data part " + std::to_string(role_.global_rank()) + " of " +
                               std::to_string(role_.world()));
    return Status::ok();
}

void ReplicaWorker::install_grad_sync() {
    if (!grads_) return;
    auto params = trainer_->model()->parameters();
    trainer_->set_grad_sync([this, params] {
        const auto t = Clock::now();
        Status st = grads_->average_grads(params);
        gloo_real_s_ += seconds_since(t);
        return st;
    });
}

Status ReplicaWorker::broadcast_from_leader(double& end_s) {
    auto params = trainer_->model()->parameters();
    auto clock = torch::full({1}, end_s, torch::kFloat32);
    params.push_back(clock);
    const auto t = Clock::now();
    if (Status st = grads_->broadcast(params, 0); !st) return st;
    gloo_real_s_ += seconds_since(t);
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
    // Across replicas the ring runs over their access links (core/round_clock.h).
    const RoundTiming timing{RoundKind::kStepCollective, grad_link_, static_cast<int>(role_.replica), {}, clocks, bytes, hops};
    const double end_s = round_end(net_, topology_of(cfg_), timing);
    const double exposed = close_round(clock_, RoundKind::kStepCollective, end_s);
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
    // Over the members' access links (core/round_clock.h). The round's own cost is its end were
    // every member to arrive at once (for a mesh or a ring, round_comm_s to the bit).
    const Topology topology = topology_of(cfg_);
    RoundTiming timing{RoundKind::kOuter, LinkClass::kOuterSync, static_cast<int>(role_.replica), rep.members,
                       std::vector<double>(std::max<size_t>(rep.clocks.size(), 1), 0.0), rep.bytes_sent, rep.hops};
    const double comm_s = round_end(net_, topology, timing);
    if (outer_) {
        if (rep.clocks.empty()) rep.clocks.push_back(clock_.now_s());
        timing.clocks = rep.clocks;
        end_s = round_end(net_, topology, timing);
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
            rec_.record(step, metric::kRoundWeightsHash,
                        static_cast<double>(state_hash(trainer_->model()->parameters()) >> 12));
    }
    const double exposed = close_round(clock_, RoundKind::kOuter, end_s, step, rep.overlap_steps);
    record_round(step, rep.bytes_sent, rep.hops, round_compute_s_, comm_s, exposed);
    if (rep.overlap_steps > 0) rec_.record(step, metric::kRoundOverlapSteps, static_cast<double>(rep.overlap_steps));
    if (rep.guard_clipped > 0) {
        rec_.record(step, metric::kRoundGuardClipped, static_cast<double>(rep.guard_clipped));
        guard_events_.push_back(std::to_string(rep.guard_clipped) + " contribution(s) scaled down by the aggregation guard in " +
                                (rep.what.empty() ? "the round" : rep.what) + " at step " + std::to_string(step));
    }
    if (!rep.members.empty()) {
        uint64_t mask = 0;
        for (int m : rep.members)
            if (m < 64) mask |= uint64_t{1} << m;
        rec_.record(step, metric::kRoundGroupMask, static_cast<double>(mask));
    }
    round_compute_s_ = 0;
    if (elastic() && !late_leader) return catch_up(step, end_s, late);
    return Status::ok();
}

// The same clock rule as outer_round's: the uplink carries this node's payloads of every slice
// back to back after the slowest holder (stage_round_step.h). The rows are the stage node's
// (pipeline_worker.cpp).
Status ReplicaWorker::stage_round(int64_t step) {
    StageRoundActs acts;
    acts.take_states = [this](int64_t s) { return take_stage_states(s); };
    acts.record_round = [this](int64_t s, const StageRoundsReport& rep, double comm_s, double exposed_s) {
        if (rep.guard_clipped > 0)
            guard_events_.push_back(std::to_string(rep.guard_clipped) +
                                    " contribution(s) scaled down by the aggregation guard at step " +
                                    std::to_string(s));
        record_round(s, rep.bytes, rep.hops, round_compute_s_, comm_s, exposed_s);
    };
    const StageRoundNode node{cfg_,
                              net_,
                              static_cast<int>(role_.replica),
                              role_.replica == 0,
                              *stage_rounds_,
                              clock_,
                              rec_,
                              *mesh_,
                              faults_,
                              t_fixed_,
                              StageRecoveryParts{stage_rounds_.get(), t_fixed_, {}, nullptr},
                              down_until_,
                              outer_step_,
                              round_compute_s_,
                              recovery_sent_};
    return stage_round_step(node, step, acts);
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
        rec_.record(step, name, v);
    real_at_last_round_ = real;
}

ByteCounters ReplicaWorker::total_bytes() const {
    ByteCounters total = bytes_before_;
    for (const ByteCounters* c : {mesh_ ? &mesh_->counters() : nullptr, grads_ ? &grads_->counters() : nullptr})
        if (c) total += *c;
    return total;
}

Status ReplicaWorker::checkpoint(bool final, MetricSink& sink) {
    auto written = trainer_->checkpoint_if_due(final);
    if (!written) return Status::error(role_.name + ": checkpoint: " + written.message());
    if (!written->empty()) rec_.info("checkpoint", *written);
    return Status::ok();
}

Status ReplicaWorker::save_run_checkpoint(int64_t step, MetricSink& sink) {
    NodeProgress p{step,      outer_step_, clock_.state(), total_bytes(), last_loss_,
                   last_val_, recovery_sent_, recovery_recv_};
    const OuterState state = outer_          ? outer_->save_state()
                             : stage_rounds_ ? save_stage_state(stage_parts())
                                             : OuterState{};
    return save_and_report_checkpoint(run_ckpt_, p, *trainer_->model(), trainer_->optimizer(), state, config_hash(cfg_),
                                      role_.name, rec_.wall_s(), rec_.recorder(), sink);
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
    rec_.info("resume", "resumed from " + loaded->path + " at step " + std::to_string(p.step));
    return Status::ok();
}

StageStateParts ReplicaWorker::stage_parts() {
    StageStateParts parts;
    for (auto& sl : stage_rounds_->slices()) parts.slices.emplace_back(sl.stage, sl.algo.get());
    parts.t_fixed = t_fixed_;
    return parts;
}

Result<WorkerSummary> ReplicaWorker::run(WorkerControl& ctl, MetricSink& sink) {
    rec_.attach(sink);
    rec_.stamp_with([this] { return clock_.now_s(); }, [this] { return outer_step_; });
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
        rec_.info("start", role_.name + ": a fresh process rejoins after the round at step " + std::to_string(back));
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
            rec_.flush_pending();
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
            rec_.flush_pending();
            if (ctl.stop.load()) rec_.info("stop", "stopped standing by");
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
        rec_.record(s.step, metric::kTrainLoss, s.loss);
        rec_.record(s.step, metric::kTrainLr, s.lr);
        rec_.record(s.step, metric::kTrainGradNorm, s.grad_norm);
        tokens_done_ += tokens_per_step;  // this replica's own: a step it was down for is not counted
        rec_.record(s.step, metric::kTrainTokens, static_cast<double>(tokens_done_));
        rec_.record(s.step, metric::kTrainComputeS, compute_s);
        if (compute_.modelled()) rec_.record(s.step, metric::kTrainRealComputeS, compute_.take_measured_s());
        rec_.record(s.step, metric::kTrainTokensPerS, tokens_per_step / compute_s);
        clock_.settle_due(s.step);  // results of overlapped exchanges due now: the clock waits for them
        Status st = algorithm_of(cfg_) == Algorithm::kDdp ? ddp_round(s.step, compute_s)
                    : stage_rounds_                     ? stage_round(s.step)
                                                        : outer_round(s.step);
        if (!st) {
            failure = st;
            break;
        }
        rec_.record_bytes(s.step, total_bytes(), recovery());
        for (auto& text : std::exchange(guard_events_, {})) rec_.warn("guard", text);
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
                rec_.record(s.step, metric::kValLoss, last_val_);
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
        rec_.flush();
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
    if (clean_stop && run_ckpt_.due_on_stop(trainer_->step_index()))
        if (Status st = save_run_checkpoint(trainer_->step_index(), sink); !st) failure = st;
    rec_.flush_pending();
    const WorkerSummary summary = summarise();
    // Closing the Gloo group now wakes any peer still waiting for this node inside a collective.
    grads_.reset();
    // A collective aborted because of a stop request is a stop, not a failure.
    if (!failure.is_ok() && !ctl.stop.load()) return failure;
    stopped = stopped || ctl.stop.load();
    if (Status st = checkpoint(true, sink); !st) return st;  // at the end, or where a stop left it
    if (stopped) rec_.stopped_at(trainer_->step_index());
    // The run's model, from the node that evaluates it: the global weights where the algorithm
    // keeps them apart from the live ones.
    if (is_evaluator() && !leaving_ && trainer_->step_index() > 0) {
        GlobalWeightsSwap swap;
        if (stage_rounds_) stage_rounds_->swap_in_global(swap);
        else if (outer_) swap.add(trainer_->model()->parameters(), outer_->eval_params());
        send_final_model(sink, role_.name, *trainer_->model(), data_.get());
    }

    return summary;
}

WorkerSummary ReplicaWorker::summarise() const {
    NodeSummary out = clock_summary(clock_);
    out.steps = trainer_->step_index();
    out.train_loss = last_loss_, out.val_loss = last_val_, out.val_step = last_val_step_;
    out.utilisation = out.compute_s / (out.compute_s + *out.exposed_comm_s);
    // Beside stage nodes, whose utilisation also counts bubbles, the share lost to outer syncs alone.
    if (stage_rounds_) out.sync_utilisation = sync_utilisation(clock_);
    return finish_summary(out, total_bytes(), recovery());
}

}  // namespace replica_impl


std::unique_ptr<Worker> make_replica_worker(const RunConfig& cfg, const NodeRole& role,
                                            std::unique_ptr<Collective> mesh,
                                            std::function<void(std::function<bool()>)> set_abort, GroupStore store) {
    return std::make_unique<replica_impl::ReplicaWorker>(NodeParts{cfg, role, std::move(mesh), std::move(set_abort)},
                                                          std::move(store));
}

}  // namespace tw
