// The planner's runs with pipeline replicas; see pipeline_plan.h.
#include "engine/plan/pipeline_plan.h"

#include <algorithm>
#include <memory>

#include "core/compute_model.h"
#include "core/model_size.h"
#include "core/pipeline_program.h"
#include "engine/codec/codec.h"
#include "engine/pipeline/activation_codec.h"
#include "engine/pipeline/activation_codec_registry.h"
#include "engine/pipeline/hetero.h"
#include "engine/pipeline/subspace.h"

namespace tw {
namespace {

// Message sizes a pipeline replica's stage nodes send, from the codecs' own byte functions.
class MessageSizes {
public:
    static Result<MessageSizes> create(const RunConfig& cfg) {
        MessageSizes m;
        m.cfg_ = &cfg;
        auto c = parse_coord_dtype(cfg.pipeline.coord_dtype);
        if (!c) return c.status();
        m.coord_ = *c;
        auto compressed = boundary_codec(cfg, 1);  // the row of every boundary of rank k > 0
        if (!compressed) return compressed.status();
        m.compressed_ = *compressed;
        m.dense_ = boundary_codec(cfg, 0).value();
        m.b_ = cfg.train.batch_size / cfg.pipeline.micro_batches;
        // AD2's table: under SparseLoCo stage 0 forwards tok_emb's part of every member's round
        // payload (engine/algo/sparseloco.cpp leading_tensor_payloads), else T_fixed in fp32.
        const int64_t V = cfg.model.vocab_size, d = cfg.model.d_model;
        if (algorithm_of(cfg) == Algorithm::kSparseLoCo)
            m.table_ = static_cast<uint64_t>(cfg.outer.replicas) *
                       make_sparseloco_codec(TopkConfig{cfg.outer.topk_chunk, cfg.outer.topk_k})->wire_bytes({V, d});
        else
            m.table_ = static_cast<uint64_t>(V * d) * 4;
        return m;
    }

