// What a pipeline stage node does in one iteration, as the ordered list of events that move its
// simulated clock: receive a payload, run a compute segment, send a payload. The pipeline worker's
// executor walks this list to train (engine/pipeline/executor.h), and re-timing walks the same
// list over a stored trace (core/timeline.h), so the live clock and the re-timed one follow one
// order of operations (docs/methods.md §10: bubbles and exposed transfers are idle time).
//
// Pure functions of the config; Torch-free; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "core/config.h"
#include "core/pipeline_schedule.h"

namespace tw {

enum class StageEventKind : uint8_t {
    kRecv = 0,     // wait for the next message from the peer
    kCompute = 1,  // a compute segment: `op` (a schedule op) or, when `optimizer`, the optimizer step
    kSend = 2,     // send the payload this event names to the peer
};

enum class StagePayload : uint8_t {
    kNone = 0,
    kActivation = 1,    // a micro-batch's boundary activations, forward
    kGradient = 2,      // a micro-batch's boundary gradient, backward
    kGradNormSq = 3,    // this stage's squared gradient norm (8 bytes; clipping is global)
    kFrozenTable = 4,   // AD2: stage 0's T_fixed update for the replica's later stages
};

struct StageEvent {
    StageEventKind kind = StageEventKind::kCompute;
    StagePayload payload = StagePayload::kNone;  // kRecv / kSend: what travels
    int peer_replica = -1, peer_stage = -1;      // kRecv / kSend: the other node
    PipeOp op;                                   // kCompute, not optimizer: the schedule op
    bool optimizer = false;                      // kCompute: clipping + the optimizer step
};

// One iteration of stage `stage` of pipeline replica `replica`; `iteration` is 0-based (inner step
// − 1), the index the loader and the routes are seeded with:
// the schedule's ops (pipeline.schedule, pipeline.micro_batches), each forward preceded by the
// receipt of its input from the previous stage and followed by the send of its output to the next,
// each backward likewise in the other direction (under pipeline.routing = "random" the peers are
// the seeded routes of core/routing.h); then the squared gradient norm sent to every other stage
// of the replica and received from each, in stage order; then the optimizer step.
std::vector<StageEvent> stage_iteration(const RunConfig& cfg, int replica, int stage, int64_t iteration);

// AD2 on a compressed pipeline replica (docs/methods.md §7): after every outer round (and, except under
// SparseLoCo, once before the first step) stage 0 sends T_fixed's update to every later stage of
// its replica, which waits for it. Empty when the replica's stages need no such message.
std::vector<StageEvent> frozen_table_events(const RunConfig& cfg, int replica, int stage);
// Whether frozen_table_events also run once before the first step.
bool frozen_table_at_start(const RunConfig& cfg);
// Whether stage `stage` of pipeline replica `replica` keeps a copy of θ_global's trainable
// embedding and replays stage 0's rounds on it (the messages above are round payloads, not tables).
bool has_embedding_shadow(const RunConfig& cfg, int replica, int stage);

}  // namespace tw
