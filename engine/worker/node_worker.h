// What every node's worker holds and does alike (the replica, pipeline-stage, SkipPipe and HDEE
// expert workers derive from it): its config, its role, its data-plane mesh, the hook that makes
// the mesh's waits end on a stop, its recorder (worker_recorder.h: rows, events, wall time from
// the run's start), and the end of a training loop.
//
// Ownership: the worker owns the mesh (null for a role without one) and the abort hook; the
// recorder's sink is run()'s. Thread-safety: one worker thread; the abort predicate a worker
// installs is read by the transport's threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "core/collective.h"
#include "core/config.h"
#include "core/role.h"
#include "core/status.h"
#include "core/worker.h"
#include "engine/worker/node_summary.h"
#include "engine/worker/worker_recorder.h"

namespace tw {

class RunCheckpoints;  // run_checkpoint.h

// Makes the mesh's waits end when the predicate it is given holds (may be empty).
using AbortSetter = std::function<void(std::function<bool()>)>;

// What every node's worker is made from: its config, its role, its data-plane mesh (null for a
// role without one) and the hook that makes the mesh's waits end (may be empty).
struct NodeParts {
    RunConfig cfg;
    NodeRole role;
    std::unique_ptr<Collective> mesh;
    AbortSetter set_abort;
};

class NodeWorker : public Worker {
protected:
    explicit NodeWorker(NodeParts p)
        : cfg_(std::move(p.cfg)), role_(std::move(p.role)), mesh_(std::move(p.mesh)), set_abort_(std::move(p.set_abort)) {}

    // After a training loop that ended at `step`, `stopped` when a stop came between steps:
    // a stop's checkpoint when due (RunCheckpoints::due_on_stop, written by `save`; its failure is
    // the loop's), the rows left to the sink, then the failure to return — unless the stop caused
    // it: a collective aborted by a stop request is a stop — or, for a stop, its event.
    Status end_training_loop(Status failure, bool stopped, int64_t step, const WorkerControl& ctl,
                             const RunCheckpoints& ckpts, const std::function<Status(int64_t)>& save);

    // The summary a loop returns: `out` with the recorder's wall time, the node's cumulative
    // data-plane `bytes` and its `recovery` bytes.
    WorkerSummary finish_summary(NodeSummary out, const ByteCounters& bytes, const RecoveryBytes& recovery) const {
        out.wall_s = rec_.wall_s();
        out.bytes = bytes, out.recovery = recovery;
        return to_worker_summary(out);
    }

    RunConfig cfg_;
    NodeRole role_;
    std::unique_ptr<Collective> mesh_;
    AbortSetter set_abort_;
    // Wall time from the run's start: a restarted process counts it as its peers do
    // (NodeRole::rejoin_age_ms, 0 for every other role). Each worker stamps the rows (run()).
    WorkerRecorder rec_{role_.name, WorkerClock::now() - std::chrono::milliseconds(role_.rejoin_age_ms(unix_now_ms()))};
};

}  // namespace tw
