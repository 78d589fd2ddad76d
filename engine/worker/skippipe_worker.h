// The worker of one SkipPipe node (docs/methods.md §8, docs/skippipe.md): node (s, n) of S·N holds stage s
// for replica n (core/layout.h), built alone with skippipe_stage_spec (stage 0: embedding, its blocks,
// final norm and head). Every step every node computes the same schedule (core/skippipe.h
// SkipPipeTiming: seed run.seed + step) and runs its own ops of it in the schedule's time order:
//   forward of a visit   activations [b, T, d] fp32 arrive from the previous visit's node (stage 0
//                        embeds its replica's micro-batch instead) and leave for the next visit's
//                        node, or for the path's stage-0 node after the last visit;
//   head (stage 0)       final norm, head and loss, backward of the head; dL/dh leaves for the last visit;
//   backward of a visit  dL/dh [b, T, d] fp32 arrives from the next visit's node (or the head) and
//                        dL/dx leaves for the previous visit's node.
// Every message travels over the data plane on the stage link (Collective send/recv, counted). Then the
// N holders of each stage the schedule visited all-gather that stage's gradients over the intra-replica
// link and sum them in node order (so every holder holds the same sum, the one-process form's gradient);
// every node sends its squared gradient norm (8 B) to its replica's other stages; each node clips by the
// global norm and takes its stage's AdamW step (skippipe_inner_step). A stage no path visited gets no
// gradient anywhere and is left untouched (no round, no step), as in the one-process form.
//
// Simulated time: the clock advances by the schedule's makespan plus the stage sync (SkipPipeTiming::
// step), the same on every node; `runs retime` replays it with skippipe_clocks. The compute measured
// while the ops run is recorded (train.compute_s) but does not drive the clock: the schedule's stage
// times do (pinned by skippipe.block_s / head_s, or measured once by node (0, 0) and sent to the others).
//
// Evaluation (node (0, 0) records val.loss and val.loss.path_*): replica 0's nodes run the full
// in-order path and every eval path in path order over the data plane, uncounted (measurement).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "core/collective.h"
#include "core/config.h"
#include "core/role.h"
#include "core/worker.h"

namespace tw {

// One op a node ran, for tests that check the executed schedule: path k = r·m + j of `step`
// (0-based), its visit index (0..L−1; L for the head), the stage and the node's replica.
struct SkipOpRecord {
    int64_t step = 0;
    int path = 0;
    int visit = 0;
    int stage = 0;
    int node = 0;      // replica index n of node (stage, n)
    char kind = 'F';   // 'F' forward, 'H' head, 'B' backward
};
// Called on the worker's thread after each op; may be empty. Must be thread-safe across workers.
using SkipOpObserver = std::function<void(const SkipOpRecord&)>;

// `mesh` holds every node of the run (NodeRole::mesh_rank = n·S + s). `set_abort` as for the
// replica worker.
std::unique_ptr<Worker> make_skippipe_worker(const RunConfig& cfg, const NodeRole& role,
                                             std::unique_ptr<Collective> mesh,
                                             std::function<void(std::function<bool()>)> set_abort,
                                             SkipOpObserver observer = {});

}  // namespace tw
