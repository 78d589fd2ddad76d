// A stage node's clock events; see pipeline_program.h.
#include "core/pipeline_program.h"

#include "core/algorithm.h"
#include "core/assert.h"
#include "core/layout.h"
#include "core/routing.h"

namespace tw {
namespace {

StageEvent message(StageEventKind kind, StagePayload payload, int replica, int stage) {
    StageEvent e;
    e.kind = kind;
    e.payload = payload;
    e.peer_replica = replica;
    e.peer_stage = stage;
    return e;
}

}  // namespace

std::vector<StageEvent> stage_iteration(const RunConfig& cfg, int replica, int stage, int64_t iteration) {
    const int S = static_cast<int>(cfg.cluster.stages), R = static_cast<int>(cfg.outer.replicas);
    const int m = static_cast<int>(cfg.pipeline.micro_batches);
    const bool routed = cfg.pipeline.routing == "random";
    const uint64_t seed = static_cast<uint64_t>(cfg.run.seed);
    auto schedule = parse_pipe_schedule(cfg.pipeline.schedule);
    TW_ASSERT(schedule.is_ok());  // parse_config checked pipeline.schedule
    // Where this node's output of micro-batch j goes, and where its input came from.
    auto next = [&](int j) { return routed ? routing_permutation(seed, iteration, j, stage, R)[static_cast<size_t>(replica)] : replica; };
    auto prev = [&](int j) { return routed ? routing_source(seed, iteration, j, stage - 1, R, replica) : replica; };
    std::vector<StageEvent> events;
    for (const PipeOp& op : stage_ops(*schedule, stage, S, m)) {
        StageEvent compute;
        compute.op = op;
        if (op.kind == PipeOpKind::kForward) {
            if (stage > 0) events.push_back(message(StageEventKind::kRecv, StagePayload::kActivation, prev(op.micro_batch), stage - 1));
            events.push_back(compute);
            if (stage < S - 1) events.push_back(message(StageEventKind::kSend, StagePayload::kActivation, next(op.micro_batch), stage + 1));
        } else {
            if (stage < S - 1) events.push_back(message(StageEventKind::kRecv, StagePayload::kGradient, next(op.micro_batch), stage + 1));
            events.push_back(compute);
            if (stage > 0) events.push_back(message(StageEventKind::kSend, StagePayload::kGradient, prev(op.micro_batch), stage - 1));
        }
    }
    for (int s = 0; s < S; ++s)
        if (s != stage) events.push_back(message(StageEventKind::kSend, StagePayload::kGradNormSq, replica, s));
    for (int s = 0; s < S; ++s)
        if (s != stage) events.push_back(message(StageEventKind::kRecv, StagePayload::kGradNormSq, replica, s));
    StageEvent step_event;
    step_event.optimizer = true;
    events.push_back(step_event);
    return events;
}

std::vector<StageEvent> frozen_table_events(const RunConfig& cfg, int replica, int stage) {
    std::vector<StageEvent> events;
    // T_fixed exists when a boundary is compressed; AD2 moves into it on stage 0 only when some
    // compressed replica constrains stage 0 (run_constraint_rank), and the later stages of a
    // pipeline replica then need the result.
    if (!cfg.is_pipeline_replica(replica) || !cfg.pipeline.has("ad2") || run_constraint_rank(cfg, 0) <= 0) return events;
    const int S = static_cast<int>(cfg.cluster.stages);
    if (stage == 0)
        for (int s = 1; s < S; ++s) events.push_back(message(StageEventKind::kSend, StagePayload::kFrozenTable, replica, s));
    else
        events.push_back(message(StageEventKind::kRecv, StagePayload::kFrozenTable, replica, 0));
    return events;
}

// Under SparseLoCo the later stages rebuild stage 0's first AD2 move themselves and then replay its
// rounds, so nothing is sent before the first round; the other algorithms send the table itself.
bool frozen_table_at_start(const RunConfig& cfg) { return algorithm_of(cfg) != Algorithm::kSparseLoCo; }

bool has_embedding_shadow(const RunConfig& cfg, int replica, int stage) {
    return stage > 0 && !frozen_table_events(cfg, replica, stage).empty() && !frozen_table_at_start(cfg);
}

}  // namespace tw
