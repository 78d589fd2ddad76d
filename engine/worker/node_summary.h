// A node worker's end-of-run figures (core/worker.h WorkerSummary, the coordinator's summary
// table), built one way for every worker. A worker fills what it has and leaves the rest unset:
// an unset figure is absent from the summary, not zero (a SkipPipe node of stage 1 reports no
// train.loss; an HDEE expert, which sends nothing, no bytes).
//
// Units: seconds (simulated unless named wall), bytes. Pure data; thread-safe as a value.
#pragma once

#include <cstdint>
#include <optional>

#include "core/collective.h"
#include "core/sim_clock.h"
#include "core/worker.h"
#include "engine/worker/worker_recorder.h"

namespace tw {

struct NodeSummary {
    int64_t steps = 0;                       // inner steps this node ran (a resumed node's from the start)
    std::optional<double> train_loss;        // the last step's (NaN: none yet)
    std::optional<double> val_loss;          // the last evaluation's (NaN: none)
    std::optional<int64_t> val_step;         // the step of val_loss (−1: none)
    double sim_s = 0;                        // the simulated clock at the end
    double compute_s = 0;                    // compute seconds in all
    std::optional<double> exposed_comm_s;    // simulated waiting in all
    std::optional<double> utilisation;       // the worker's own rule (see its summarise)
    std::optional<double> sync_utilisation;  // sync_utilisation(clock) where the worker reports it
    double wall_s = 0;                       // since the run's start
    std::optional<ByteCounters> bytes;       // cumulative data-plane bytes (byte_metrics, idle links too)
    RecoveryBytes recovery;                  // bytes.outer.recovery.*, only when non-zero
};

WorkerSummary to_worker_summary(const NodeSummary& s);

// What a node's simulated clock holds at the end: sim_s, compute_s and exposed_comm_s.
NodeSummary clock_summary(const SimClock& clock);

// compute / (compute + outer-sync waiting): the share of a node's time lost to outer syncs alone,
// beside a utilisation that also counts a pipeline's bubbles.
double sync_utilisation(const SimClock& clock);

}  // namespace tw
