// One iteration of a pipeline stage node; see stage_executor.h.
#include "engine/worker/stage_executor.h"

#include <chrono>
#include <cmath>
#include <cstring>

#include "core/layout.h"
#include "core/pipeline_program.h"
#include "core/routing.h"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;
double since_s(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

StageExecutor::StageExecutor(const RunConfig& cfg, int replica, int64_t stage, std::shared_ptr<const PreparedData> data,
                             PipelineStage& stage_model, InnerOptimizer& optim, std::vector<ReparamWriter>& reparam,
                             std::function<void()> project)
    : cfg_(cfg), replica_(replica), stage_index_(stage), data_(std::move(data)), stage_(stage_model), optim_(optim),
      reparam_(reparam), project_(std::move(project)) {}

int StageExecutor::peer(int replica, int64_t stage) const {
    return pipeline_mesh_rank(cfg_, replica, static_cast<int>(stage));
}

WindowLoader& StageExecutor::loader_of(int replica) {
    auto& l = loaders_[replica];
    if (!l)
        l = std::make_unique<WindowLoader>(data_->train, select_spans(*data_, false, cfg_.data.genres),
                                           cfg_.model.seq_len, cfg_.train.batch_size,
                                           static_cast<uint64_t>(cfg_.run.seed), replica, cfg_.outer.replicas);
    return *l;
}

// Follow the routes back to stage 0 (NoLoCo routing sends a micro-batch to a random replica's next stage).
int StageExecutor::origin_replica(int64_t step, int mb) const {
    int r = replica_;
    if (cfg_.pipeline.routing != "random") return r;
    for (int64_t s = stage_index_ - 1; s >= 0; --s)
        r = routing_source(static_cast<uint64_t>(cfg_.run.seed), step, mb, static_cast<int>(s),
                           static_cast<int>(cfg_.outer.replicas), r);
    return r;
}

Result<StageStepReport> StageExecutor::step(int64_t iteration, const StageIo& io) {
    const int64_t step = iteration + 1;  // the metrics' step
    StageStepReport rep;
    for (auto& p : stage_.model()->parameters()) p.mutable_grad() = torch::Tensor();
    torch::Tensor own = stage_.first() ? loader_of(replica_).batch(iteration) : torch::Tensor();
    std::map<int, torch::Tensor> targets;  // origin replica → its batch (last stage)
    std::vector<uint8_t> in, out, norm_sq;
    double total_sq = 0;
    for (const StageEvent& e : stage_iteration(cfg_, replica_, static_cast<int>(stage_index_), iteration)) {
        const int peer_rank = e.kind == StageEventKind::kCompute ? -1 : peer(e.peer_replica, e.peer_stage);
        if (e.kind == StageEventKind::kRecv) {
            auto r = io.recv(peer_rank);
            if (!r) return r.status();
            if (e.payload != StagePayload::kGradNormSq) {
                in = std::move(*r);
                continue;
            }
            if (r->size() != 8)
                return Status::error("stage " + std::to_string(stage_index_) + ": gradient norm message of " +
                                     std::to_string(r->size()) + " bytes");
            double v;
            std::memcpy(&v, r->data(), 8);
            total_sq += v;
        } else if (e.kind == StageEventKind::kSend) {
            if (e.payload == StagePayload::kGradNormSq && norm_sq.empty()) {
                total_sq = grad_norm_sq();
                norm_sq.resize(8);
                std::memcpy(norm_sq.data(), &total_sq, 8);
            }
            if (Status st = io.send(step, peer_rank, e.payload == StagePayload::kGradNormSq ? norm_sq : out); !st)
                return st;
        } else if (e.optimizer) {
            if (norm_sq.empty()) total_sq = grad_norm_sq();  // a one-stage replica exchanges no norms
            const auto t = Clock::now();
            rep.grad_norm = std::sqrt(total_sq);
            rep.lr = optimizer_step(iteration, rep.grad_norm);
            rep.compute_s += io.compute(step, e, since_s(t));
        } else {
            const auto t = Clock::now();
            auto o = run_op(iteration, e.op, in, own, targets, rep.loss);
            if (!o) return o.status();
            out = std::move(*o);
            rep.compute_s += io.compute(step, e, since_s(t));
        }
    }
    return rep;
}

// A forward (its output: the boundary payload, or nothing on the last stage, which adds the
// micro-batch's loss) or a backward (its output: the gradient payload for the previous stage).
Result<std::vector<uint8_t>> StageExecutor::run_op(int64_t iteration, const PipeOp& op, std::vector<uint8_t>& in,
                                                   torch::Tensor& own, std::map<int, torch::Tensor>& targets,
                                                   double& loss) {
    const int m = static_cast<int>(cfg_.pipeline.micro_batches);
    const int64_t b = cfg_.train.batch_size / m, T = cfg_.model.seq_len;
    const int j = op.micro_batch;
    if (op.kind == PipeOpKind::kBackward) return stage_.backward(j, in, b);
    torch::Tensor ids = stage_.first() ? own.narrow(0, j * b, b).narrow(1, 0, T) : torch::Tensor();
    if (!stage_.last()) return stage_.forward(j, ids, in, b);
    auto& win = targets[origin_replica(iteration, j)];
    if (!win.defined()) win = loader_of(origin_replica(iteration, j)).batch(iteration);
    auto l = stage_.forward_loss(j, ids, in, win.narrow(0, j * b, b).narrow(1, 1, T), b, 1.0 / m);
    if (!l) return l.status();
    loss += *l / m;
    return std::vector<uint8_t>{};
}

double StageExecutor::grad_norm_sq() {
    for (auto& r : reparam_) r.move_grad();
    double sq = 0;
    for (auto& p : stage_.model()->parameters())
        if (p.grad().defined()) sq += p.grad().pow(2).sum().item<double>();
    for (auto& r : reparam_)
        if (r.z.grad().defined()) sq += r.z.grad().pow(2).sum().item<double>();
    return sq;
}

// Clipping by the replica's global norm, AdamW (the shared inner step), then the writers back into
// their subspace: W = U·Z again (`reparam`) or projected (`project`).
double StageExecutor::optimizer_step(int64_t iteration, double grad_norm) {
    const double lr = optim_.set_lr(iteration);
    optim_.clip_to(grad_norm);
    optim_.step();
    if (!reparam_.empty()) {
        for (auto& r : reparam_) r.from_coordinates();
    } else {
        project_();
    }
    return lr;
}

}  // namespace tw
