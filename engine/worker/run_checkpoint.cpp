// Run-scoped checkpoints; see run_checkpoint.h.
#include "engine/worker/run_checkpoint.h"

#include "core/metric_names.h"

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

namespace tw {
namespace {

namespace fs = std::filesystem;

// The progress travels as tensors beside the outer state: names under "node/", the outer
// algorithm's under "outer/" (its own names may hold dots and slashes).
constexpr const char* kOuterPrefix = "outer/";

NamedTensors progress_tensors(const NodeProgress& p) {
    const auto& c = p.clock;
    std::vector<int64_t> due_steps;
    std::vector<double> due_ends;
    for (auto& [step, end] : c.due) due_steps.push_back(step), due_ends.push_back(end);
    std::vector<int64_t> bytes;
    for (const uint64_t* a : {p.bytes.sent_bytes, p.bytes.recv_bytes, p.bytes.sent_msgs, p.bytes.recv_msgs})
        for (int k = 0; k < 3; ++k) bytes.push_back(static_cast<int64_t>(a[k]));
    auto f64 = [](std::vector<double> v) { return torch::tensor(v, torch::kFloat64); };
    auto i64 = [](std::vector<int64_t> v) { return torch::tensor(v, torch::kInt64); };
    return {{"node/step", i64({p.step})},
            {"node/outer_step", i64({p.outer_step})},
            {"node/clock", f64({c.now_s, c.compute_s, c.exposed_s, c.sync_exposed_s, c.uplink_free_s})},
            {"node/clock_due_steps", i64(due_steps)},
            {"node/clock_due_ends", f64(due_ends)},
            {"node/bytes", i64(bytes)},
            {"node/losses", f64({p.last_loss, p.last_val})},
            {"node/recovery", i64({static_cast<int64_t>(p.recovery_sent), static_cast<int64_t>(p.recovery_recv)})}};
}

Result<NodeProgress> progress_from(const NamedTensors& extra, const std::string& path) {
    std::map<std::string, torch::Tensor> by;
    for (auto& [k, t] : extra) by[k] = t;
    auto get = [&](const char* name, torch::ScalarType type, int64_t n) -> Result<torch::Tensor> {
        auto it = by.find(name);
        if (it == by.end() || it->second.scalar_type() != type || (n >= 0 && it->second.numel() != n))
            return Result<torch::Tensor>::error("checkpoint " + path + " is not a node checkpoint of a run: " + name +
                                                " missing or malformed");
        return it->second.contiguous();
    };
    NodeProgress p;
    auto step = get("node/step", torch::kInt64, 1), outer = get("node/outer_step", torch::kInt64, 1);
    auto clock = get("node/clock", torch::kFloat64, 5), due_s = get("node/clock_due_steps", torch::kInt64, -1);
    auto due_e = get("node/clock_due_ends", torch::kFloat64, -1), bytes = get("node/bytes", torch::kInt64, 12);
    auto losses = get("node/losses", torch::kFloat64, 2);
    for (auto* r : {&step, &outer, &clock, &due_s, &due_e, &bytes, &losses})
        if (!*r) return r->status();
    if (due_s->numel() != due_e->numel())
        return Result<NodeProgress>::error("checkpoint " + path + ": clock's due steps and ends differ in length");
    p.step = step->item<int64_t>();
    p.outer_step = outer->item<int64_t>();
    const double* c = clock->data_ptr<double>();
    p.clock = {c[0], c[1], c[2], c[3], c[4], {}};
    for (int64_t i = 0; i < due_s->numel(); ++i)
        p.clock.due.emplace_back(due_s->data_ptr<int64_t>()[i], due_e->data_ptr<double>()[i]);
    const int64_t* b = bytes->data_ptr<int64_t>();
    uint64_t* arrays[] = {p.bytes.sent_bytes, p.bytes.recv_bytes, p.bytes.sent_msgs, p.bytes.recv_msgs};
    for (int a = 0; a < 4; ++a)
        for (int k = 0; k < 3; ++k) arrays[a][k] = static_cast<uint64_t>(b[a * 3 + k]);
    p.last_loss = losses->data_ptr<double>()[0];
    p.last_val = losses->data_ptr<double>()[1];
    if (by.count("node/recovery")) {  // optional: files written before it was saved have none
        auto rec = get("node/recovery", torch::kInt64, 2);
        if (!rec) return rec.status();
        const int64_t* r = rec->data_ptr<int64_t>();
        if (r[0] < 0 || r[1] < 0)
            return Result<NodeProgress>::error("checkpoint " + path + ": node/recovery holds a negative byte count");
        p.recovery_sent = static_cast<uint64_t>(r[0]), p.recovery_recv = static_cast<uint64_t>(r[1]);
    }
    return p;
}

}  // namespace

RunCheckpoints::RunCheckpoints(const RunConfig& cfg, const NodeRole& role)
    : node_(role.name), every_(cfg.train.ckpt_every), resume_step_(role.resume_step) {
    if (!role.checkpoint_run.empty() && !cfg.data.cache_dir.empty())
        dir_ = (fs::path(cfg.data.cache_dir) / "checkpoints" / role.checkpoint_run).string();
    if (every_ > 0) schedule_after(0);
}

std::string RunCheckpoints::path_of(int64_t step) const {
    return (fs::path(dir_) / (node_ + ".step-" + std::to_string(step) + ".ckpt")).string();
}

Result<RunCheckpoints::Written> RunCheckpoints::save(const NodeProgress& p, torch::nn::Module& model,
                                                     torch::optim::Optimizer& optim, const NamedTensors& outer_state,
                                                     const std::string& config_hash) {
    using R = Result<Written>;
    const auto t0 = std::chrono::steady_clock::now();
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) return R::error("checkpoint folder " + dir_ + ": " + ec.message());
    NamedTensors extra = progress_tensors(p);
    for (auto& [name, t] : outer_state) extra.emplace_back(kOuterPrefix + name, t);
    Written w;
    w.path = path_of(p.step);
    if (Status s = save_checkpoint(w.path, model, optim, {p.step, config_hash}, extra); !s) return s;
    w.write_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    w.bytes = static_cast<int64_t>(fs::file_size(w.path, ec));
    last_step_ = p.step;
    schedule_after(p.step);
    prune();
    return w;
}

