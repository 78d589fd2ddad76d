// Timeline re-computation; see timeline.h.
#include "core/timeline.h"

#include <algorithm>
#include <set>

namespace tw {

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
            const double start = *std::max_element(t.sim_s.begin(), t.sim_s.end());
            for (size_t r = 0; r < R; ++r) {
                auto b = replicas[r].round_bytes.find(step);
                const double after = start + transfer_s(outer, b == replicas[r].round_bytes.end() ? 0 : b->second);
                t.exposed_s[r] += after - t.sim_s[r];
                t.sim_s[r] = after;
            }
        }
    }
    return t;
}

}  // namespace tw
