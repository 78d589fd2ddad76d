// The SkipPipe node's loop; see skippipe_worker.h.
#include "engine/worker/skippipe_worker.h"

#include "engine/worker/final_model_sender.h"

#include <torch/optim/adamw.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>

#include "core/compute_model.h"
#include "core/network.h"
#include "core/metric_names.h"
#include "core/skippipe.h"
#include "engine/worker/node_data.h"
#include "engine/algo/state_hash.h"
#include "engine/data/dataset.h"
#include "engine/model/fused_ops.h"
#include "engine/model/llama.h"
#include "engine/runtime/threads.h"
#include "engine/train/schedule.h"
#include "engine/train/skippipe_step.h"
#include "engine/train/trainer.h"
#include "engine/worker/run_checkpoint.h"
#include "engine/worker/node_summary.h"
#include "engine/worker/node_worker.h"
#include "engine/worker/skippipe_state.h"
#include "engine/worker/worker_recorder.h"
#include "core/config_io.h"

namespace tw {
namespace {

using Clock = WorkerClock;

std::vector<uint8_t> tensor_bytes(const torch::Tensor& t) {
    auto c = t.detach().contiguous();
    const auto* p = static_cast<const uint8_t*>(c.data_ptr());
    return std::vector<uint8_t>(p, p + c.numel() * c.element_size());
}

// The stage's inner optimizer step, kept in one place so it can be swapped: clip every gradient by
// the global norm (torch's clip_grad_norm_ rule, coefficient clip / (norm + 1e-6) when below 1), set
// the learning rate, AdamW. Parameters without a gradient are skipped by AdamW entirely.
void skippipe_inner_step(const std::vector<torch::Tensor>& params, torch::optim::AdamW& optim, double lr,
                         double grad_clip, double global_norm) {
    if (grad_clip > 0) {
        const double coef = grad_clip / (global_norm + 1e-6);
        if (coef < 1)
            for (auto& p : params)
                if (p.grad().defined()) p.grad().mul_(coef);
    }
    for (auto& g : optim.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
    optim.step();
}

// One op of a step's schedule, on node (stage, node).
struct Op {
    int mesh = 0;  // the node's mesh rank n·S + s
    double start = 0, end = 0;
    int depth = 0;  // position in its micro-batch's chain: forwards 0..L−1, head L, backwards L+1..2L
    int path = 0, visit = 0, stage = 0, node = 0;
    char kind = 'F';
    // The op every node runs in: (start, end, depth, path). Dependencies start no earlier than they
    // end plus a transfer, and within a chain depth grows, so this order extends them: executing
    // each node's ops in it cannot deadlock.
    bool operator<(const Op& o) const {
        return std::tie(start, end, depth, path) < std::tie(o.start, o.end, o.depth, o.path);
    }
};

class SkipPipeWorker : public NodeWorker {
public:
    SkipPipeWorker(NodeParts parts, SkipOpObserver observer)
        : NodeWorker(std::move(parts)), observer_(std::move(observer)) {}

    Result<WorkerSummary> run(WorkerControl& ctl, MetricSink& sink) override;

private:
    int S() const { return static_cast<int>(cfg_.skippipe.stages); }
    int N() const { return static_cast<int>(cfg_.skippipe.replicas); }
    int m() const { return static_cast<int>(cfg_.skippipe.micro_batches); }
    int64_t b() const { return cfg_.train.batch_size / cfg_.skippipe.micro_batches; }
    int rank_of(int stage, int node) const { return node * S() + stage; }
    std::vector<int> holders(int stage) const {
        std::vector<int> g;
        for (int n = 0; n < N(); ++n) g.push_back(rank_of(stage, n));
        return g;
    }
    Status setup(WorkerControl& ctl, MetricSink& sink);
    Status stage_times(FwdBwd& block, FwdBwd& head);
    Status train_step(int64_t step, const SkipStepTiming& st, double& compute_s);
    Status sync_and_step(int64_t step, const SkipStepTiming& st, double& grad_norm);
    Status evaluate(int64_t step);
    double eval_path(const std::vector<int64_t>& path, Status& status);
    // Messages of the step's ops: every node knows the whole schedule, hence the order in which each
    // peer sends to it; what arrives early is kept until its op runs.
    Status send_msg(int to, const torch::Tensor& t);
    Result<torch::Tensor> recv_msg(int from, int key, bool requires_grad);
    WorkerSummary summarise() const;
    // Run-scoped checkpoints (run_checkpoint.h) after any step (a SkipPipe step ends with its stage
    // syncs); resuming, the load of role.resume_step's before the stage times are needed: a resumed
    // node schedules with its checkpoint's, not with times measured again.
    Status save_run_checkpoint(int64_t step, MetricSink& sink);
    Status resume_run_checkpoint(MetricSink& sink);
    ByteCounters total_bytes() const { return counters_since(bytes_before_, mesh_->counters()); }

    SkipOpObserver observer_;

    NetworkProfile net_;
    std::shared_ptr<PreparedData> data_;
    std::unique_ptr<WindowLoader> train_, val_;  // stage-0 nodes: the step's N·B windows; node (0, 0): validation
    Llama model_{nullptr};
    std::unique_ptr<torch::optim::AdamW> optim_;
    std::unique_ptr<SkipPipeTiming> timing_;
    ComputeTime compute_;  // measured or modelled op seconds and stage times (core/compute_model.h)
    // Per step: the keys each peer sends this node, in its send order, and what already arrived.
    std::map<int, std::vector<int>> expected_;
    std::map<int, size_t> next_;
    std::map<std::pair<int, int>, std::vector<uint8_t>> early_;
    double sim_s_ = 0, compute_s_ = 0, busy_s_ = 0, last_loss_ = NAN, last_val_ = NAN;
    double iter_sum_s_ = 0, skip_iter_sum_s_ = 0;  // makespans trained on, and SkipPipe's, summed
    std::map<std::string, double> last_paths_;     // val.loss.path_* of the last evaluation
    int64_t step_ = 0;
    FwdBwd block_, head_;  // the stage times every node schedules with
    RunCheckpoints run_ckpt_;
    ByteCounters bytes_before_;
};

Status SkipPipeWorker::setup(WorkerControl& ctl, MetricSink& sink) {
    if (!mesh_) return Status::error(role_.name + ": a SkipPipe run needs the data-plane mesh");
    if (mesh_->size() != S() * N() || mesh_->rank() != rank_of(role_.stage, role_.replica))
        return Status::error(role_.name + ": mesh of " + std::to_string(mesh_->size()) + " members, rank " +
                             std::to_string(mesh_->rank()) + "; SkipPipe needs " + std::to_string(S() * N()) +
                             " with this node at " + std::to_string(rank_of(role_.stage, role_.replica)));
    auto inputs = prepare_node_inputs(cfg_, role_, sink, rec_.wall_s(), 0);  // every node alike: no node speeds
    if (!inputs) return inputs.status();
    net_ = inputs->net, data_ = inputs->data, compute_ = inputs->compute;
    if (set_abort_) set_abort_([&ctl] { return ctl.stop.load(); });
    configure_compute_threads(static_cast<int>(cfg_.run.threads));
    const uint64_t seed = static_cast<uint64_t>(cfg_.run.seed);
    model_ = Llama(cfg_.model, seed, skippipe_stage_spec(cfg_.model, role_.stage, S()));
    optim_ = make_adamw(model_, cfg_.train);
    if (role_.stage == 0)  // the one-process form's loader: stage-0 node n takes rows [n·B, (n+1)·B)
        train_ = std::make_unique<WindowLoader>(data_->train, select_spans(*data_, false, cfg_.data.genres),
                                                cfg_.model.seq_len, N() * cfg_.train.batch_size, seed);
    if (mesh_->rank() == 0)
        val_ = std::make_unique<WindowLoader>(data_->val, select_spans(*data_, true, cfg_.data.genres),
                                              cfg_.model.seq_len, cfg_.train.batch_size, seed);
    if (Status st = resume_run_checkpoint(sink); !st) return st;
    if (!run_ckpt_.resuming())
        if (Status st = stage_times(block_, head_); !st) return st;
    const FwdBwd block = block_, head = head_;
    auto timing = SkipPipeTiming::create(cfg_, net_, block, head);
    if (!timing) return timing.status();
    timing_ = std::make_unique<SkipPipeTiming>(std::move(*timing));
    // Same seed → same stage weights on every holder; compared as framing, not counted.
    if (Status st = mesh_->agree(holders(role_.stage), state_hash(model_->parameters())); !st)
        return Status::error("stage " + std::to_string(role_.stage) + " starts from other weights: " + st.message());
    if (mesh_->rank() == 0 && !run_ckpt_.resuming()) {  // a resumed run has these rows of step 0
        const SkipPipeProblem& p = timing_->problem();
        rec_.record(0, metric::kSkipPipeBlockFwdS, block.fwd_s);
        rec_.record(0, metric::kSkipPipeBlockBwdS, block.bwd_s);
        rec_.record(0, metric::kSkipPipeHeadFwdS, head.fwd_s);
        rec_.record(0, metric::kSkipPipeHeadBwdS, head.bwd_s);
        rec_.record(0, metric::kSkipPipeHeadFraction, p.head_fraction);
        rec_.record(0, metric::kSkipPipeTransferS, p.transfer_s);
        char text[256];
        std::snprintf(text, sizeof text,
                      "per micro-batch (%lld×%lld tokens), ms: block %.2f + %.2f, head op %.2f + %.2f (%s); head "
                      "share %.2f; hop %.2f ms",
                      (long long)b(), (long long)cfg_.model.seq_len, 1e3 * block.fwd_s, 1e3 * block.bwd_s,
                      1e3 * head.fwd_s, 1e3 * head.bwd_s,
                      compute_.modelled() ? "compute model"
                      : cfg_.skippipe.block_s.empty() || cfg_.skippipe.head_s.empty() ? "measured by this node" : "given",
                      p.head_fraction, 1e3 * p.transfer_s);
        rec_.info("skippipe.times", text);
    }
    rec_.info("start", role_.name + " starts: SkipPipe stage " + std::to_string(role_.stage) + " of " +
                           std::to_string(S()) + " for replica " + std::to_string(role_.replica) + ", " +
                           std::to_string(model_->num_parameters()) + " parameters");
    return Status::ok();
}

// The two compute times the schedules are built from: the compute model's (compute.model = "flops"),
// pinned by the section, or measured by node (0, 0) on its stage-0 module and sent to every other node
// (32 bytes, uncounted: set-up), so every node schedules with the very same numbers.
Status SkipPipeWorker::stage_times(FwdBwd& block, FwdBwd& head) {
    const auto& k = cfg_.skippipe;
    if (compute_.modelled()) {  // every node computes the same times: nothing to send
        block = compute_.skip_block(), head = compute_.skip_head();
        return Status::ok();
    }
    std::optional<FwdBwd> block_given, head_given;
    if (!k.block_s.empty()) block_given = FwdBwd{k.block_s[0], k.block_s[1]};
    if (!k.head_s.empty()) head_given = FwdBwd{k.head_s[0], k.head_s[1]};
    if (block_given && head_given) {
        block = *block_given, head = *head_given;
        return Status::ok();
    }
    if (mesh_->rank() == 0) {
        const SkipStageTimes st = measure_stage_times(cfg_.model, static_cast<uint64_t>(cfg_.run.seed), model_,
                                                      train_->batch(0).narrow(0, 0, b()), S(), block_given, head_given);
        block = st.block, head = st.head;
        std::vector<uint8_t> msg(32);
        const double v[4] = {block.fwd_s, block.bwd_s, head.fwd_s, head.bwd_s};
        std::memcpy(msg.data(), v, 32);
        for (int r = 1; r < mesh_->size(); ++r)
            if (Status st2 = mesh_->send(r, msg, LinkClass::kInterStage, 0, false); !st2) return st2;
        return Status::ok();
    }
    auto msg = mesh_->recv(0);
    if (!msg) return msg.status();
    double v[4];
    if (msg->size() != 32) return Status::error(role_.name + ": stage times of " + std::to_string(msg->size()) + " bytes, expected 32");
    std::memcpy(v, msg->data(), 32);
    for (double x : v)
        if (!std::isfinite(x) || x < 0) return Status::error(role_.name + ": node 0 sent a stage time that is negative or not finite");
    block = {v[0], v[1]}, head = {v[2], v[3]};
    return Status::ok();
}

Status SkipPipeWorker::send_msg(int to, const torch::Tensor& t) {
    return mesh_->send(to, tensor_bytes(t), LinkClass::kInterStage, sim_s_);
}

Result<torch::Tensor> SkipPipeWorker::recv_msg(int from, int key, bool requires_grad) {
    const std::pair<int, int> want{from, key};
    while (!early_.count(want)) {
        auto& list = expected_[from];
        size_t& i = next_[from];
        if (i >= list.size())
            return Status::error(role_.name + ": waiting for message " + std::to_string(key) + " from mesh member " +
                                 std::to_string(from) + ", which sends nothing more this step");
        auto m = mesh_->recv(from);
        if (!m) return m.status();
        early_[{from, list[i++]}] = std::move(*m);
    }
    std::vector<uint8_t> bytes = std::move(early_[want]);
    early_.erase(want);
    const int64_t T = cfg_.model.seq_len, d = cfg_.model.d_model;
    if (bytes.size() != static_cast<size_t>(b() * T * d) * sizeof(float))
        return Status::error(role_.name + ": a message of " + std::to_string(bytes.size()) + " bytes from mesh member " +
                             std::to_string(from) + ", expected [" + std::to_string(b()) + ", " + std::to_string(T) +
                             ", " + std::to_string(d) + "] fp32");
    auto t = torch::empty({b(), T, d});
    std::memcpy(t.data_ptr<float>(), bytes.data(), bytes.size());
    return requires_grad ? t.requires_grad_(true) : t;
}

// This node's ops of one step, in the schedule's order.
Status SkipPipeWorker::train_step(int64_t step, const SkipStepTiming& st, double& compute_s) {
    const SkipSchedule& sched = st.schedule;
    const int L = static_cast<int>(sched.paths.front().visits.size()), me = mesh_->rank();
    // Every op of the step; a message is keyed by (path, depth of the op that receives it).
    std::vector<Op> ops;
    for (size_t k = 0; k < sched.paths.size(); ++k) {
        const SkipPath& p = sched.paths[k];
        for (int i = 0; i < L; ++i) {
            const SkipVisit& v = p.visits[static_cast<size_t>(i)];
            ops.push_back({rank_of(v.stage, v.node), v.fwd_start_s, v.fwd_end_s, i, static_cast<int>(k), i, v.stage, v.node, 'F'});
            ops.push_back({rank_of(v.stage, v.node), v.bwd_start_s, v.bwd_end_s, 2 * L - i, static_cast<int>(k), i, v.stage, v.node, 'B'});
        }
        ops.push_back({rank_of(0, p.replica), p.head_start_s, p.head_end_s, L, static_cast<int>(k), L, 0, p.replica, 'H'});
    }
    std::sort(ops.begin(), ops.end());
    auto node_of = [&](int k, int visit) {  // visit L: the head on the path's stage-0 node
        const SkipPath& p = sched.paths[static_cast<size_t>(k)];
        return visit == L ? rank_of(0, p.replica) : rank_of(p.visits[static_cast<size_t>(visit)].stage, p.visits[static_cast<size_t>(visit)].node);
    };
    // Where an op's output goes and at which depth it is consumed; -1 = nowhere.
    auto target = [&](const Op& o) -> std::pair<int, int> {
        if (o.kind == 'F') return {node_of(o.path, o.visit + 1), o.depth + 1};  // the next visit, or the head
        if (o.kind == 'H') return {node_of(o.path, L - 1), o.depth + 1};
        if (o.visit > 0) return {node_of(o.path, o.visit - 1), o.depth + 1};
        return {-1, -1};
    };
    expected_.clear(), next_.clear(), early_.clear();
    for (const Op& o : ops) {
        auto [to, depth] = target(o);
        if (to == me) expected_[o.mesh].push_back(o.path * (2 * L + 1) + depth);
    }

    for (auto& p : model_->parameters()) p.mutable_grad() = torch::Tensor();
    const double scale = 1.0 / static_cast<double>(N() * m());  // the step's mean over all N·m micro-batches
    const int64_t T = cfg_.model.seq_len;
    torch::Tensor batch = role_.stage == 0 ? train_->batch(step) : torch::Tensor();
    struct Held {
        torch::Tensor x, h;  // the visit's input (undefined on stage 0: token ids) and output
    };
    std::map<int, Held> held;  // by path
    double loss_sum = 0;
    for (const Op& o : ops) {
        if (o.mesh != me) continue;
        const int key = o.path * (2 * L + 1) + o.depth;
        auto [to, to_depth] = target(o);
        (void)to_depth;
        const int from = o.depth == 0 ? -1 : o.kind == 'B' && o.visit == L - 1 ? node_of(o.path, L)
                                          : o.kind == 'B' ? node_of(o.path, o.visit + 1)
                                          : o.kind == 'H' ? node_of(o.path, L - 1)
                                                          : node_of(o.path, o.visit - 1);
        torch::Tensor in;
        if (from >= 0) {
            auto r = recv_msg(from, key, o.kind != 'B');
            if (!r) return r.status();
            in = std::move(*r);
        }
        const auto t = Clock::now();
        torch::Tensor out;
        if (o.kind == 'F') {
            Held& hd = held[o.path];
            if (o.visit == 0) {
                hd.h = model_->forward_blocks(batch.narrow(0, o.path * b(), b()).narrow(1, 0, T));
            } else {
                hd.x = in;
                hd.h = model_->forward_blocks(in);
            }
            out = hd.h.detach();
        } else if (o.kind == 'H') {
            auto logits = model_->forward_head(in);
            auto targets = batch.narrow(0, o.path * b(), b()).narrow(1, 1, T);
            auto loss = fused::cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}));
            (loss * scale).backward();
            loss_sum += loss.item<double>();
            out = in.grad();
        } else {
            Held& hd = held[o.path];
            hd.h.backward(in);
            if (o.visit > 0) out = hd.x.grad();
            held.erase(o.path);
        }
        const double c = compute_.skip_op(o.kind, o.stage, seconds_since(t));  // measured, or modelled (flops)
        compute_s += c;
        busy_s_ += o.end - o.start;
        if (observer_) observer_({step, o.path, o.visit, o.stage, o.node, o.kind});  // before its output leaves
        if (to >= 0)
            if (Status s = send_msg(to, out); !s) return s;
    }
    for (auto& [from, list] : expected_)
        if (next_[from] != list.size() || !early_.empty())
            return Status::error(role_.name + ": step " + std::to_string(step) + " left messages unused");
    if (role_.stage == 0) last_loss_ = loss_sum / m();  // this replica's m micro-batches
    return Status::ok();
}