Result<RunCheckpoints::Loaded> RunCheckpoints::load(torch::nn::Module& model, torch::optim::Optimizer& optim) {
    using R = Result<Loaded>;
    Loaded out;
    out.path = path_of(resume_step_);
    if (!fs::exists(out.path))
        return R::error("no checkpoint " + out.path + " of step " + std::to_string(resume_step_) +
                        " on this node (each node keeps its " + std::to_string(kKeep) + " newest)");
    NamedTensors extra;
    auto meta = load_checkpoint(out.path, model, optim, &extra);
    if (!meta) return meta.status();
    auto progress = progress_from(extra, out.path);
    if (!progress) return progress.status();
    if (progress->step != resume_step_ || meta->step != resume_step_)
        return R::error("checkpoint " + out.path + " holds step " + std::to_string(progress->step) + ", not " +
                        std::to_string(resume_step_));
    out.progress = *progress;
    const std::string prefix = kOuterPrefix;
    for (auto& [name, t] : extra)
        if (name.rfind(prefix, 0) == 0) out.outer_state.emplace_back(name.substr(prefix.size()), t);
    last_step_ = resume_step_;
    schedule_after(resume_step_);
    return out;
}

void RunCheckpoints::prune() const {
    // This node's files by step, newest first; the ones past kKeep go (a failure to delete is harmless).
    const std::string head = node_ + ".step-", tail = ".ckpt";
    std::vector<std::pair<int64_t, fs::path>> mine;
    std::error_code ec;
    for (auto it = fs::directory_iterator(dir_, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.size() <= head.size() + tail.size() || name.rfind(head, 0) != 0 ||
            name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
            continue;
        const std::string digits = name.substr(head.size(), name.size() - head.size() - tail.size());
        if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
        mine.emplace_back(std::stoll(digits), it->path());
    }
    std::sort(mine.begin(), mine.end(), [](auto& a, auto& b) { return a.first > b.first; });
    for (size_t i = kKeep; i < mine.size(); ++i) fs::remove(mine[i].second, ec);
}

Status save_and_report_checkpoint(RunCheckpoints& ckpts, const NodeProgress& p, torch::nn::Module& model,
                                  torch::optim::Optimizer& optim, const NamedTensors& outer_state,
                                  const std::string& config_hash, const std::string& node, double at_s,
                                  const std::function<void(int64_t, const std::string&, double)>& record,
                                  MetricSink& sink) {
    auto w = ckpts.save(p, model, optim, outer_state, config_hash);
    if (!w) return Status::error(node + ": checkpoint: " + w.message());
    record(p.step, metric::kCkptBytes, static_cast<double>(w->bytes));
    record(p.step, metric::kCkptWriteS, w->write_s);
    sink.event({at_s, node, EventLevel::kInfo, "checkpoint",
                "step " + std::to_string(p.step) + " -> " + w->path + " (" + std::to_string(w->bytes) + " B in " +
                    std::to_string(w->write_s) + " s)"});
    return Status::ok();
}

}  // namespace tw
