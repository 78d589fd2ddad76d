// Metric and event records: what engines report and what the run store keeps.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tw {

// One scalar observation. Names are dotted and stable ("train.loss", "val.loss", "train.tokens_per_s").
struct MetricRecord {
    std::string node;        // reporting node ("local" for single-process training)
    int64_t step = 0;        // inner optimizer step (1-based after the step completed)
    int64_t outer_step = -1; // outer round, -1 when not applicable
    double wall_s = 0;       // seconds since the run started, real clock
    double sim_s = 0;        // simulated seconds (METHODS.md §10); equals wall_s when nothing is simulated
    std::string name;
    double value = 0;
};

// The metrics every synchronisation round reports, whatever the algorithm or worker, as name → value:
// bytes this node sent, sequential transfers, compute since the last round, the transfer's cost on
// the link, the time the node's clock waited, compute / (compute + waited), and the round's
// measured exchange time in wall seconds (Collective::real_exchange_s; DDP: the all-reduce's).
inline std::vector<std::pair<std::string, double>> round_metrics(uint64_t bytes, int64_t hops, double compute_s,
                                                                 double comm_s, double exposed_s, double real_comm_s) {
    return {{"round.bytes", static_cast<double>(bytes)},
            {"round.hops", static_cast<double>(hops)},
            {"round.compute_s", compute_s},
            {"round.comm_s", comm_s},
            {"round.real_comm_s", real_comm_s},
            {"round.exposed_comm_s", exposed_s},
            {"round.utilisation", compute_s / (compute_s + exposed_s)}};
}

enum class EventLevel : uint8_t { kInfo = 0, kWarning = 1, kError = 2 };

struct EventRecord {
    double wall_s = 0;
    std::string node;
    EventLevel level = EventLevel::kInfo;
    std::string kind;  // "start", "checkpoint", "resume", "finish", "error", ...
    std::string text;
};

enum class RunStatus : uint8_t { kRunning = 0, kFinished = 1, kFailed = 2, kInterrupted = 3 };

inline const char* to_string(RunStatus s) {
    switch (s) {
        case RunStatus::kRunning: return "running";
        case RunStatus::kFinished: return "finished";
        case RunStatus::kFailed: return "failed";
        case RunStatus::kInterrupted: return "interrupted";
    }
    return "unknown";
}

}  // namespace tw