// The N holders of each visited stage sum its gradients (all-gather over the intra-replica link, the
// sum in node order, so every holder gets the same bits); the squared norms go round the replica's
// stages (8 B each on the stage link); then the inner step.
Status SkipPipeWorker::sync_and_step(int64_t step, const SkipStepTiming& st, double& grad_norm) {
    auto params = model_->parameters();
    const bool visited = st.visited[static_cast<size_t>(role_.stage)] != 0;
    if (!visited) {
        // No path reached this stage on any node: no gradient, no step; join the mesh round alone.
        if (Status s = mesh_->exchange({mesh_->rank()}, {}, LinkClass::kIntraReplica).status(); !s) return s;
    } else {
        int64_t total = 0;
        for (auto& p : params) total += p.numel();
        auto flat = torch::zeros({total});
        int64_t off = 0;
        for (auto& p : params) {
            if (p.grad().defined()) flat.narrow(0, off, p.numel()).copy_(p.grad().reshape({-1}));
            off += p.numel();
        }
        auto all = mesh_->exchange(holders(role_.stage), tensor_bytes(flat), LinkClass::kIntraReplica, sim_s_);
        if (!all) return all.status();
        auto sum = torch::zeros({total});
        for (size_t n = 0; n < all->size(); ++n) {
            if ((*all)[n].size() != static_cast<size_t>(total) * sizeof(float))
                return Status::error(role_.name + ": stage " + std::to_string(role_.stage) + " gradients of " +
                                     std::to_string((*all)[n].size()) + " bytes from holder " + std::to_string(n) +
                                     ", expected " + std::to_string(total * 4));
            auto part = torch::empty({total});
            std::memcpy(part.data_ptr<float>(), (*all)[n].data(), (*all)[n].size());
            sum.add_(part);  // elementwise, in node order: the same bits on every holder
        }
        off = 0;
        for (auto& p : params) {
            p.mutable_grad() = sum.narrow(0, off, p.numel()).view(p.sizes()).clone();
            off += p.numel();
        }
    }
    double sq = 0;
    for (auto& p : params)
        if (p.grad().defined()) sq += p.grad().pow(2).sum().item<double>();
    std::vector<uint8_t> mine(8);
    std::memcpy(mine.data(), &sq, 8);
    for (int s = 0; s < S(); ++s)
        if (s != role_.stage)
            if (Status e = mesh_->send(rank_of(s, role_.replica), mine, LinkClass::kInterStage, sim_s_); !e) return e;
    double total_sq = 0;
    for (int s = 0; s < S(); ++s) {  // in stage order, so every node of every replica gets the same sum
        double v = sq;
        if (s != role_.stage) {
            auto r = mesh_->recv(rank_of(s, role_.replica));
            if (!r) return r.status();
            if (r->size() != 8 || (std::memcpy(&v, r->data(), 8), !(v >= 0) || !std::isfinite(v)))
                return Status::error(role_.name + ": stage " + std::to_string(s) + " sent a gradient norm that is not a finite square");
        }
        total_sq += v;
    }
    grad_norm = std::sqrt(total_sq);
    const auto& tc = cfg_.train;
    if (visited)
        skippipe_inner_step(params, *optim_, lr_at(step, tc.steps, tc.lr, tc.warmup_steps, tc.min_lr_frac),
                            tc.grad_clip, grad_norm);
    // Every holder of the stage must now hold the same weights (framing, not counted).
    if (Status s = mesh_->agree(holders(role_.stage), state_hash(params)); !s)
        return Status::error("stage " + std::to_string(role_.stage) + " after step " + std::to_string(step + 1) + ": " + s.message());
    return Status::ok();
}

