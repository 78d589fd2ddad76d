// A run's fault events as plot markers; see run_faults.h.
#include "ui/data/run_faults.h"

#include <cmath>

namespace tw::ui {

std::vector<FaultMark> fault_marks(const RunData& d, int64_t run_id, XAxis axis, const RetimedRun* retimed) {
    std::vector<FaultMark> marks;
    if (d.faults.empty()) return marks;
    const NodeData* first = nullptr;  // a stand-in for events of a node without rows (e.g. the coordinator's)
    const std::string* first_name = nullptr;
    for (auto& [name, nd] : d.nodes)
        if (!nd.step.empty()) {
            first = &nd, first_name = &name;
            break;
        }
    if (!first) return marks;
    for (const EventRecord& e : d.faults) {
        auto it = d.nodes.find(e.node);
        const bool own = it != d.nodes.end() && !it->second.step.empty();
        const NodeData& nd = own ? it->second : *first;
        const std::string& node = own ? e.node : *first_name;
        const auto at = place_event(e, nd.step, nd.wall_s, own);
        if (!at) continue;
        const std::map<int64_t, double>* rt = nullptr;
        if (retimed)
            if (auto r = retimed->nodes.find(node); r != retimed->nodes.end()) rt = &r->second.clock_at;
        // The step axis takes the event's own step; the others that of its row, which has them.
        const size_t i = at->row;
        const double x = axis == XAxis::kStep ? at->step : x_of(nd, axis, nd.step[i], nd.sim_s[i], nd.wall_s[i], rt);
        if (!std::isfinite(x)) continue;
        marks.push_back({x, fault_kind_index(e.kind), short_label(e),
                         "run " + std::to_string(run_id) + " " + e.node + ": " + e.kind + ": " + e.text});
    }
    return merge_marks(std::move(marks));
}

}  // namespace tw::ui
