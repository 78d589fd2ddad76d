// Streaming DiLoCo, arXiv 2501.18512: fragments synced round robin, overlapped by τ steps, quantised on the wire.
#include "engine/algo/streaming_diloco.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/assert.h"
#include "core/wire_dtype.h"
#include "engine/algo/aggregation_guard.h"
#include "engine/algo/ring_allreduce.h"

namespace tw {
namespace {

// The global layer index of a `block_<L>.*` name, or −1.
int64_t layer_of(const std::string& name) {
    static const std::string kPrefix = "block_";
    if (name.compare(0, kPrefix.size(), kPrefix) != 0) return -1;
    const size_t dot = name.find('.', kPrefix.size());
    if (dot == std::string::npos || dot == kPrefix.size()) return -1;
    int64_t l = 0;
    for (size_t i = kPrefix.size(); i < dot; ++i) {
        if (name[i] < '0' || name[i] > '9') return -1;
        l = l * 10 + (name[i] - '0');
    }
    return l;
}

}  // namespace

Result<std::vector<int>> assign_fragments(const std::vector<std::string>& names, int64_t fragments,
                                          FragmentOrder order) {
    using R = Result<std::vector<int>>;
    if (fragments < 1) return R::error("streaming_diloco: outer.fragments must be at least 1");
    if (fragments == 1) return std::vector<int>(names.size(), 0);
    // Positions of the distinct layers present (a pipeline stage holds a contiguous slice of them).
    std::map<int64_t, int64_t> position;
    for (auto& n : names)
        if (int64_t l = layer_of(n); l >= 0) position.emplace(l, 0);
    int64_t j = 0;
    for (auto& [layer, pos] : position) pos = j++;
    const int64_t L = static_cast<int64_t>(position.size());
    if (fragments > L)
        return R::error("streaming_diloco: outer.fragments " + std::to_string(fragments) + " exceeds the " +
                        std::to_string(L) + " layers of the model");
    const int64_t base = L / fragments, extra = L % fragments;
    auto fragment_at = [&](int64_t pos) -> int {
        if (order == FragmentOrder::kStrided) return static_cast<int>(pos % fragments);
        // Sequential: contiguous runs, earlier fragments taking the remainder (as stage_spec does).
        const int64_t cut = extra * (base + 1);
        return static_cast<int>(pos < cut ? pos / (base + 1) : extra + (pos - cut) / base);
    };
    std::vector<int> out;
    for (auto& n : names) {
        if (int64_t l = layer_of(n); l >= 0)
            out.push_back(fragment_at(position[l]));
        else if (n == "tok_emb")
            out.push_back(fragment_at(0));
        else if (n == "norm_f" || n == "head")
            out.push_back(fragment_at(L - 1));
        else
            return R::error("streaming_diloco: parameter \"" + n +
                            "\" belongs to no fragment (expected block_<L>.*, "
                            "tok_emb, norm_f or head)");
    }
    return out;
}

Result<std::unique_ptr<StreamingDiLoCo>> StreamingDiLoCo::create(std::vector<torch::Tensor> params,
                                                                 const std::vector<std::string>& names,
                                                                 StreamingDiLoCoConfig cfg, int replica, int replicas) {
    using R = Result<std::unique_ptr<StreamingDiLoCo>>;
    if (names.size() != params.size())
        return R::error("streaming_diloco: " + std::to_string(names.size()) + " names for " +
                        std::to_string(params.size()) + " parameters");
    if (cfg.fragments < 1 || cfg.inner_steps < 1 || cfg.inner_steps % cfg.fragments != 0)
        return R::error("streaming_diloco: outer.inner_steps " + std::to_string(cfg.inner_steps) +
                        " must be a positive multiple of outer.fragments " + std::to_string(cfg.fragments));
    if (cfg.overlap_steps < 0 || cfg.overlap_steps >= cfg.inner_steps / cfg.fragments)
        return R::error("streaming_diloco: outer.overlap_steps " + std::to_string(cfg.overlap_steps) +
                        " must be in [0, H/F = " + std::to_string(cfg.inner_steps / cfg.fragments) + ")");
    auto frag = assign_fragments(names, cfg.fragments, cfg.order);
    if (!frag) return frag.status();
    auto codec = make_wire_codec(cfg.dtype);
    if (!codec) return codec.status();
    std::unique_ptr<StreamingDiLoCo> s(new StreamingDiLoCo());
    s->params_ = std::move(params);
    s->fragment_of_ = std::move(frag).value();
    s->cfg_ = std::move(cfg);
    s->codec_ = std::move(codec).value();
    s->replica_ = replica;
    s->replicas_ = replicas;
    torch::NoGradGuard no_grad;
    for (auto& p : s->params_) {
        if (p.scalar_type() != torch::kFloat32 || !p.is_contiguous())
            return R::error("streaming_diloco: parameters must be contiguous fp32");
        s->global_.push_back(p.detach().clone());
        s->momentum_.push_back(torch::zeros_like(p));
    }
    return s;
}

bool StreamingDiLoCo::round_at(int64_t step) const { return step % (cfg_.inner_steps / cfg_.fragments) == 0; }

// θ_global, the momenta and every exchange not yet applied: "pending.K.meta" = [fragment, apply
// step] (int64) and "pending.K.mean.J" its fragment's Δ̄ tensors in parameter order.
OuterState StreamingDiLoCo::save_state() const {
    OuterState s;
    put_tensors(s, "global", global_);
    put_tensors(s, "momentum", momentum_);
    for (size_t k = 0; k < pending_.size(); ++k) {
        const std::string pre = "pending." + std::to_string(k);
        s.emplace_back(pre + ".meta", torch::tensor({static_cast<int64_t>(pending_[k].fragment), pending_[k].apply_step}, torch::kLong));
        put_tensors(s, pre + ".mean", pending_[k].mean);
    }
    return s;
}

Status StreamingDiLoCo::load_state(const OuterState& s) {
    const std::string tag = name() + ": ";
    if (std::string u = unknown_state(s, {"global", "momentum", "pending"}); !u.empty()) return Status::error(tag + "unknown state " + u);
    for (const char* k : {"global", "momentum"}) {
        auto got = take_tensors(s, k, std::string(k) == "global" ? global_ : momentum_);
        if (!got) return Status::error(tag + got.message());
        if (!*got) return Status::error(tag + "the state has no " + k);
    }
    std::deque<Pending> pending;
    for (size_t k = 0;; ++k) {
        const std::string pre = "pending." + std::to_string(k);
        const torch::Tensor* meta = nullptr;
        for (auto& [n, t] : s)
            if (n == pre + ".meta") meta = &t;
        if (!meta) break;
        if (meta->scalar_type() != torch::kLong || meta->numel() != 2) return Status::error(tag + pre + ".meta is not [fragment, step]");
        Pending p;
        p.fragment = static_cast<int>(meta->data_ptr<int64_t>()[0]);
        p.apply_step = meta->data_ptr<int64_t>()[1];
        if (p.fragment < 0 || p.fragment >= cfg_.fragments) return Status::error(tag + pre + ": no fragment " + std::to_string(p.fragment));
        for (size_t i = 0; i < params_.size(); ++i)
            if (fragment_of_[i] == p.fragment) p.mean.push_back(torch::zeros_like(params_[i]));
        auto got = take_tensors(s, pre + ".mean", p.mean);
        if (!got || !*got) return Status::error(tag + pre + ": " + (got ? std::string("no mean") : got.message()));
        pending.push_back(std::move(p));
    }
    pending_ = std::move(pending);
    return Status::ok();
}

uint64_t StreamingDiLoCo::payload_bytes(int fragment) const {
    uint64_t n = 0;
    for (size_t i = 0; i < params_.size(); ++i)
        if (fragment_of_[i] == fragment) n += codec_->wire_bytes(params_[i].sizes());
    return n;
}

std::vector<int64_t> StreamingDiLoCo::fragment_segments(int fragment) const {
    std::vector<int64_t> out;
    for (size_t i = 0; i < params_.size(); ++i)
        if (fragment_of_[i] == fragment) out.push_back(params_[i].numel());
    return out;
}

Result<RoundReport> StreamingDiLoCo::after_step(int64_t step, Collective& c, double sim_clock_s) {
    torch::NoGradGuard no_grad;
    while (!pending_.empty() && pending_.front().apply_step <= step) {
        apply(pending_.front());
        pending_.pop_front();
    }
    const int64_t every = cfg_.inner_steps / cfg_.fragments;
    if (step % every != 0) return RoundReport{};
    const int f = static_cast<int>((step / every - 1) % cfg_.fragments);
    auto rep = start(f, step, c, sim_clock_s);
    if (rep && cfg_.overlap_steps == 0) {
        apply(pending_.back());
        pending_.pop_back();
    }
    return rep;
}

// Encodes the fragment's Δ, all-gathers it and queues the fp32 mean for apply().
Result<RoundReport> StreamingDiLoCo::start(int fragment, int64_t step, Collective& c, double sim_clock_s) {
    using R = Result<RoundReport>;
    const std::string tag = "streaming_diloco: fragment " + std::to_string(fragment);
    if (c.size() > replicas_)  // all replicas, or the survivors (docs/faults.md)
        return R::error(tag + ": built for " + std::to_string(replicas_) + " replicas, the collective has " +
                        std::to_string(c.size()) + " members");
    std::vector<size_t> members;
    for (size_t i = 0; i < params_.size(); ++i)
        if (fragment_of_[i] == fragment) members.push_back(i);
    if (cfg_.topology == Topology::kRing) return start_ring(fragment, members, step, c, sim_clock_s);
    std::vector<uint8_t> mine;
    for (size_t i : members) {
        if (Status s = codec_->encode(global_[i] - params_[i], mine); !s) {
            (void)c.all_gather({}, LinkClass::kOuterSync, sim_clock_s, nullptr);  // the peers fail at once
            return R::error(tag + ", replica " + std::to_string(replica_) + ", tensor " + std::to_string(i) + ": " +
                            s.message());
        }
    }
    RoundReport rep;
    rep.synced = true;
    rep.hops = 1;
    rep.overlap_steps = cfg_.overlap_steps;
    rep.what = "fragment " + std::to_string(fragment);
    auto all = c.all_gather(mine, LinkClass::kOuterSync, sim_clock_s, &rep.clocks);
    if (!all) return all.status();

    // Average in replica order on every replica, so all of them compute bit-identical results.
    Pending p;
    p.fragment = fragment;
    p.apply_step = step + cfg_.overlap_steps;
    for (size_t i : members) p.mean.push_back(torch::zeros_like(params_[i]));
    std::vector<std::vector<torch::Tensor>> decoded(all->size());  // [replica][member tensor]
    std::vector<double> norms;
    for (size_t r = 0; r < all->size(); ++r) {
        const auto& bytes = (*all)[r];
        const std::string who = tag + ", replica " + std::to_string(r);
        if (bytes.empty()) return R::error(who + " sent no payload (its outer gradient holds NaN or Inf)");
        size_t off = 0;
        double sq = 0;
        for (size_t m = 0; m < members.size(); ++m) {
            torch::Tensor d;
            if (Status s = codec_->decode(bytes.data(), bytes.size(), off, params_[members[m]].sizes(), d); !s)
                return R::error(who + ": " + s.message());
            if (!torch::isfinite(d).all().item<bool>()) return R::error(who + ": non-finite value in the payload");
            if (cfg_.guard_ratio > 0) {  // sequential double sum: the same bits on every replica
                const auto c = d.to(torch::kFloat32).contiguous();
                const float* v = c.data_ptr<float>();
                for (int64_t j = 0; j < c.numel(); ++j) sq += static_cast<double>(v[j]) * v[j];
            }
            decoded[r].push_back(std::move(d));
        }
        if (off != bytes.size())
            return R::error(who + " sent " + std::to_string(bytes.size()) + " bytes, expected " + std::to_string(off) +
                            " (different model or codec?)");
        if (cfg_.guard_ratio > 0) norms.push_back(std::sqrt(sq));
    }
    const auto scale =
        norm_clip_scales(norms, cfg_.guard_ratio, NormReference::kLowerMedianOfOthers, &rep.guard_clipped);
    for (size_t r = 0; r < decoded.size(); ++r)
        for (size_t m = 0; m < members.size(); ++m) {
            if (scale.empty() || scale[r] == 1.0f)
                p.mean[m] += decoded[r][m];
            else
                p.mean[m] += decoded[r][m] * scale[r];
        }
    for (auto& m : p.mean) m /= static_cast<double>(all->size());
    pending_.push_back(std::move(p));
    rep.bytes_sent = static_cast<uint64_t>(c.size() - 1) * mine.size();
    return rep;
}

// The ring's form of start(): the fragment's Δ flattened in parameter order, all-reduced to its mean.
Result<RoundReport> StreamingDiLoCo::start_ring(int fragment, const std::vector<size_t>& members, int64_t step,
                                                Collective& c, double sim_clock_s) {
    std::vector<torch::Tensor> parts;
    for (size_t i : members) parts.push_back((global_[i] - params_[i]).reshape({-1}));
    auto flat = torch::cat(parts);
    RingSpec spec;
    for (int r = 0; r < c.size(); ++r) spec.members.push_back(r);
    spec.segments = fragment_segments(fragment);
    spec.codec = codec_.get();
    spec.tag = "streaming_diloco: fragment " + std::to_string(fragment);
    auto ring = ring_allreduce_mean(c, spec, flat, sim_clock_s, RingGuard{cfg_.guard_ratio});
    if (!ring) return ring.status();
    RoundReport rep;
    rep.synced = true;
    rep.bytes_sent = ring->bytes_sent;
    rep.hops = ring->hops;
    rep.clocks = std::move(ring->clocks);
    rep.guard_clipped = ring->guard_clipped;
    rep.overlap_steps = cfg_.overlap_steps;
    rep.what = "fragment " + std::to_string(fragment);
    Pending p;
    p.fragment = fragment;
    p.apply_step = step + cfg_.overlap_steps;
    int64_t off = 0;
    for (size_t i : members) {
        const int64_t n = params_[i].numel();
        p.mean.push_back(flat.narrow(0, off, n).view(params_[i].sizes()).clone());
        off += n;
    }
    pending_.push_back(std::move(p));
    return rep;
}

AgreedState StreamingDiLoCo::agreed_state() const {
    AgreedState st{{}, global_};
    for (const auto& p : pending_)
        for (const auto& m : p.mean) st.tensors.push_back(m);
    return st;
}

// The fragment's outer Nesterov step from its global copy, then the α-mix into the live parameters.
void StreamingDiLoCo::apply(const Pending& p) {
    const double mu = cfg_.momentum, alpha = cfg_.mix_alpha;
    size_t m = 0;
    for (size_t i = 0; i < params_.size(); ++i) {
        if (fragment_of_[i] != p.fragment) continue;
        const auto& d = p.mean[m++];
        if (mu > 0) {
            momentum_[i].mul_(mu).add_(d);
            global_[i].sub_(d + mu * momentum_[i], cfg_.lr_outer);
        } else {
            global_[i].sub_(d, cfg_.lr_outer);
        }
        if (alpha == 0)
            params_[i].copy_(global_[i]);
        else
            params_[i].mul_(alpha).add_(global_[i], 1.0 - alpha);
    }
}


void streaming_diloco_problems(const OuterBuild& b, std::vector<std::string>& p) {
    const OuterConfig& o = b.cfg.outer;
    if (!parse_wire_dtype(o.dtype))
        p.push_back("outer.dtype \"" + o.dtype + "\" is unknown (expected fp32, bf16, int8 or fp4)");
    if (o.fragment_order != "sequential" && o.fragment_order != "strided")
        p.push_back("outer.fragment_order \"" + o.fragment_order + "\" is unknown (expected sequential or strided)");
    if (o.mix_alpha < 0 || o.mix_alpha > 1) p.push_back("outer.mix_alpha must be in [0, 1]");
    if (b.names.size() != b.params.size()) p.push_back("streaming_diloco needs the parameters' names to form fragments");
}

Result<std::unique_ptr<OuterAlgorithm>> make_streaming_diloco(OuterBuild b) {
    const OuterConfig& o = b.cfg.outer;
    StreamingDiLoCoConfig sc{o.inner_steps,
                             o.fragments,
                             o.fragment_order == "strided" ? FragmentOrder::kStrided : FragmentOrder::kSequential,
                             o.overlap_steps,
                             o.mix_alpha,
                             o.lr,
                             o.momentum,
                             o.dtype,
                             o.guard_ratio,
                             topology_of(b.cfg)};
    auto s = StreamingDiLoCo::create(std::move(b.params), b.names, sc, b.replica, b.replicas);
    if (!s) return s.status();
    return std::unique_ptr<OuterAlgorithm>(std::move(s).value());
}
namespace {

class StreamingDiLoCoRounds : public RoundCostModel {
public:
    StreamingDiLoCoRounds(const RunConfig& cfg, std::unique_ptr<Codec> dense, std::vector<int> fragment_of)
        : cfg_(cfg),
          dense_(std::move(dense)),
          fragment_of_(std::move(fragment_of)),
          period_(round_period(cfg)),
          everyone_(every_replica(cfg)) {}
    RoundCost at(int64_t step, int r, const std::vector<TensorShape>& tensors) const override {
        if (step % period_ != 0) return {};
        TW_ASSERT(tensors.size() == fragment_of_.size());  // the whole model's (round_cost.h)
        const int f = static_cast<int>((step / period_ - 1) % cfg_.outer.fragments);
        std::vector<TensorShape> part;
        for (size_t i = 0; i < tensors.size(); ++i)
            if (fragment_of_[i] == f) part.push_back(tensors[i]);
        RoundCost cost = dense_exchange_cost(cfg_, *dense_, part, numels(part), everyone_, r);
        cost.overlap = cfg_.outer.overlap_steps;
        return cost;
    }

private:
    RunConfig cfg_;
    std::unique_ptr<Codec> dense_;   // outer.dtype
    std::vector<int> fragment_of_;   // fragment of each whole-model tensor
    int64_t period_;                 // H/F: one fragment's exchange
    std::vector<int> everyone_;
};

}  // namespace

Result<std::unique_ptr<RoundCostModel>> plan_streaming_diloco_rounds(const RunConfig& cfg) {
    const OuterConfig& o = cfg.outer;
    auto d = make_wire_codec(o.dtype);
    if (!d) return d.status();
    std::vector<std::string> names;
    for (auto& t : model_tensors(cfg.model)) names.push_back(t.name);
    auto f = assign_fragments(names, o.fragments,
                              o.fragment_order == "strided" ? FragmentOrder::kStrided : FragmentOrder::kSequential);
    if (!f) return f.status();
    return std::unique_ptr<RoundCostModel>(std::make_unique<StreamingDiLoCoRounds>(cfg, std::move(*d), std::move(*f)));
}

}  // namespace tw