// One path of replica 0's nodes over the validation batches (no gradients; uncounted messages).
// Returns the mean loss on node (0, 0), 0 elsewhere.
double SkipPipeWorker::eval_path(const std::vector<int64_t>& path, Status& status) {
    torch::NoGradGuard no_grad;
    const int me = mesh_->rank();
    const int64_t T = cfg_.model.seq_len, B = cfg_.train.batch_size, d = cfg_.model.d_model;
    const auto pos = std::find(path.begin(), path.end(), role_.stage) - path.begin();
    if (role_.replica != 0 || pos == static_cast<long>(path.size())) return 0;
    auto node = [&](size_t q) { return q < path.size() ? rank_of(static_cast<int>(path[q]), 0) : 0; };
    auto recv = [&](int from) -> torch::Tensor {
        auto m = mesh_->recv(from);
        if (!m) return status = m.status(), torch::Tensor();
        if (m->size() != static_cast<size_t>(B * T * d) * 4) {
            status = Status::error(role_.name + ": evaluation activations of " + std::to_string(m->size()) + " bytes");
            return {};
        }
        auto t = torch::empty({B, T, d});
        std::memcpy(t.data_ptr<float>(), m->data(), m->size());
        return t;
    };
    double sum = 0;
    for (int64_t i = 0; i < cfg_.train.eval_batches && status.is_ok(); ++i) {
        if (me == 0) {
            auto win = val_->sequential_batch(i);
            torch::Tensor h = model_->forward_blocks(win.narrow(1, 0, T));
            if (path.size() > 1) {
                if (Status s = mesh_->send(node(1), tensor_bytes(h), LinkClass::kInterStage, 0, false); !s) return status = s, 0;
                h = recv(node(path.size() - 1));
                if (!status.is_ok()) return 0;
            }
            auto logits = model_->forward_head(h);
            sum += fused::cross_entropy(logits.reshape({-1, logits.size(-1)}), win.narrow(1, 1, T).reshape({-1}))
                       .item<double>();
        } else {
            torch::Tensor x = recv(node(static_cast<size_t>(pos) - 1));
            if (!status.is_ok()) return 0;
            if (Status s = mesh_->send(node(static_cast<size_t>(pos) + 1), tensor_bytes(model_->forward_blocks(x)),
                                       LinkClass::kInterStage, 0, false);
                !s)
                return status = s, 0;
        }
    }
    return sum / static_cast<double>(cfg_.train.eval_batches);
}

