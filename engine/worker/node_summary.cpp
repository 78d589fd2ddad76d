// A node worker's end-of-run figures; see node_summary.h.
#include "engine/worker/node_summary.h"

#include <algorithm>

#include "core/metric_names.h"

namespace tw {

WorkerSummary to_worker_summary(const NodeSummary& s) {
    WorkerSummary out{{summary::kSteps, static_cast<double>(s.steps)},
                      {summary::kSimS, s.sim_s},
                      {summary::kComputeS, s.compute_s},
                      {summary::kWallS, s.wall_s}};
    if (s.train_loss) out[metric::kTrainLoss] = *s.train_loss;
    if (s.val_loss) out[metric::kValLoss] = *s.val_loss;
    if (s.val_step) out[summary::kValStep] = static_cast<double>(*s.val_step);
    if (s.exposed_comm_s) out[summary::kExposedCommS] = *s.exposed_comm_s;
    if (s.utilisation) out[summary::kUtilisation] = *s.utilisation;
    if (s.sync_utilisation) out[summary::kSyncUtilisation] = *s.sync_utilisation;
    if (s.bytes)
        for (auto& [name, v] : byte_metrics(*s.bytes, false)) out[name] = v;
    if (s.recovery.sent > 0) out[metric::kBytesRecoverySent] = static_cast<double>(s.recovery.sent);
    if (s.recovery.recv > 0) out[metric::kBytesRecoveryRecv] = static_cast<double>(s.recovery.recv);
    return out;
}

NodeSummary clock_summary(const SimClock& clock) {
    NodeSummary s;
    s.sim_s = clock.now_s(), s.compute_s = clock.compute_s(), s.exposed_comm_s = clock.exposed_s();
    return s;
}

double sync_utilisation(const SimClock& clock) {
    const double compute_s = clock.compute_s();
    return compute_s / std::max(1e-12, compute_s + clock.sync_exposed_s());
}

}  // namespace tw
