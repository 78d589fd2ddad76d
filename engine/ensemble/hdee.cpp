// HDEE on the engine side: scoring windows, the domain split of prepared data, the expert worker.
#include "engine/ensemble/hdee.h"

#include "engine/worker/final_model_sender.h"

#include <torch/torch.h>

#include <cmath>
#include <utility>

#include "core/assert.h"
#include "core/compute_model.h"
#include "core/config_io.h"
#include "core/data_fingerprint.h"
#include "core/hdee_mixture.h"
#include "core/metric_names.h"
#include "engine/worker/node_data.h"
#include "engine/worker/node_summary.h"
#include "engine/worker/node_worker.h"
#include "engine/worker/run_checkpoint.h"
#include "engine/worker/worker_recorder.h"
#include "engine/data/dataset.h"
#include "engine/data/loader.h"
#include "engine/model/llama.h"
#include "engine/train/trainer.h"

namespace tw {

std::vector<std::vector<float>> score_windows(Llama& model, const WindowLoader& val) {
    torch::NoGradGuard no_grad;
    std::vector<std::vector<float>> out;
    const int64_t n_windows = val.num_windows();
    for (int64_t i = 0; static_cast<int64_t>(out.size()) < n_windows; ++i) {
        torch::Tensor batch = val.sequential_batch(i);  // [B, T+1]
        const int64_t rows = std::min<int64_t>(batch.size(0), n_windows - static_cast<int64_t>(out.size()));
        batch = batch.narrow(0, 0, rows);
        const int64_t T = batch.size(1) - 1;
        const torch::Tensor inputs = batch.narrow(1, 0, T), targets = batch.narrow(1, 1, T).unsqueeze(-1);
        // fp32, as the training loss; the gathered values are sent as they are.
        const torch::Tensor lsm = torch::log_softmax(model->forward(inputs), -1);
        const torch::Tensor token_logp = lsm.gather(-1, targets).squeeze(-1).contiguous();  // [rows, T]
        for (int64_t r = 0; r < rows; ++r) {
            const float* p = token_logp[r].data_ptr<float>();
            out.emplace_back(p, p + T);
        }
    }
    return out;
}

HdeeDomainSplit split_domain(const PreparedData& data, const std::vector<std::string>& genres, int64_t vocab,
                             int64_t doc_tokens) {
    HdeeDomainSplit out;
    const auto val = select_spans(data, true, genres);
    HdeeSpanSplit parts = split_alternate(val, doc_tokens);
    out.eval = std::move(parts.eval);
    out.prior = std::move(parts.prior);
    out.unigram = unigram_loss_of(data, genres, vocab);
    return out;
}

namespace {

// An expert talks to nobody but the coordinator: no mesh, no abort hook.
class ExpertWorker : public NodeWorker {
public:
    ExpertWorker(RunConfig cfg, NodeRole role) : NodeWorker({std::move(cfg), std::move(role), nullptr, {}}) {}
    Result<WorkerSummary> run(WorkerControl& ctl, MetricSink& sink) override;

private:
    // Scores every domain's eval and prior documents with the trained model; false if stopped.
    Result<bool> score(Trainer& trainer, const PreparedData& data, WorkerControl& ctl, MetricSink& sink);
    // Run-scoped checkpoints (engine/worker/run_checkpoint.h): an expert's state is its model, its
    // AdamW and its step (the data position), beside the simulated clock and the last losses; it
    // has no outer state and sends nothing, so its byte counters stay zero.
    Status save_checkpoint(RunCheckpoints& ckpts, Trainer& trainer, const RunConfig& c, int64_t step,
                           double compute_s, double last_loss, double last_val, MetricSink& sink);