std::string path_metric(const std::vector<int64_t>& p) {
    std::string s = std::string(metric::kValLossPathPrefix) + "path";
    for (int64_t x : p) s += "_" + std::to_string(x);
    return s;
}

Status SkipPipeWorker::evaluate(int64_t step) {
    std::vector<int64_t> in_order(static_cast<size_t>(S()));
    for (int s = 0; s < S(); ++s) in_order[static_cast<size_t>(s)] = s;
    Status status;
    const double full = eval_path(in_order, status);
    if (mesh_->rank() == 0 && status.is_ok()) last_val_ = full, rec_.record(step, metric::kValLoss, full);
    for (const auto& p : cfg_.skippipe.eval_paths) {
        const double v = eval_path(p, status);
        if (mesh_->rank() == 0 && status.is_ok()) rec_.record(step, path_metric(p), v), last_paths_[path_metric(p)] = v;
    }
    return status;
}

Status SkipPipeWorker::save_run_checkpoint(int64_t step, MetricSink& sink) {
    NodeProgress p;
    p.step = step;
    p.clock.now_s = sim_s_, p.clock.compute_s = compute_s_;  // SkipPipe's clock is these two sums
    p.bytes = total_bytes();
    p.last_loss = last_loss_, p.last_val = last_val_;
    SkipPipeNodeState state{busy_s_, iter_sum_s_, skip_iter_sum_s_, block_, head_, last_paths_};
    return save_and_report_checkpoint(run_ckpt_, p, *model_, *optim_, save_skippipe_state(state), config_hash(cfg_),
                                      role_.name, rec_.wall_s(), rec_.recorder(), sink);
}