    // What stage `stage` of pipeline replica `replica` sends in event `e` (a kSend).
    uint64_t of(const StageEvent& e, int replica, int stage) const {
        const int64_t T = cfg_->model.seq_len;
        switch (e.payload) {
            case StagePayload::kActivation: {  // the stage's output codec: boundary `stage`
                const int64_t k = cfg_->boundary_rank(replica, stage);
                return (k == 0 ? dense_ : compressed_)->forward_bytes(spec(k), b_, T);
            }
            case StagePayload::kGradient: {  // the stage's input codec: boundary `stage` − 1
                const int64_t k = cfg_->boundary_rank(replica, stage - 1);
                return (k == 0 ? dense_ : compressed_)->backward_bytes(spec(k), b_, T);
            }
            case StagePayload::kGradNormSq:
                return 8;  // one double (engine/worker/stage_executor.cpp)
            case StagePayload::kFrozenTable:
                return table_;
            default:
                return 0;
        }
    }

private:
    MessageSizes() = default;
    const RunConfig* cfg_ = nullptr;
    // A boundary of rank k as the codecs' byte functions take it (no tensors: bytes only).
    BoundaryCodecSpec spec(int64_t k) const {
        BoundaryCodecSpec b;
        b.d_model = cfg_->model.d_model;
        b.vocab = cfg_->model.vocab_size;
        b.rank = k;
        b.coord_dtype = coord_;
        b.seed = static_cast<uint64_t>(cfg_->run.seed);
        return b;
    }
    WireDtype coord_{};
    const ActivationCodecRow* dense_ = nullptr;       // rank-0 boundaries
    const ActivationCodecRow* compressed_ = nullptr;  // pipeline.codec's, for rank k > 0
    int64_t b_ = 1;       // sequences per micro-batch
    uint64_t table_ = 0;  // one AD2 frozen-table message
};

// Sends of `events` into `out` (clock.send_bytes rows, in order); returns their sum.
uint64_t record_sends(const std::vector<StageEvent>& events, const MessageSizes& sizes, int replica, int stage,
                      std::vector<uint64_t>& out) {
    uint64_t sum = 0;
    for (const StageEvent& e : events)
        if (e.kind == StageEventKind::kSend) out.push_back(sizes.of(e, replica, stage)), sum += out.back();
    return sum;
}

}  // namespace

Result<PlannedReplica> plan_full_replica(const RunConfig& cfg, int replica) {
    auto ct = ComputeTime::create(cfg, replica);
    if (!ct) return ct.status();
    PlannedReplica out;
    out.node.name = "replica-" + std::to_string(replica);
    out.node.replica = replica;
    out.node.step_s = ct->train_step(0.0);
    out.trace = TraceNode{out.node.name, replica, -1, -1, {}};
    for (int64_t step = 1; step <= cfg.train.steps; ++step) out.trace.trace.compute_s[step] = out.node.step_s;
    return out;
}

void record_round(PlannedNode& pn, NodeTrace& t, int64_t step, const RoundCost& cost,
                  const std::vector<uint64_t>& groups) {
    t.round_bytes[step] = cost.bytes;
    if (cost.hops != 1) t.round_hops[step] = cost.hops;
    if (cost.overlap > 0) t.round_overlap[step] = cost.overlap;
    if (!groups.empty()) t.round_group[step] = groups;
    if (pn.rounds++ == 0) pn.round_bytes = cost.sent_bytes();
    pn.total_bytes += cost.sent_bytes();
}

Result<PlannedTraces> plan_pipeline_traces(const RunConfig& cfg, const RoundCosts& costs) {
    const int R = static_cast<int>(cfg.outer.replicas), S = static_cast<int>(cfg.cluster.stages);
    const int64_t steps = cfg.train.steps;
    // Each stage's tensors in the stage module's order (the whole model's, filtered: LibTorch lists
    // a module's own tensors before its blocks', engine/model/llama.cpp).
    std::vector<std::vector<TensorShape>> stage_tensors(static_cast<size_t>(S));
    for (auto& t : model_tensors(cfg.model))
        stage_tensors[static_cast<size_t>(stage_of_param(cfg.model, t.name, S))].push_back(t);
    auto sizes = MessageSizes::create(cfg);
    if (!sizes) return sizes.status();

    PlannedTraces out;
    for (int r = 0; r < R; ++r) {
        if (!cfg.is_pipeline_replica(r)) {
            // A full replica: the whole model's step, and every H steps S stage rounds back to back.
            auto full = plan_full_replica(cfg, r);
            if (!full) return full.status();
            PlannedNode& pn = full->node;
            TraceNode& tn = full->trace;
            for (int64_t step = 1; step <= steps; ++step) {
                uint64_t bytes = 0;
                int64_t hops = 1;
                bool synced = false;
                std::vector<uint64_t> groups;
                for (int s = 0; s < S; ++s) {
                    const RoundCost c = costs.at(step, r, stage_tensors[static_cast<size_t>(s)]);
                    if (!c.synced) continue;
                    synced = true;
                    bytes += c.bytes, hops = std::max(hops, c.hops);
                    if (c.group) groups.push_back(c.group);
                }
                if (synced) record_round(pn, tn.trace, step, RoundCost{true, bytes, 0, hops}, groups);
            }
            out.nodes.push_back(pn);
            out.traces.push_back(std::move(tn));
            continue;
        }
        for (int s = 0; s < S; ++s) {
            auto ct = ComputeTime::create(cfg, r, s);
            if (!ct) return ct.status();
            PlannedNode pn;
            pn.name = "replica-" + std::to_string(r) + "." + std::to_string(s);
            pn.replica = r;
            pn.stage = s;
            TraceNode tn{pn.name, r, s, -1, {}};
            const std::vector<StageEvent> table = frozen_table_events(cfg, r, s);
            if (frozen_table_at_start(cfg) && !table.empty()) {
                std::vector<uint64_t> sent;
                pn.inter_stage_bytes += record_sends(table, *sizes, r, s, sent);
                if (!sent.empty()) tn.trace.sent_bytes[0] = std::move(sent);
            }
            for (int64_t step = 1; step <= steps; ++step) {
                std::vector<double> segments;
                std::vector<uint64_t> sent;
                double compute = 0;
                const std::vector<StageEvent> events = stage_iteration(cfg, r, s, step - 1);
                for (const StageEvent& e : events)
                    if (e.kind == StageEventKind::kCompute)
                        segments.push_back(ct->stage_segment(e, 0.0)), compute += segments.back();
                pn.inter_stage_bytes += record_sends(events, *sizes, r, s, sent);
                if (step == 1) pn.step_s = compute;
                tn.trace.compute_s[step] = compute;  // the iteration's segments summed, as the worker stores it
                tn.trace.segments_s[step] = std::move(segments);
                const RoundCost c = costs.at(step, r, stage_tensors[static_cast<size_t>(s)]);
                if (c.synced) {
                    // A stage round as the worker records it: its bytes and hops alone.
                    record_round(pn, tn.trace, step, RoundCost{true, c.bytes, 0, c.hops},
                                 c.group ? std::vector<uint64_t>{c.group} : std::vector<uint64_t>{});
                    pn.inter_stage_bytes += record_sends(table, *sizes, r, s, sent);  // AD2 after the round
                }
                if (!sent.empty()) tn.trace.sent_bytes[step] = std::move(sent);
            }
            pn.total_bytes += pn.inter_stage_bytes;
            out.nodes.push_back(pn);
            out.traces.push_back(std::move(tn));
        }
    }
    return out;
}

}  // namespace tw