    double sim_s_ = 0;
};

Result<bool> ExpertWorker::score(Trainer& trainer, const PreparedData& data, WorkerControl& ctl, MetricSink& sink) {
    const HdeeConfig& h = cfg_.hdee;
    const int64_t T = cfg_.model.seq_len, B = cfg_.train.batch_size;
    const uint64_t seed = static_cast<uint64_t>(cfg_.run.seed);
    ExpertScores sc;
    sc.seq_len = T;
    const auto own = static_cast<size_t>(role_.expert_domain);
    for (size_t d = 0; d < h.domains.size(); ++d) {
        if (ctl.stop.load()) return false;
        const auto genres = hdee_domain_genres(cfg_, d);
        const HdeeDomainSplit split = split_domain(data, genres, cfg_.model.vocab_size, h.eval_doc_tokens);
        if (split.eval.empty() || split.prior.empty())
            return Status::error("hdee domain " + h.domains[d] + " has " +
                                 std::to_string(split.eval.size() + split.prior.size()) +
                                 " validation documents; the eval/prior split needs at least 2 (add genres)");
        HdeeSetShape shape;
        shape.eval_docs = static_cast<int64_t>(split.eval.size());
        shape.prior_docs = static_cast<int64_t>(split.prior.size());
        const WindowLoader eval(data.val, split.eval, T, B, seed), prior(data.val, split.prior, T, B, seed);
        double nll = 0;  // this node's own NLL on the eval part, summed as the coordinator sums it
        for (const auto& w : score_windows(trainer.model(), eval)) {
            double window = 0;
            for (float v : w) window -= static_cast<double>(v);
            nll += window;
            sc.logp.insert(sc.logp.end(), w.begin(), w.end());
            ++shape.eval_windows;
        }
        for (const auto& w : score_windows(trainer.model(), prior)) {
            sc.logp.insert(sc.logp.end(), w.begin(), w.end());
            ++shape.prior_windows;
        }
        sc.sets.push_back(shape);
        rec_.record(trainer.step_index(), kHdeeEvalNllPrefix + h.domains[d],
                    nll / static_cast<double>(std::max<int64_t>(shape.eval_windows * T, 1)));
        if (d == own) {
            sc.unigram = split.unigram;
            for (auto& [off, len] : select_spans(data, false, genres)) sc.train_tokens += len;
        }
    }
    rec_.flush();
    rec_.info("scores", std::to_string(sc.logp.size()) + " token log-probabilities of " +
                            std::to_string(h.domains.size()) + " domains sent to the coordinator");
    sink.scores(std::move(sc));
    return true;
}

Status ExpertWorker::save_checkpoint(RunCheckpoints& ckpts, Trainer& trainer, const RunConfig& c, int64_t step,
                                     double compute_s, double last_loss, double last_val, MetricSink& sink) {
    NodeProgress p;
    p.step = step;
    p.clock.now_s = sim_s_;
    p.clock.compute_s = compute_s;
    p.last_loss = last_loss, p.last_val = last_val;
    return save_and_report_checkpoint(ckpts, p, *trainer.model(), trainer.optimizer(), {}, config_hash(c), role_.name,
                                      rec_.wall_s(), rec_.recorder(), sink);
}

Result<WorkerSummary> ExpertWorker::run(WorkerControl& ctl, MetricSink& sink) {
    rec_.attach(sink);
    rec_.stamp_with([this] { return sim_s_; }, nullptr);
    const HdeeConfig& h = cfg_.hdee;
    if (!h.enabled() || role_.expert_ensemble < 0 || role_.expert_ensemble >= static_cast<int>(kHdeeEnsembles) ||
        role_.expert_domain < 0 || static_cast<size_t>(role_.expert_domain) >= h.domains.size() ||
        role_.expert_steps < 1)
        return Status::error(role_.name + ": an expert role (ensemble " + std::to_string(role_.expert_ensemble) +
                             ", domain " + std::to_string(role_.expert_domain) + ", " +
                             std::to_string(role_.expert_steps) + " steps) that the run's [hdee] (" +
                             std::to_string(h.domains.size()) + " domains) does not have");
    auto prepared = prepare_node_data(cfg_, role_, sink, rec_.wall_s());
    if (!prepared) return prepared.status();
    const PreparedData* data = prepared->get();

    // This expert's own config: its width, its planned steps, its domain's genres.
    RunConfig c = cfg_;
    if (role_.expert_d_ff > 0) c.model.d_ff = role_.expert_d_ff;
    c.train.steps = role_.expert_steps;
    c.data.genres = hdee_domain_genres(cfg_, static_cast<size_t>(role_.expert_domain));
    const uint64_t seed = static_cast<uint64_t>(c.run.seed);
    Trainer trainer(c,
                    WindowLoader(data->train, select_spans(*data, false, c.data.genres), c.model.seq_len,
                                 c.train.batch_size, seed),
                    WindowLoader(data->val, select_spans(*data, true, c.data.genres), c.model.seq_len,
                                 c.train.batch_size, seed));
    std::string genres;
    for (auto& g : c.data.genres) genres += (genres.empty() ? "" : " ") + g;
    rec_.info("start", "expert of ensemble " + std::string(kHdeeEnsembleNames[role_.expert_ensemble]) + " for domain " +
                           h.domains[static_cast<size_t>(role_.expert_domain)] + " (genres " + genres + "): d_ff " +
                           std::to_string(c.model.ff_width()) + ", " + std::to_string(count_parameters(c.model)) +
                           " parameters, " + std::to_string(c.train.steps) + " steps");

    const int64_t steps = c.train.steps, tokens_per_step = c.train.batch_size * c.model.seq_len;
    auto compute_time = ComputeTime::create(c, 0);  // this expert's own width counts
    if (!compute_time) return Status::error(role_.name + ": " + compute_time.message());
    double compute_s = 0, last_loss = NAN, last_val = NAN;
    // Each expert resumes from its own latest checkpoint (the coordinator's role.resume_step; HDEE
    // experts train different step counts and never meet, so there is no step common to all).
    RunCheckpoints ckpts(c, role_);
    if (ckpts.resuming()) {
        auto loaded = ckpts.load(*trainer.model(), trainer.optimizer());
        if (!loaded) return Status::error(role_.name + ": resume: " + loaded.message());
        if (!loaded->outer_state.empty())
            return Status::error(role_.name + ": resume: " + loaded->path + " holds an outer algorithm's state; an expert runs none");
        const NodeProgress& p = loaded->progress;
        if (p.step < 0 || p.step > steps)
            return Status::error(role_.name + ": resume: " + loaded->path + " is of step " + std::to_string(p.step) +
                                 ", outside this expert's " + std::to_string(steps) + " steps");
        trainer.set_step_index(p.step);
        sim_s_ = p.clock.now_s, compute_s = p.clock.compute_s;
        last_loss = p.last_loss, last_val = p.last_val;
        rec_.info("resume", "resumed from " + loaded->path + " at step " + std::to_string(p.step));
    }
    bool stopped = false;
    Status failure;
    while (trainer.step_index() < steps) {
        if (!ctl.wait_while_paused()) {
            stopped = true;
            break;
        }
        const StepReport s = trainer.step();
        const double step_s = compute_time->train_step(s.compute_s);  // measured, or modelled (flops)
        sim_s_ += step_s;  // no communication: the simulated clock is the compute
        compute_s += step_s;
        last_loss = s.loss;
        rec_.record(s.step, metric::kTrainLoss, s.loss);
        rec_.record(s.step, metric::kTrainLr, s.lr);
        rec_.record(s.step, metric::kTrainGradNorm, s.grad_norm);
        rec_.record(s.step, metric::kTrainTokens, static_cast<double>(s.step * tokens_per_step));
        rec_.record(s.step, metric::kTrainComputeS, step_s);
        if (compute_time->modelled()) rec_.record(s.step, metric::kTrainRealComputeS, compute_time->take_measured_s());
        rec_.record(s.step, metric::kTrainTokensPerS, static_cast<double>(tokens_per_step) / step_s);
        // On its own domain's validation documents, as a one-node run: every eval_every steps and at the end.
        if ((c.train.eval_every > 0 && s.step % c.train.eval_every == 0) || s.step == steps) {
            last_val = trainer.evaluate();
            rec_.record(s.step, metric::kValLoss, last_val);
        }
        // Unlike a replica, an expert checkpoints its last step too: a resumed run resumes a finished
        // expert as well (the coordinator combines the scores only once every expert has sent them),
        // and from there it only scores again.
        if (ckpts.due(s.step, true) || (s.step == steps && ckpts.enabled()))
            if (Status st = save_checkpoint(ckpts, trainer, c, s.step, compute_s, last_loss, last_val, sink); !st) {
                failure = st;
                break;
            }
        ctl.step = s.step;
        rec_.flush();
    }
    if (!failure.is_ok()) return failure;
    // A stop between steps leaves a consistent state: checkpoint it, so a resume loses nothing.
    if (stopped && ckpts.due_on_stop(trainer.step_index()))
        if (Status st = save_checkpoint(ckpts, trainer, c, trainer.step_index(), compute_s, last_loss, last_val, sink); !st)
            return st;
    if (!stopped) {
        auto scored = score(trainer, *data, ctl, sink);
        if (!scored) return scored.status();
        stopped = !*scored;
    }
    rec_.flush_pending();
    if (stopped) rec_.stopped_at(trainer.step_index());
    if (trainer.step_index() > 0) {  // the expert's model, a model of its own
        send_final_model(sink, role_.name, *trainer.model(), data);
    }
    NodeSummary out;  // no communication: the clock is the compute, and no bytes
    out.steps = trainer.step_index();
    out.train_loss = last_loss, out.val_loss = last_val;
    out.sim_s = sim_s_, out.compute_s = compute_s, out.exposed_comm_s = 0.0, out.utilisation = 1.0;
    out.wall_s = rec_.wall_s();
    return to_worker_summary(out);
}

}  // namespace

std::unique_ptr<Worker> make_expert_worker(const RunConfig& cfg, const NodeRole& role) {
    return std::make_unique<ExpertWorker>(cfg, role);
}

}  // namespace tw
