// The pipeline worker's loop; see pipeline_worker.h.
#include "engine/worker/pipeline_worker.h"
#include "engine/worker/pipeline_worker_impl.h"

namespace tw {
namespace pipeline_impl {

Status PipelineWorker::setup(WorkerControl& ctl, MetricSink& sink) {
    if (!mesh_) return Status::error(role_.name + ": a pipeline run needs the data-plane mesh");
    auto inputs = prepare_node_inputs(cfg_, role_, sink, rec_.wall_s(), role_.replica, role_.stage);
    if (!inputs) return inputs.status();
    net_ = inputs->net, data_ = inputs->data, compute_ = inputs->compute;
    auto faults = FaultSchedule::create(cfg_);
    if (!faults) return Status::error(role_.name + ": " + faults.message());
    faults_ = std::move(faults).value();
    // A wait for a peer also ends once this node's replica is out of the rounds: the others go on
    // without it, and a wait for one of them (a round they run without this node, a message of a
    // node that left) would only end at the backstop. run() puts the stop alone back when it ends.
    if (set_abort_) set_abort_([this, &ctl] { return ctl.stop.load() || out_of_rounds(); });
    const uint64_t seed = static_cast<uint64_t>(cfg_.run.seed);
    if (run_has_compression(cfg_))
        t_fixed_ = frozen_embedding(cfg_.model.vocab_size, cfg_.model.d_model, seed).mul_(cfg_.pipeline.frozen_std);
    // The stage executor reads replica r's part of the training stream (any replica's, with random
    // routing): each must hold a window, named here rather than thrown by the loader mid-run.
    for (int64_t r = 0; r < cfg_.outer.replicas; ++r)
        if (Status st = check_train_part(cfg_, *data_, r, cfg_.outer.replicas); !st) return st;
    val_ = std::make_unique<WindowLoader>(data_->val, select_spans(*data_, true, cfg_.data.genres), cfg_.model.seq_len,
                                          cfg_.train.batch_size, seed);
    configure_compute_threads(static_cast<int>(cfg_.run.threads));
    // The codec of boundary b (between stage b and b + 1) of this replica (activation_codec_registry.h);
    // dense outside the pipeline.
    auto codec = [&](int64_t b) -> Result<std::unique_ptr<ActivationCodec>> {
        const int64_t k = b < 0 || b >= S() - 1 ? 0 : cfg_.boundary_rank(role_.replica, b);
        auto row = boundary_codec(cfg_, k);
        if (!row) return row.status();
        return (*row)->make(boundary_spec(cfg_, k, t_fixed_));
    };
    auto in = codec(role_.stage - 1);
    if (!in) return in.status();
    auto out = codec(role_.stage);
    if (!out) return out.status();
    stage_ = std::make_unique<PipelineStage>(cfg_.model, seed, role_.stage, S(), std::move(in).value(),
                                             std::move(out).value(), t_fixed_);
    // The schedule's op order is core/pipeline_program.h's stage_iteration (pipeline.schedule
    // was checked against its choices when the config was parsed).
    if (!parse_pipe_schedule(cfg_.pipeline.schedule)) return parse_pipe_schedule(cfg_.pipeline.schedule).status();
    if (Status st = build_rounds(); !st) return st;
    if (cfg_.pipeline.constraint == "reparam") reparam_ = make_reparam_writers(slice().names, slice().params, slice().u, slice().rank);
    build_inner();
    // Same seed → same weights among each stage's holders; a fresh process rejoining a live run
    // skips it (its peers are training) and takes replica 0's state instead.
    const bool fresh = role_.rejoin_step >= 0 || role_.rejoin_live_from >= 0;
    if (!fresh)
        if (Status st = rounds_->check_weights(role_.name); !st) return st;
    if (Status st = resume_run_checkpoint(sink); !st) return st;
    // A resumed node's transport starts afresh at its checkpoint's step; a rejoining process's
    // peers' transports started at the run's start or resume.
    rounds_->start_at(fresh ? role_.rejoin_origin_step : step_);
    rec_.info("start", role_.name + " starts: stage " + std::to_string(role_.stage) + " of " + std::to_string(S()) +
                           ", " + std::to_string(slice().params.size()) + " tensors");
    return Status::ok();
}

// This stage's slice with its constraint, stage group and outer algorithm (stage_rounds.h); the
// later stages of a pipeline replica then follow stage 0's AD2 moves by replaying its rounds when
// the algorithm's rounds can be replayed (core/pipeline_program.h: no table before the first
// round), or receive the table itself.
Status PipelineWorker::build_rounds() {
    std::vector<torch::Tensor> params;
    std::vector<std::string> names;
    for (auto& p : stage_->model()->named_parameters()) names.push_back(p.key()), params.push_back(p.value());
    auto rounds = StageRounds::create(cfg_, role_.replica, role_.stage, role_.stage, params, names, *mesh_, t_fixed_);
    if (!rounds) return rounds.status();
    rounds_ = std::move(*rounds);
    rounds_->set_schedule(&faults_);
    const int64_t k0 = run_constraint_rank(cfg_, 0);
    if (has_embedding_shadow(cfg_, role_.replica, static_cast<int>(role_.stage)))
        return build_embedding_shadow(subspace_basis(cfg_.model.d_model, k0, static_cast<uint64_t>(cfg_.run.seed)));
    // A resumed node's T_fixed is its checkpoint's, and the start's sending is in its clock and
    // rows already: not sent again (every node of a run resumes alike). A rejoining process takes
    // replica 0's.
    if (role_.resume_step >= 0 || role_.rejoin_step >= 0 || role_.rejoin_live_from >= 0) return Status::ok();
    return broadcast_frozen_embedding(0);
}

// The later stages start from the same T_fixed as stage 0 by doing its initial AD2 move on their
// own copy of the initial embedding (same seed, same weights), then replay every round.
Status PipelineWorker::build_embedding_shadow(const torch::Tensor& u0) {
    Llama first(cfg_.model, static_cast<uint64_t>(cfg_.run.seed), stage_spec(cfg_.model, 0, S()));
    for (auto& p : first->named_parameters())
        if (p.key() == "tok_emb") shadow_emb_ = p.value().detach().clone();
    {
        torch::NoGradGuard no_grad;
        move_out_of_span_into_frozen(shadow_emb_, t_fixed_, u0);
    }
    // No guard of its own: it would judge the embedding's part of the payloads alone, not the whole
    // contributions stage 0 judges. A round in which stage 0's guard scaled something forwards the
    // members' factors with the payloads, and the replay applies those (engine/README.md).
    RunConfig shadow_cfg = cfg_;
    shadow_cfg.outer.guard_ratio = 0;
    auto algo = make_outer_algorithm(shadow_cfg, {shadow_emb_}, {"tok_emb"}, 0, static_cast<int>(cfg_.outer.replicas));
    if (!algo) return algo.status();
    shadow_ = std::move(*algo);
    RoundHooks h;
    h.after_round = [this, u0](std::vector<torch::Tensor>& global, std::vector<torch::Tensor>& live) {
        move_out_of_span_into_frozen(global[0], t_fixed_, u0);
        live[0].copy_(global[0]);
    };
    if (!shadow_->set_round_hooks(std::move(h)).after_round)
        return Status::error(role_.name + ": " + shadow_->name() + " cannot keep T_fixed by replaying rounds");
    return Status::ok();
}

// A pipeline replica's later stages rebuild activations with T_fixed, which AD2 changes on stage 0.
// Under SparseLoCo stage 0 forwards the embedding's part of every member's round payload (inter-
// stage bytes, counted) and the later stages replay the round on their copy; with the other
// algorithms it sends the new table itself (bit-exact copies, not deltas).
// The messages are core/pipeline_program.h's frozen_table_events, which re-timing replays.
Status PipelineWorker::broadcast_frozen_embedding(int64_t step) {
    const auto events = frozen_table_events(cfg_, role_.replica, static_cast<int>(role_.stage));
    if (events.empty() || (outer_step_ < 0 && !frozen_table_at_start(cfg_))) return Status::ok();
    if (role_.stage == 0) {
        std::vector<uint8_t> bytes;
        // tok_emb leads stage 0's slice: its part of every member's payload, when the algorithm's
        // payloads have one, lets the later stages replay the round; otherwise the table itself.
        auto lead = slice().algo ? slice().algo->leading_tensor_payloads() : std::nullopt;
        bytes = lead ? std::move(*lead) : tensor_bytes(t_fixed_);
        for (const StageEvent& e : events)
            if (Status st = send(step, peer(e.peer_replica, e.peer_stage), bytes); !st) return st;
        return Status::ok();
    }
    auto m = recv(peer(events.front().peer_replica, events.front().peer_stage));
    if (!m) return m.status();
    if (shadow_) {
        if (Status st = shadow_->replay_round(*m, static_cast<int>(cfg_.outer.replicas)); !st)
            return Status::error(role_.name + ": " + st.message());
        return Status::ok();
    }
    if (m->size() != static_cast<size_t>(t_fixed_.numel() * 4))
        return Status::error(role_.name + ": frozen embedding of " + std::to_string(m->size()) + " bytes, expected " +
                             std::to_string(t_fixed_.numel() * 4));
    std::memcpy(t_fixed_.data_ptr<float>(), m->data(), m->size());
    return Status::ok();
}

Status PipelineWorker::send(int64_t step, int to, const std::vector<uint8_t>& payload) {
    // The uplink serialises messages; the sender's compute goes on meanwhile.
    const double arrival = clock_.send(net_.stage, payload.size());
    rec_.record(step, metric::kClockSendBytes, static_cast<double>(payload.size()));
    return mesh_->send(to, payload, LinkClass::kInterStage, arrival);
}

Result<std::vector<uint8_t>> PipelineWorker::recv(int from) {
    double arrival = 0;
    auto m = mesh_->recv(from, &arrival);
    if (m) clock_.receive(arrival);
    return m;
}

// Every H steps: S rounds, one per stage, each among that stage's holders (a node holding no slice
// of the stage still takes part in the mesh's round, alone, so rounds stay aligned); the rest of the
// round is stage_round_step.h's.
Status PipelineWorker::outer_rounds(int64_t step) {
    const double real_before = mesh_->real_exchange_s();
    StageRoundActs acts;
    acts.take_states = [this](int64_t s) { return take_stage_states(s); };
    acts.after_close = [this](int64_t s) {
        if (Status st = broadcast_frozen_embedding(s); !st) return st;
        for (auto& r : reparam_) r.to_coordinates();  // W = U·Z again (reparam implies AD1)
        return Status::ok();
    };
    acts.record_round = [&](int64_t s, const StageRoundsReport& rep, double comm_s, double exposed_s) {
        rec_.record_all(s, round_metrics(rep.bytes, rep.hops, round_compute_s_, comm_s, exposed_s,
                                         mesh_->real_exchange_s() - real_before));
    };
    const StageRoundNode node{cfg_,
                              net_,
                              static_cast<int>(role_.replica),
                              role_.replica == 0 && role_.stage == 0,
                              *rounds_,
                              clock_,
                              rec_,
                              *mesh_,
                              faults_,
                              t_fixed_,
                              recovery_parts(),
                              down_until_,
                              outer_step_,
                              round_compute_s_,
                              recovery_sent_};
    return stage_round_step(node, step, acts);
}

// Validation loss of the global model on replica 0 (outer algorithms' global weights swapped in).
// A pipeline evaluates over dense boundaries whatever it trains with; that traffic is measurement
// and not counted.
Status PipelineWorker::evaluate(double& val, const std::atomic<bool>& stop) {
    GlobalWeightsSwap swap;
    rounds_->swap_in_global(swap);
    Status result;
    const int64_t B = cfg_.train.batch_size, T = cfg_.model.seq_len;
    double sum = 0;
    for (int64_t i = 0; i < cfg_.train.eval_batches && result.is_ok(); ++i) {
        if (stop.load()) {
            val = NAN;
            return Status::ok();
        }
        auto win = val_->sequential_batch(i);
        std::vector<uint8_t> in;
        if (!stage_->first()) {
            auto r = mesh_->recv(peer(role_.replica, role_.stage - 1));
            if (!r) { result = r.status(); break; }
            in = std::move(*r);
        }
        torch::Tensor ids = win.narrow(1, 0, T);
        if (stage_->last()) {
            auto l = stage_->eval_loss(ids, in, win.narrow(1, 1, T), B);
            if (!l) result = l.status();
            else sum += *l;
        } else {
            auto o = stage_->eval_forward(ids, in, B);
            if (!o) result = o.status();
            else result = mesh_->send(peer(role_.replica, role_.stage + 1), *o, LinkClass::kInterStage, 0, false);
        }
    }
    if (!result.is_ok() && stop.load()) {  // a wait aborted by the stop
        val = NAN;
        return Status::ok();
    }
    val = sum / static_cast<double>(cfg_.train.eval_batches);
    return result;
}

ByteCounters PipelineWorker::total_bytes() const { return counters_since(bytes_before_, mesh_->counters()); }

StageStateParts PipelineWorker::stage_parts() {
    StageStateParts parts;
    for (auto& sl : rounds_->slices()) parts.slices.emplace_back(sl.stage, sl.algo.get());
    parts.t_fixed = t_fixed_;
    parts.reparam = &reparam_;
    parts.shadow_emb = shadow_emb_;
    parts.shadow = shadow_.get();
    return parts;
}

Status PipelineWorker::save_run_checkpoint(int64_t step, MetricSink& sink) {
    NodeProgress p{step, outer_step_, clock_.state(), total_bytes(), last_loss_, last_val_, recovery_sent_, recovery_recv_};
    return save_and_report_checkpoint(run_ckpt_, p, *stage_->model(), optim_->adamw(), save_stage_state(stage_parts()),
                                      config_hash(cfg_), role_.name, rec_.wall_s(), rec_.recorder(), sink);
}

Status PipelineWorker::resume_run_checkpoint(MetricSink& sink) {
    run_ckpt_ = RunCheckpoints(cfg_, role_);
    if (!run_ckpt_.resuming()) return Status::ok();
    auto loaded = run_ckpt_.load(*stage_->model(), optim_->adamw());
    if (!loaded) return Status::error(role_.name + ": resume: " + loaded.message());
    if (Status st = load_stage_state(loaded->outer_state, stage_parts()); !st)
        return Status::error(role_.name + ": resume: " + loaded->path + ": " + st.message());
    const NodeProgress& p = loaded->progress;
    step_ = p.step;
    outer_step_ = p.outer_step;
    clock_.restore(p.clock);
    bytes_before_ = p.bytes;
    last_loss_ = p.last_loss, last_val_ = p.last_val;
    recovery_sent_ = p.recovery_sent, recovery_recv_ = p.recovery_recv;
    rec_.info("resume", "resumed from " + loaded->path + " at step " + std::to_string(p.step));
    return Status::ok();
}

Result<WorkerSummary> PipelineWorker::run(WorkerControl& ctl, MetricSink& sink) {
    rec_.attach(sink);
    rec_.stamp_with([this] { return clock_.now_s(); }, [this] { return outer_step_; });
    // The mesh outlives run() and the rounds (its bye asks the abort whether the node stopped):
    // whichever way run() ends, the abort asks for the stop alone from then on.
    struct StopOnlyAbort {
        std::function<void(std::function<bool()>)>& set;
        WorkerControl& ctl;
        ~StopOnlyAbort() {
            if (set) set([c = &ctl] { return c->stop.load(); });
        }
    } stop_only{set_abort_, ctl};
    if (Status st = setup(ctl, sink); !st) return st;
    ctl.step = step_;  // a resumed node starts where its checkpoint stands
    tokens_done_ = step_ * cfg_.train.batch_size * cfg_.model.seq_len;
    if (role_.rejoin_step >= 0)
        if (Status st = rejoin_fresh(ctl); !st) {
            // Counted out by its peers while it waited for the state (it came up too late for the
            // round it was to rejoin at): the pipeline is out as a lost one is, and the run goes on.
            if (ctl.stop.load()) return st;
            if (leave_if_lost(st)) return summarise();
            // Replica 0's node, which alone sends the state, was lost or ended first (its round
            // had counted this replica out before the process was up): the run went on without it.
            if (rounds_->replica_lost(0)) {
                rec_.warn("rejoin", role_.name + " did not rejoin: " + st.message());
                return summarise();
            }
            return st;
        }
    if (role_.rejoin_live_from >= 0) {
        bool joined = false;
        Status st = rejoin_live(ctl, joined);
        if (!st && !ctl.stop.load()) return st;
        if (!st || !joined) return summarise();
    }
    const int64_t steps = cfg_.train.steps, tokens_per_step = cfg_.train.batch_size * cfg_.model.seq_len;
    const bool evaluator = role_.replica == 0;
    const bool reports_loss = stage_->last();
    bool gone = false;  // killed for good, or left the rounds as a lost pipeline
    Status failure;
    bool stopped = false;
    const StageIo io{[this](int64_t step, int to, const std::vector<uint8_t>& p) { return send(step, to, p); },
                     [this](int from) { return recv(from); },
                     [this](int64_t step, const StageEvent& e, double measured_s) {
                         // measured, or modelled (flops); a [faults] slow replica's segments take k times it
                         const double s = compute_.stage_segment(e, measured_s) * faults_.compute_factor(role_.replica, step);
                         clock_compute(step, s);
                         return s;
                     }};
    while (step_ < steps) {
        if (!ctl.wait_while_paused()) {
            stopped = true;
            break;
        }
        double loss = NAN, compute = 0, grad_norm = NAN, lr = NAN;
        const double before = clock_.now_s();
        auto it = exec_->step(step_, io);
        if (!it) {
            if (!ctl.stop.load() && leave_if_lost(it.status())) {
                gone = true;
                break;
            }
            failure = Status::error(role_.name + ": " + it.message());
            break;
        }
        loss = it->loss, compute = it->compute_s, grad_norm = it->grad_norm, lr = it->lr;
        ++step_;
        round_compute_s_ += compute;
        if (reports_loss) last_loss_ = loss, rec_.record(step_, metric::kTrainLoss, loss);
        rec_.record(step_, metric::kTrainLr, lr);
        rec_.record(step_, metric::kTrainGradNorm, grad_norm);
        tokens_done_ += tokens_per_step;
        rec_.record(step_, metric::kTrainTokens, static_cast<double>(tokens_done_));
        rec_.record(step_, metric::kTrainComputeS, compute);
        if (compute_.modelled()) rec_.record(step_, metric::kTrainRealComputeS, compute_.take_measured_s());
        rec_.record(step_, metric::kPipeIdleS, clock_.now_s() - before - compute);
        if (Status st = outer_rounds(step_); !st) {
            if (!ctl.stop.load() && leave_if_lost(st)) {
                rec_.record_bytes(step_, total_bytes(), recovery());
                gone = true;
                break;
            }
            failure = st;
            break;
        }
        rec_.record_bytes(step_, total_bytes(), recovery());
        const bool rounds = algorithm_traits(cfg_).outer_rounds;
        const bool round_end = rounds && step_ % cfg_.outer.inner_steps == 0;
        const bool periodic = cfg_.train.eval_every > 0 && step_ % cfg_.train.eval_every == 0;
        if (evaluator && (round_end || (!rounds && periodic) || step_ == steps)) {
            double v = NAN;
            if (Status st = evaluate(v, ctl.stop); !st) {
                failure = st;
                break;
            }
            if (reports_loss && !std::isnan(v)) last_val_ = v, rec_.record(step_, metric::kValLoss, v);
        }
        // Run-scoped checkpoints at round boundaries, where every holder has the round's result.
        if (step_ < steps && run_ckpt_.due(step_, !rounds || round_end))
            if (Status st = save_run_checkpoint(step_, sink); !st) {
                failure = st;
                break;
            }
        ctl.step = step_;
        rec_.flush();
        bool killed = false;
        if (Status st = apply_faults(step_, compute, ctl, killed); !st) {
            failure = st;
            break;
        }
        if (killed) {
            gone = true;
            break;  // the pipeline's every node ends after this step; the rounds go on without it
        }
    }
    if (Status st = end_training_loop(failure, stopped, step_, ctl, run_ckpt_,
                                      [&](int64_t step) { return save_run_checkpoint(step, sink); });
        !st)
        return st;
    // The run's model from the evaluating pipeline: each stage its slice, global weights swapped in.
    if (evaluator && !gone && step_ > 0) {
        GlobalWeightsSwap swap;
        rounds_->swap_in_global(swap);
        send_final_model(sink, role_.name, *stage_->model(), data_.get());
    }
    return summarise();
}

WorkerSummary PipelineWorker::summarise() const {
    NodeSummary out = clock_summary(clock_);
    out.steps = step_;
    out.train_loss = last_loss_, out.val_loss = last_val_;
    out.utilisation = out.compute_s / std::max(1e-12, out.sim_s);  // bubbles and transfers count
    out.sync_utilisation = sync_utilisation(clock_);
    return finish_summary(out, total_bytes(), recovery());
}

}  // namespace pipeline_impl

std::unique_ptr<Worker> make_pipeline_worker(const RunConfig& cfg, const NodeRole& role,
                                             std::unique_ptr<Collective> mesh,
                                             std::function<void(std::function<bool()>)> set_abort) {
    return std::make_unique<pipeline_impl::PipelineWorker>(NodeParts{cfg, role, std::move(mesh), std::move(set_abort)});
}

}  // namespace tw