Status SkipPipeWorker::resume_run_checkpoint(MetricSink& sink) {
    run_ckpt_ = RunCheckpoints(cfg_, role_);
    if (!run_ckpt_.resuming()) return Status::ok();
    auto loaded = run_ckpt_.load(*model_, *optim_);
    if (!loaded) return Status::error(role_.name + ": resume: " + loaded.message());
    std::vector<std::string> path_metrics;
    for (const auto& p : cfg_.skippipe.eval_paths) path_metrics.push_back(path_metric(p));
    auto state = load_skippipe_state(loaded->outer_state, path_metrics);
    if (!state) return Status::error(role_.name + ": resume: " + loaded->path + ": " + state.message());
    const NodeProgress& p = loaded->progress;
    step_ = p.step;
    sim_s_ = p.clock.now_s, compute_s_ = p.clock.compute_s;
    busy_s_ = state->busy_s, iter_sum_s_ = state->iter_sum_s, skip_iter_sum_s_ = state->skip_iter_sum_s;
    block_ = state->block, head_ = state->head;
    last_paths_ = state->paths;
    bytes_before_ = p.bytes;
    last_loss_ = p.last_loss, last_val_ = p.last_val;
    rec_.info("resume", "resumed from " + loaded->path + " at step " + std::to_string(p.step));
    return Status::ok();
}

