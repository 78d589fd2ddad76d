// What every node's worker does alike; see node_worker.h.
#include "engine/worker/node_worker.h"

#include "engine/worker/run_checkpoint.h"

namespace tw {

Status NodeWorker::end_training_loop(Status failure, bool stopped, int64_t step, const WorkerControl& ctl,
                                     const RunCheckpoints& ckpts, const std::function<Status(int64_t)>& save) {
    if (stopped && failure.is_ok() && ckpts.due_on_stop(step))
        if (Status st = save(step); !st) failure = st;
    rec_.flush_pending();
    if (!failure.is_ok() && !ctl.stop.load()) return failure;
    if (stopped || ctl.stop.load()) rec_.stopped_at(step);
    return Status::ok();
}

}  // namespace tw
