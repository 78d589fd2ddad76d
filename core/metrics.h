// Metric and event records: what engines report and what the run store keeps.
#pragma once

#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "core/enum_names.h"
#include "core/metric_names.h"

namespace tw {

// One scalar observation. Names are dotted and stable; every one is a constant of core/metric_names.h.
struct MetricRecord {
    std::string node;        // reporting node ("local" for single-process training)
    int64_t step = 0;        // inner optimizer step (1-based after the step completed)
    int64_t outer_step = -1; // outer round, -1 when not applicable
    double wall_s = 0;       // seconds since the run started, real clock
    double sim_s = 0;        // simulated seconds (docs/methods.md §10); equals wall_s when nothing is simulated
    std::string name;
    double value = 0;
};

// The metrics every synchronisation round reports, whatever the algorithm or worker, as name → value:
// bytes this node sent, sequential transfers, compute since the last round, the transfer's cost on
// the link, the time the node's clock waited, compute / (compute + waited), and the round's
// measured exchange time in wall seconds (Collective::real_exchange_s; DDP: the all-reduce's).
inline std::vector<std::pair<std::string, double>> round_metrics(uint64_t bytes, int64_t hops, double compute_s,
                                                                 double comm_s, double exposed_s, double real_comm_s) {
    return {{metric::kRoundBytes, static_cast<double>(bytes)},
            {metric::kRoundHops, static_cast<double>(hops)},
            {metric::kRoundComputeS, compute_s},
            {metric::kRoundCommS, comm_s},
            {metric::kRoundRealCommS, real_comm_s},
            {metric::kRoundExposedCommS, exposed_s},
            {metric::kRoundUtilisation, compute_s / (compute_s + exposed_s)}};
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

inline constexpr EnumName<RunStatus> kRunStatusNames[] = {{RunStatus::kRunning, "running"},
                                                          {RunStatus::kFinished, "finished"},
                                                          {RunStatus::kFailed, "failed"},
                                                          {RunStatus::kInterrupted, "interrupted"}};
static_assert(enum_table_complete(kRunStatusNames) && std::size(kRunStatusNames) == 4);

inline const char* to_string(RunStatus s) { return enum_name(kRunStatusNames, s); }

}  // namespace tw
