// The planner; see planner.h.
#include "engine/plan/planner.h"

#include <algorithm>

#include "core/algorithm.h"
#include "core/compute_model.h"
#include "core/model_size.h"
#include "core/network.h"
#include "core/ring_schedule.h"
#include "core/topology.h"
#include "engine/algo/noloco.h"
#include "engine/algo/ring_allreduce.h"
#include "engine/algo/streaming_diloco.h"
#include "engine/codec/codec.h"
#include "engine/codec/dct_topk.h"

namespace tw {
namespace {

// What one round sends from one replica.
struct RoundCost {
    uint64_t bytes = 0;  // what the round's trace records (round.bytes): what its clock pays for
    int64_t hops = 1;
    uint64_t sent = 0;   // what the transport counts as sent when it differs from `bytes` (a hub's upload); 0 = bytes
    uint64_t sent_bytes() const { return sent ? sent : bytes; }
};

uint64_t sum_wire_bytes(const Codec& codec, const std::vector<TensorShape>& shapes) {
    uint64_t n = 0;
    for (auto& t : shapes) n += codec.wire_bytes(t.shape);
    return n;
}

// A dense exchange of `segments` (element counts in order) with `codec` among `members` (replica
// indices, ascending) from `replica`: the mesh sends its payload to every other member, the ring
// its opening (the guard's norm) and its chunks (ring_allreduce.h).
RoundCost dense_exchange(const RunConfig& cfg, const Codec& codec, const std::vector<TensorShape>& shapes,
                         const std::vector<int64_t>& segments, const std::vector<int>& members, int replica) {
    const uint64_t others = members.size() - 1;
    if (topology_of(cfg) == Topology::kMesh) return {others * sum_wire_bytes(codec, shapes), 1};
    RingSpec spec;
    spec.members = members;
    spec.segments = segments;
    spec.codec = &codec;
    const int position = static_cast<int>(std::find(members.begin(), members.end(), replica) - members.begin());
    const uint64_t opening = ring_opening_bytes(RingGuard{cfg.outer.guard_ratio});
    return {others * opening + ring_payload_bytes(spec, position), ring_hops(static_cast<int>(members.size()))};
}

std::vector<int> all_replicas(int R) {
    std::vector<int> m;
    for (int r = 0; r < R; ++r) m.push_back(r);
    return m;
}

std::vector<int64_t> numels(const std::vector<TensorShape>& shapes) {
    std::vector<int64_t> n;
    for (auto& t : shapes) n.push_back(t.numel());
    return n;
}

Status refuse_unplannable(const RunConfig& cfg) {
    if (cfg.skippipe.enabled()) return Status::error("plan: SkipPipe runs are not planned (their schedule needs measured stage times)");
    if (cfg.hdee.enabled()) return Status::error("plan: HDEE runs are not planned (experts train without communication)");
    if (cfg.cluster.stages > 1)
        return Status::error("plan: runs with pipeline replicas (cluster.stages " + std::to_string(cfg.cluster.stages) +
                             ") are not planned yet; plan their full-replica form with cluster.stages = 1");
    if (cfg.cluster.nodes_per_replica > 1)
        return Status::error("plan: replicas of several nodes (cluster.nodes_per_replica " +
                             std::to_string(cfg.cluster.nodes_per_replica) + ") are not planned yet");
    if (cfg.model.vocab_size <= 0) return Status::error("plan: model.vocab_size must be set (there is no tokenizer to ask)");
    return Status::ok();
}

}  // namespace

double Plan::utilisation() const {
    double c = 0, e = 0;
    for (auto& n : nodes) c += n.compute_s, e += n.exposed_s;
    return c / std::max(1e-300, c + e);
}

double Plan::sim_s() const {
    double s = 0;
    for (auto& n : nodes) s = std::max(s, n.sim_s);
    return s;
}

Result<Plan> plan_run(RunConfig cfg) {
    if (Status st = refuse_unplannable(cfg); !st) return st;
    cfg.compute.model = "flops";
    const Algorithm algo = algorithm_of(cfg);
    const int R = static_cast<int>(cfg.outer.replicas);
    const std::vector<TensorShape> shapes = model_tensors(cfg.model);
    std::vector<std::string> names;
    for (auto& t : shapes) names.push_back(t.name);
    const OuterConfig& o = cfg.outer;
    Plan plan;
    plan.params = count_parameters(cfg.model);
    plan.steps = cfg.train.steps;
    plan.tokens = plan.steps * R * cfg.train.batch_size * cfg.model.seq_len;

    // The codecs the algorithm's rows build (engine/algo/registry.cpp), over shapes only.
    std::unique_ptr<Codec> dense;
    if (algo == Algorithm::kDiLoCo || algo == Algorithm::kStreamingDiLoCo) {
        auto c = make_wire_codec(o.dtype);
        if (!c) return c.status();
        dense = std::move(*c);
    }
    std::vector<int> fragment_of;
    if (algo == Algorithm::kStreamingDiLoCo) {
        auto f = assign_fragments(names, o.fragments,
                                  o.fragment_order == "strided" ? FragmentOrder::kStrided : FragmentOrder::kSequential);
        if (!f) return f.status();
        fragment_of = std::move(*f);
    }
    auto sparse = make_sparseloco_codec(TopkConfig{o.topk_chunk, o.topk_k});
    // NoLoCo's payload: φ and θ − φ, 2·P fp32 values, to each other member (or around the group's ring).
    const auto fp32 = make_dense_codec(false);
    const std::vector<TensorShape> noloco_payload{{"phi", {plan.params}}, {"delta", {plan.params}}};
    const std::vector<int> everyone = all_replicas(R);
    DctTopkCodec dct(DctTopkConfig{o.demo_chunk, o.demo_topk, o.demo_values == "sign" ? DctValues::kSign : DctValues::kFp32});

    std::vector<TraceNode> nodes;
    for (int r = 0; r < R; ++r) {
        auto ct = ComputeTime::create(cfg, r);
        if (!ct) return ct.status();
        PlannedNode pn;
        pn.name = "replica-" + std::to_string(r);
        pn.replica = r;
        pn.step_s = ct->train_step(0.0);
        TraceNode tn;
        tn.name = pn.name;
        tn.replica = r;
        for (int64_t step = 1; step <= plan.steps; ++step) {
            tn.trace.compute_s[step] = pn.step_s;
            RoundCost cost;
            bool synced = false;
            std::vector<uint64_t> group;
            switch (algo) {
                case Algorithm::kDdp:
                    if (R > 1) {
                        synced = true;
                        cost = {ring_sent_bytes_dense(plan.params, 4, R, r), ring_hops(R)};
                    }
                    break;
                case Algorithm::kDiLoCo:
                case Algorithm::kSparseLoCo:
                case Algorithm::kDeMo:
                    if (step % o.inner_steps != 0) break;
                    synced = true;
                    if (algo == Algorithm::kDiLoCo) {
                        // fp32/bf16 run DiLoCo's own path (one segment); int8/fp4 a one-fragment Streaming DiLoCo.
                        const bool own = o.dtype == "fp32" || o.dtype == "bf16";
                        cost = dense_exchange(cfg, *dense, shapes, own ? std::vector<int64_t>{plan.params} : numels(shapes),
                                              everyone, r);
                    } else {
                        // Sparse payloads: the mesh sends its payload to the R − 1 others in one hop; the
                        // hub uploads it once and downloads the R − 1 others' (recorded as R payloads in
                        // 2 hops, as sparse_gather_round reports them).
                        const uint64_t payload =
                            sum_wire_bytes(algo == Algorithm::kDeMo ? static_cast<const Codec&>(dct) : *sparse, shapes);
                        cost = topology_of(cfg) == Topology::kHub ? RoundCost{static_cast<uint64_t>(R) * payload, 2, payload}
                                                                  : RoundCost{static_cast<uint64_t>(R - 1) * payload, 1};
                    }
                    break;
                case Algorithm::kStreamingDiLoCo: {
                    const int64_t every = o.inner_steps / o.fragments;
                    if (step % every != 0) break;
                    synced = true;
                    const int f = static_cast<int>((step / every - 1) % o.fragments);
                    std::vector<TensorShape> part;
                    for (size_t i = 0; i < shapes.size(); ++i)
                        if (fragment_of[i] == f) part.push_back(shapes[i]);
                    cost = dense_exchange(cfg, *dense, part, numels(part), everyone, r);
                    if (o.overlap_steps > 0) tn.trace.round_overlap[step] = o.overlap_steps;
                    break;
                }
                case Algorithm::kNoLoCo: {
                    if (step % o.inner_steps != 0) break;
                    synced = true;
                    for (auto& g : noloco_groups(step, R, o.group_size)) {
                        if (std::find(g.begin(), g.end(), r) == g.end()) continue;
                        uint64_t mask = 0;
                        for (int m : g)
                            if (m < 64) mask |= uint64_t{1} << m;
                        group.push_back(mask);
                        cost = dense_exchange(cfg, *fp32, noloco_payload, {2 * plan.params}, g, r);
                    }
                    break;
                }
                default:
                    break;
            }
            if (!synced) continue;
            tn.trace.round_bytes[step] = cost.bytes;
            if (cost.hops != 1) tn.trace.round_hops[step] = cost.hops;
            if (!group.empty()) tn.trace.round_group[step] = group;
            if (pn.rounds++ == 0) pn.round_bytes = cost.sent_bytes();
            pn.total_bytes += cost.sent_bytes();
        }
        plan.nodes.push_back(pn);
        nodes.push_back(std::move(tn));
    }
    auto net = network_profile(cfg.network);
    if (!net) return net.status();
    auto t = retime(cfg, nodes, *net);
    if (!t) return t.status();
    plan.timeline = std::move(*t);
    for (size_t i = 0; i < plan.nodes.size(); ++i) {
        plan.nodes[i].sim_s = plan.timeline.sim_s[i];
        plan.nodes[i].compute_s = plan.timeline.compute_s[i];
        plan.nodes[i].exposed_s = plan.timeline.exposed_s[i];
    }
    plan.effective_flops = effective_flops(cfg.compute, 0);
    return plan;
}

}  // namespace tw
