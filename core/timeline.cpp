// Timeline re-computation; see timeline.h.
#include "core/timeline.h"

#include <algorithm>
#include <set>

namespace tw {

double round_end_s(const std::vector<double>& clocks, const LinkSpec& outer, uint64_t bytes) {
    return *std::max_element(clocks.begin(), clocks.end()) + transfer_s(outer, bytes);
}

Timeline retime(const std::vector<ReplicaTrace>& replicas, const LinkSpec& outer) {
    const size_t R = replicas.size();
    Timeline t{std::vector<double>(R, 0.0), std::vector<double>(R, 0.0), std::vector<double>(R, 0.0)};
    std::set<int64_t> steps;
    for (auto& r : replicas)
        for (auto& [s, c] : r.compute_s) steps.insert(s);
    for (int64_t step : steps) {
        for (size_t r = 0; r < R; ++r) {
            auto it = replicas[r].compute_s.find(step);
            if (it == replicas[r].compute_s.end()) continue;
            t.sim_s[r] += it->second;
            t.compute_s[r] += it->second;
        }
        if (!replicas.empty() && replicas[0].round_bytes.count(step)) {
            const std::vector<double> arrivals = t.sim_s;
            for (size_t r = 0; r < R; ++r) {
                auto b = replicas[r].round_bytes.find(step);
                const double after = round_end_s(arrivals, outer, b == replicas[r].round_bytes.end() ? 0 : b->second);
                t.exposed_s[r] += after - t.sim_s[r];
                t.sim_s[r] = after;
            }
        }
    }
    return t;
}

}  // namespace tw
