// Single-replica training loop.
#include "engine/train/trainer.h"

#include <torch/optim/adamw.h>
#include <torch/utils.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <filesystem>

#include "core/config_io.h"
#include "engine/runtime/threads.h"
#include "engine/train/checkpoint.h"

namespace tw {

std::unique_ptr<torch::optim::AdamW> make_adamw(Llama& model, const TrainConfig& t) {
    return make_adamw(model->parameters(), t);
}

Trainer::Trainer(const RunConfig& cfg, WindowLoader train, WindowLoader val)
    : cfg_(cfg), model_(cfg.model, static_cast<uint64_t>(cfg.run.seed)), train_(std::move(train)), val_(std::move(val)) {
    configure_compute_threads(static_cast<int>(cfg.run.threads));
    optim_ = std::make_unique<InnerOptimizer>(model_->parameters(), cfg.train);
}

Trainer::~Trainer() = default;

void Trainer::reset_optimizer() { optim_ = std::make_unique<InnerOptimizer>(model_->parameters(), cfg_.train); }

StepReport Trainer::step() {
    const auto t0 = std::chrono::steady_clock::now();
    const auto& t = cfg_.train;
    const double lr = optim_->set_lr(step_);

    auto batch = train_.batch(step_);
    // Drop gradients instead of zeroing them (1.13's C++ zero_grad has no set_to_none): backward then
    // writes fresh tensors, saving a memset and an add per parameter.
    for (auto& p : model_->parameters()) p.mutable_grad() = torch::Tensor();
    auto since = [](std::chrono::steady_clock::time_point t) {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    };
    StepReport r;
    r.lr = lr;
    auto t1 = std::chrono::steady_clock::now();
    auto loss = model_->loss(batch);
    r.forward_s = since(t1);
    t1 = std::chrono::steady_clock::now();
    loss.backward();
    r.backward_s = since(t1);
    // Gradient sync (DDP's all-reduce) is communication: timed as sync_s, outside compute_s. If it
    // fails the update is skipped, so this replica never steps on gradients the others did not see.
    sync_status_ = Status::ok();
    if (grad_sync_) {
        t1 = std::chrono::steady_clock::now();
        sync_status_ = grad_sync_();
        r.sync_s = since(t1);
    }
    if (sync_status_) {
        t1 = std::chrono::steady_clock::now();
        // Norm before clipping; with clipping off we still report it.
        r.grad_norm = optim_->clip();
        optim_->step();
        ++step_;
        r.optim_s = since(t1);
    }
    r.step = step_;
    r.loss = loss.item<double>();
    r.tokens = step_ * t.batch_size * cfg_.model.seq_len;
    r.compute_s = since(t0) - r.sync_s;
    return r;
}

double Trainer::evaluate() {
    torch::NoGradGuard no_grad;
    double sum = 0;
    for (int64_t i = 0; i < cfg_.train.eval_batches; ++i) {
        if (stop_check_ && stop_check_()) return std::numeric_limits<double>::quiet_NaN();
        sum += model_->loss(val_.sequential_batch(i)).item<double>();
    }
    return sum / static_cast<double>(cfg_.train.eval_batches);
}

Status Trainer::save(const std::string& path) const {
    auto* self = const_cast<Trainer*>(this);  // serialisation reads only; torch's API is not const
    return save_checkpoint(path, *self->model_, self->optim_->adamw(), {step_, config_hash(cfg_)});
}

Status Trainer::load(const std::string& path) {
    auto meta = load_checkpoint(path, *model_, optim_->adamw());
    if (!meta) return meta.status();
    step_ = meta->step;
    return Status::ok();
}

Result<std::string> Trainer::resume_if_asked() {
    const auto& t = cfg_.train;
    if (!t.resume || !std::filesystem::exists(t.ckpt_path)) return std::string();
    if (Status s = load(t.ckpt_path); !s) return s;
    return "resumed from " + t.ckpt_path + " at step " + std::to_string(step_);
}

Result<std::string> Trainer::checkpoint_if_due(bool final) {
    const auto& t = cfg_.train;
    if (t.ckpt_path.empty() || !(final || (t.ckpt_every > 0 && step_ % t.ckpt_every == 0))) return std::string();
    if (Status s = save(t.ckpt_path); !s) return s;
    return "step " + std::to_string(step_) + " -> " + t.ckpt_path;
}

Status Trainer::run(const TrainHooks& hooks) {
    const auto& t = cfg_.train;
    auto event = [&](const std::string& k, const std::string& s) {
        if (hooks.on_event && !s.empty()) hooks.on_event(k, s);
    };
    if (!stop_check_) stop_check_ = hooks.should_stop;
    const auto eval = [&] {
        if (!hooks.on_eval) return;
        if (const double v = evaluate(); !std::isnan(v)) hooks.on_eval(step_, v);
    };
    auto resumed = resume_if_asked();
    if (!resumed) return resumed.status();
    event("resume", *resumed);
    auto checkpoint = [&](bool final) -> Status {
        auto written = checkpoint_if_due(final);
        if (!written) return written.status();
        event("checkpoint", *written);
        return Status::ok();
    };
    while (step_ < t.steps) {
        if (hooks.should_stop && hooks.should_stop()) {
            stopped_ = true;
            return checkpoint(true);
        }
        StepReport r = step();
        if (!sync_status_) return sync_status_;  // the step was abandoned; nothing to report
        if (hooks.on_step) hooks.on_step(r);
        if (hooks.after_step)
            if (Status s = hooks.after_step(step_); !s) return s;
        const bool last = step_ == t.steps;
        if (!last && t.eval_every > 0 && step_ % t.eval_every == 0) eval();
        if (!last)
            if (Status s = checkpoint(false); !s) return s;
    }
    eval();
    return checkpoint(true);
}

}  // namespace tw
