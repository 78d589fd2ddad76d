// The rows every worker writes alike; see worker_recorder.h.
#include "engine/worker/worker_recorder.h"

#include "core/metric_names.h"

namespace tw {

void WorkerRecorder::record_bytes(int64_t step, const ByteCounters& total, const RecoveryBytes& recovery) {
    record_all(step, byte_metrics(total, true));
    record_all(step, relayed_metrics(total));
    if (recovery.sent > 0) record(step, metric::kBytesRecoverySent, static_cast<double>(recovery.sent));
    if (recovery.recv > 0) record(step, metric::kBytesRecoveryRecv, static_cast<double>(recovery.recv));
}

}  // namespace tw
