// The planner's runs with pipeline replicas (docs/methods.md §6–§7): uniform runs (every
// replica a pipeline of cluster.stages nodes) and heterogeneous ones (full replicas beside
// pipeline replicas), GPipe or 1F1B over pipeline.micro_batches, dense or subspace boundaries of
// any rank, the outer algorithm synced per stage. It writes, node by node, the trace a run of the
// layout under `[compute] model = "flops"` stores (core/timeline.h NodeTrace):
//   full replica   one compute value per step (ComputeTime::train_step) and per round the bytes
//                  of its S stage rounds summed, their largest hop count, NoLoCo's group per stage;
//   stage node     per step the compute segments of core/pipeline_program.h's stage_iteration
//                  (ComputeTime::stage_segment, in event order) and the size of every message it
//                  sends in that order: activations and gradients by the boundary codec's own byte
//                  functions over [b, T] micro-batches (engine/pipeline/activation_codec.h dense,
//                  engine/pipeline/subspace.h forward/backward_wire_bytes), 8 bytes per gradient
//                  norm, and AD2's frozen-table messages (frozen_table_events) after its rounds
//                  (and before the first step unless SparseLoCo): under SparseLoCo the embedding's
//                  part of every member's payload (R × the codec's wire_bytes of tok_emb), else
//                  T_fixed itself (V·d fp32); per round its stage's bytes (round_cost.h).
// planner.cpp replays these traces with core/timeline.h's retime, as `runs retime` does.
//
// Units: seconds, bytes; steps are 1-based inner steps (0: before the first). Not planned here: the
// start-up weight checks (8 bytes per stage to each other holder) and the evaluation's dense
// forwards (not counted by a run either).
#pragma once

#include <vector>

#include "core/config.h"
#include "core/status.h"
#include "core/timeline.h"
#include "engine/plan/planner.h"
#include "engine/plan/round_cost.h"

namespace tw {

struct PlannedTraces {
    std::vector<PlannedNode> nodes;  // the run's nodes in mesh order (replica 0's, then replica 1's, ...)
    std::vector<TraceNode> traces;   // the same nodes' traces, for retime
};

// The traces of every node of `cfg` (a checked config with cluster.stages > 1 and model.vocab_size
// set; compute.model "flops") for cfg.train.steps steps, with the outer rounds' bytes from `costs`.
Result<PlannedTraces> plan_pipeline_traces(const RunConfig& cfg, const RoundCosts& costs);

// ---- shared with planner.cpp's runs of full replicas ----

// A full replica's node (the whole model on one node) before its rounds: named "replica-r", its
// step time from the compute model (core/compute_model.h), and its trace with that compute time on
// every step 1..cfg.train.steps.
struct PlannedReplica {
    PlannedNode node;
    TraceNode trace;
};
Result<PlannedReplica> plan_full_replica(const RunConfig& cfg, int replica);

// Records a round of `cost` at `step` on a node and its trace: round.bytes is cost.bytes, hops and
// τ are kept where they differ from 1 and 0, `groups` (bitmasks, core/timeline.h) where there are
// any; the node's first-round and total bytes count what the transport sends (cost.sent_bytes()).
void record_round(PlannedNode& pn, NodeTrace& t, int64_t step, const RoundCost& cost,
                  const std::vector<uint64_t>& groups);

}  // namespace tw