Result<WorkerSummary> SkipPipeWorker::run(WorkerControl& ctl, MetricSink& sink) {
    rec_.attach(sink);
    rec_.stamp_with([this] { return sim_s_; }, nullptr);
    if (Status st = setup(ctl, sink); !st) return st;
    ctl.step = step_;  // a resumed node starts where its checkpoint stands
    const int64_t steps = cfg_.train.steps;
    const double tokens = static_cast<double>(N() * cfg_.train.batch_size * cfg_.model.seq_len);
    Status failure;
    bool stopped = false;
    while (step_ < steps) {
        if (!ctl.wait_while_paused()) {
            stopped = true;
            break;
        }
        const auto t_step = Clock::now();
        auto st = timing_->step(step_);
        if (!st) {
            failure = st.status();
            break;
        }
        double compute = 0, grad_norm = NAN;
        failure = train_step(step_, *st, compute);
        if (failure.is_ok()) failure = sync_and_step(step_, *st, grad_norm);
        if (!failure.is_ok()) break;
        const double wall = seconds_since(t_step);
        ++step_;
        sim_s_ += st->iter_s + st->sync_s;  // as skippipe_clocks replays it
        iter_sum_s_ += st->iter_s, skip_iter_sum_s_ += st->skip.makespan_s;
        compute_s_ += compute;
        rec_.record(step_, metric::kTrainComputeS, compute);
        if (compute_.modelled()) rec_.record(step_, metric::kTrainRealComputeS, compute_.take_measured_s());
        if (role_.stage == 0) {
            rec_.record(step_, metric::kTrainLoss, last_loss_);
            rec_.record(step_, metric::kTrainGradNorm, grad_norm);
        }
        if (mesh_->rank() == 0) {
            const auto& tc = cfg_.train;
            rec_.record(step_, metric::kTrainLr, lr_at(step_ - 1, tc.steps, tc.lr, tc.warmup_steps, tc.min_lr_frac));
            rec_.record(step_, metric::kTrainTokens, tokens * static_cast<double>(step_));
            rec_.record(step_, metric::kTrainTokensPerS, tokens / wall);
            rec_.record(step_, metric::kSkipPipeIterS, st->iter_s);
            rec_.record(step_, metric::kSkipPipeSkipIterS, st->skip.makespan_s);
            rec_.record(step_, metric::kSkipPipeFullIterS, timing_->full_schedule().makespan_s);
            rec_.record(step_, metric::kSkipPipeMaxHeld, st->schedule.max_held);
            rec_.record(step_, metric::kSkipPipeSyncS, st->sync_s);
        }
        rec_.record_bytes(step_, total_bytes());
        const bool periodic = cfg_.train.eval_every > 0 && step_ % cfg_.train.eval_every == 0;
        if (periodic || step_ == steps)
            if (Status e = evaluate(step_); !e) {
                failure = e;
                break;
            }
        if (step_ < steps && run_ckpt_.due(step_, true))
            if (Status st2 = save_run_checkpoint(step_, sink); !st2) {
                failure = st2;
                break;
            }
        ctl.step = step_;
        rec_.flush();
    }
    if (Status st = end_training_loop(failure, stopped, step_, ctl, run_ckpt_,
                                      [&](int64_t step) { return save_run_checkpoint(step, sink); });
        !st)
        return st;
    // The run's model: node 0's holder of each stage sends its stage (the stage syncs keep every
    // holder of a stage alike).
    if (mesh_->rank() == rank_of(static_cast<int>(role_.stage), 0) && step_ > 0) {
        send_final_model(sink, role_.name, *model_, data_.get());
    }
    return summarise();
}

