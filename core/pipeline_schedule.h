// Pipeline schedules (GPipe, Huang et al., arXiv 1811.06965; 1F1B / PipeDream-flush, Narayanan et al.,
// arXiv 2006.09503) and their simulated time under the clock rules of docs/methods.md §10.
//
// A pipeline replica of S stages runs m micro-batches per iteration. Each stage is one node that runs
// one op (a forward or a backward of one micro-batch) at a time, in the fixed order stage_ops gives;
// an op starts when its node is free and its input has arrived. simulate_pipeline turns per-stage op
// costs and per-boundary transfer costs into start/end times, a makespan and per-stage idle time
// (bubbles plus exposed transfers), which the pipeline workers charge to their simulated clocks and
// the SkipPipe comparison (core/skippipe.h) measures against.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace tw {

// ---- schedules ------------------------------------------------------------------------------------

enum class PipeSchedule : uint8_t {
    kGPipe = 0,  // all forwards, then all backwards: m micro-batches in flight on every stage
    k1F1B = 1,   // PipeDream-flush: warm-up forwards, then one forward / one backward; ≤ S − s in flight
};

// "gpipe" | "1f1b" (exact, lower case); the error names the value and the accepted ones.
Result<PipeSchedule> parse_pipe_schedule(const std::string& s);
const char* to_string(PipeSchedule s);  // "gpipe" | "1f1b"

enum class PipeOpKind : uint8_t { kForward = 0, kBackward = 1 };

struct PipeOp {
    PipeOpKind kind = PipeOpKind::kForward;
    int micro_batch = 0;  // 0..m−1
};

// The order in which stage `stage` (0..stages−1) of a `stages`-stage pipeline runs the forward and
// backward passes of `micro_batches` (≥ 1) micro-batches in one iteration; 2·m ops, each micro-batch's
// forward before its backward.
//   GPipe: F0 F1 … F(m−1), then B(m−1) … B0. Backwards run in reverse micro-batch order (the usual
//          GPipe choice): the last stage starts the backward of the micro-batch whose forward it has
//          just finished, so no stage waits on a gradient that is not the latest one.
//   1F1B:  w = min(S−1−s, m) warm-up forwards F0 … F(w−1); then for i = 0 … m−w−1: F(w+i), B(i);
//          then the cool-down backwards B(m−w) … B(m−1). Backwards in micro-batch order; stage s
//          never holds more than min(S−s, m) micro-batches (forwards minus backwards so far).
// Arguments out of range are programmer errors (TW_ASSERT).
std::vector<PipeOp> stage_ops(PipeSchedule schedule, int stage, int stages, int micro_batches);

// ---- simulated time -------------------------------------------------------------------------------

struct PipeTiming {
    double makespan_s = 0;       // end of the last op on any stage (the iteration starts at 0)
    std::vector<double> busy_s;  // [S] per stage: sum of its op durations, m·(fwd_s + bwd_s)
    std::vector<double> idle_s;  // [S] per stage: makespan − busy (bubbles + exposed transfers)
    double utilisation = 0;      // Σ busy / (S · makespan), in [0, 1]; 0 when the makespan is 0
    // [S][2·m] per stage, per op in stage_ops order: (start, end) in seconds; for tests and plots
    std::vector<std::vector<std::pair<double, double>>> op_times;
};

// Simulated time of one iteration when every stage follows stage_ops(schedule, …). With S stages:
//   forward of micro-batch j on stage s starts at max(stage s free, end of its forward on s−1 +
//     fwd_transfer_s[s−1]); on stage 0 only the stage needs to be free (the batch is local);
//   backward of j on stage s starts at max(stage s free, end of its backward on s+1 +
//     bwd_transfer_s[s]); on the last stage it follows that stage's own forward of j.
// Sizes: fwd_s and bwd_s [S] (seconds per micro-batch, ≥ 0), fwd_transfer_s and bwd_transfer_s
// [S−1] (seconds per micro-batch per boundary; boundary b joins stage b and b+1). A size mismatch or
// micro_batches < 1 is a programmer error (TW_ASSERT).
// With equal per-stage times f, b and zero transfers both schedules take (m + S − 1)·(f + b) and
// every stage idles (S − 1)·(f + b): the bubble fraction (S − 1)/(m + S − 1). With a transfer t
// on every boundary GPipe adds 2·(S − 1)·t (its forwards stream behind the first), while 1F1B can
// take longer: in its steady state a stage waits for a gradient's round trip before its next
// forward (S = 2, m = 3, f = 1, b = 2, t = 0.3: GPipe 12.6 s, 1F1B 13.2 s). It saves memory, not time.
PipeTiming simulate_pipeline(PipeSchedule schedule, int micro_batches,
                             const std::vector<double>& fwd_s,            // [S] per stage, one micro-batch
                             const std::vector<double>& bwd_s,            // [S] per stage, one micro-batch
                             const std::vector<double>& fwd_transfer_s,   // [S−1] stage b → b+1
                             const std::vector<double>& bwd_transfer_s);  // [S−1] stage b+1 → b

// Intended usage: a pipeline worker measures (or derives from FLOPs) its per-stage op costs and the
// stage links' transfer_s(link, activation_bytes), calls simulate_pipeline once per configuration and
// advances every stage's clock by makespan_s per iteration; idle_s is that stage's exposed time.

}  // namespace tw
