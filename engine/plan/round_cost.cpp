// What one outer round sends from one replica; see round_cost.h.
#include "engine/plan/round_cost.h"

#include <algorithm>

#include "core/algorithm.h"
#include "core/assert.h"
#include "core/ring_schedule.h"
#include "core/topology.h"
#include "engine/algo/noloco.h"
#include "engine/algo/ring_allreduce.h"
#include "engine/algo/streaming_diloco.h"
#include "engine/codec/codec.h"
#include "engine/codec/dct_topk.h"

namespace tw {
namespace {

uint64_t sum_wire_bytes(const Codec& codec, const std::vector<TensorShape>& shapes) {
    uint64_t n = 0;
    for (auto& t : shapes) n += codec.wire_bytes(t.shape);
    return n;
}

int64_t sum_numel(const std::vector<TensorShape>& shapes) {
    int64_t n = 0;
    for (auto& t : shapes) n += t.numel();
    return n;
}

std::vector<int64_t> numels(const std::vector<TensorShape>& shapes) {
    std::vector<int64_t> n;
    for (auto& t : shapes) n.push_back(t.numel());
    return n;
}

// A dense exchange of `segments` (element counts in order) with `codec` among `members` (replica
// indices, ascending) from `replica`: the mesh sends its payload to every other member, the ring
// its opening (the guard's norm) and its chunks (ring_allreduce.h).
RoundCost dense_exchange(const RunConfig& cfg, const Codec& codec, const std::vector<TensorShape>& shapes,
                         const std::vector<int64_t>& segments, const std::vector<int>& members, int replica) {
    const uint64_t others = members.size() - 1;
    RoundCost c;
    c.synced = true;
    if (topology_of(cfg) == Topology::kMesh) {
        c.bytes = others * sum_wire_bytes(codec, shapes);
        return c;
    }
    RingSpec spec;
    spec.members = members;
    spec.segments = segments;
    spec.codec = &codec;
    const int position = static_cast<int>(std::find(members.begin(), members.end(), replica) - members.begin());
    const uint64_t opening = ring_opening_bytes(RingGuard{cfg.outer.guard_ratio});
    c.bytes = others * opening + ring_payload_bytes(spec, position);
    c.hops = ring_hops(static_cast<int>(members.size()));
    return c;
}

}  // namespace

RoundCosts::RoundCosts(RoundCosts&&) noexcept = default;
RoundCosts& RoundCosts::operator=(RoundCosts&&) noexcept = default;
RoundCosts::~RoundCosts() = default;

Result<RoundCosts> RoundCosts::create(const RunConfig& cfg) {
    RoundCosts c;
    c.cfg_ = cfg;
    c.R_ = static_cast<int>(cfg.outer.replicas);
    for (int r = 0; r < c.R_; ++r) c.everyone_.push_back(r);
    const Algorithm algo = algorithm_of(cfg);
    const OuterConfig& o = cfg.outer;
    if (algo == Algorithm::kDiLoCo || algo == Algorithm::kStreamingDiLoCo) {
        auto d = make_wire_codec(o.dtype);
        if (!d) return d.status();
        c.dense_ = std::move(*d);
    }
    if (algo == Algorithm::kStreamingDiLoCo) {
        std::vector<std::string> names;
        for (auto& t : model_tensors(cfg.model)) names.push_back(t.name);
        auto f = assign_fragments(names, o.fragments,
                                  o.fragment_order == "strided" ? FragmentOrder::kStrided : FragmentOrder::kSequential);
        if (!f) return f.status();
        c.fragment_of_ = std::move(*f);
    }
    c.sparse_ = make_sparseloco_codec(TopkConfig{o.topk_chunk, o.topk_k});
    c.fp32_ = make_dense_codec(false);
    c.dct_ = std::make_unique<DctTopkCodec>(
        DctTopkConfig{o.demo_chunk, o.demo_topk, o.demo_values == "sign" ? DctValues::kSign : DctValues::kFp32});
    return c;
}

// Every algorithm has its case below: one left out does not compile (instead of planning a round
// of zero bytes).
#pragma GCC diagnostic error "-Wswitch"
RoundCost RoundCosts::at(int64_t step, int r, const std::vector<TensorShape>& tensors) const {
    const OuterConfig& o = cfg_.outer;
    RoundCost cost;
    switch (algorithm_of(cfg_)) {
        case Algorithm::kDdp:
            if (R_ > 1)
                cost.synced = true, cost.bytes = ring_sent_bytes_dense(sum_numel(tensors), 4, R_, r),
                cost.hops = ring_hops(R_);
            return cost;
        case Algorithm::kDiLoCo: {
            if (step % o.inner_steps != 0) return cost;
            // fp32/bf16 run DiLoCo's own path (one segment); int8/fp4 a one-fragment Streaming DiLoCo.
            const bool own = o.dtype == "fp32" || o.dtype == "bf16";
            return dense_exchange(cfg_, *dense_, tensors,
                                  own ? std::vector<int64_t>{sum_numel(tensors)} : numels(tensors), everyone_, r);
        }
        case Algorithm::kSparseLoCo:
        case Algorithm::kDeMo: {
            if (step % o.inner_steps != 0) return cost;
            const Codec& codec = algorithm_of(cfg_) == Algorithm::kDeMo ? static_cast<const Codec&>(*dct_) : *sparse_;
            // Sparse payloads: the mesh sends its payload to the R − 1 others in one hop; the hub
            // uploads it once and downloads the R − 1 others' (recorded as R payloads in 2 hops, as
            // sparse_gather_round reports them).
            const uint64_t payload = sum_wire_bytes(codec, tensors);
            cost.synced = true;
            if (topology_of(cfg_) == Topology::kHub) {
                cost.bytes = static_cast<uint64_t>(R_) * payload, cost.hops = 2, cost.sent = payload;
            } else {
                cost.bytes = static_cast<uint64_t>(R_ - 1) * payload;
            }
            return cost;
        }
        case Algorithm::kStreamingDiLoCo: {
            const int64_t every = o.inner_steps / o.fragments;
            if (step % every != 0) return cost;
            TW_ASSERT(tensors.size() == fragment_of_.size());  // the whole model's (round_cost.h)
            const int f = static_cast<int>((step / every - 1) % o.fragments);
            std::vector<TensorShape> part;
            for (size_t i = 0; i < tensors.size(); ++i)
                if (fragment_of_[i] == f) part.push_back(tensors[i]);
            cost = dense_exchange(cfg_, *dense_, part, numels(part), everyone_, r);
            cost.overlap = o.overlap_steps;
            return cost;
        }
        case Algorithm::kNoLoCo: {
            if (step % o.inner_steps != 0) return cost;
            // φ and θ − φ, 2·P fp32 values, to each other member of the group (or around its ring).
            const int64_t P = sum_numel(tensors);
            const std::vector<TensorShape> payload{{"phi", {P}}, {"delta", {P}}};
            for (auto& g : noloco_groups(step, R_, o.group_size)) {
                if (std::find(g.begin(), g.end(), r) == g.end()) continue;
                cost = dense_exchange(cfg_, *fp32_, payload, {2 * P}, g, r);
                for (int m : g)
                    if (m < 64) cost.group |= uint64_t{1} << m;
            }
            cost.synced = true;
            return cost;
        }
        case Algorithm::kNone:  // one node: no round
            return cost;
    }
    TW_ASSERT(false && "an algorithm without a planned round cost");
    return cost;
}

}  // namespace tw