WorkerSummary SkipPipeWorker::summarise() const {
    NodeSummary out;
    out.steps = step_;
    out.sim_s = sim_s_, out.compute_s = compute_s_;
    // the schedule's busy time of this node against the clock: bubbles, hops and syncs are idle
    out.utilisation = busy_s_ / std::max(1e-12, sim_s_);
    out.wall_s = rec_.wall_s();
    if (role_.stage == 0) out.train_loss = last_loss_;
    if (mesh_->rank() == 0) out.val_loss = last_val_;
    out.bytes = total_bytes();
    WorkerSummary summary = to_worker_summary(out);
    if (mesh_->rank() == 0) {
        for (auto& [name, v] : last_paths_) summary[name] = v;
        const double n = static_cast<double>(std::max<int64_t>(1, step_));
        summary[metric::kSkipPipeMeanIterS] = iter_sum_s_ / n;
        summary[metric::kSkipPipeMeanSkipIterS] = skip_iter_sum_s_ / n;
        summary[metric::kSkipPipeFullIterS] = timing_ ? timing_->full_schedule().makespan_s : NAN;
    }
    return summary;
}

}  // namespace

std::unique_ptr<Worker> make_skippipe_worker(const RunConfig& cfg, const NodeRole& role,
                                             std::unique_ptr<Collective> mesh,
                                             std::function<void(std::function<bool()>)> set_abort,
                                             SkipOpObserver observer) {
    return std::make_unique<SkipPipeWorker>(NodeParts{cfg, role, std::move(mesh), std::move(set_abort)}, std::move(observer));
}

}  // namespace tw
