// Timeline re-computation; see timeline.h.
#include "core/timeline.h"

#include <algorithm>
#include <set>

namespace tw {

double round_end_s(const std::vector<double>& clocks, const LinkSpec& link, uint64_t bytes, int64_t hops) {
    return *std::max_element(clocks.begin(), clocks.end()) + static_cast<double>(hops - 1) * link.latency_s +
           transfer_s(link, bytes);
}

Timeline retime(const std::vector<ReplicaTrace>& replicas, const LinkSpec& link) {
    const size_t R = replicas.size();
    Timeline t{std::vector<double>(R, 0.0), std::vector<double>(R, 0.0), std::vector<double>(R, 0.0),
               std::vector<std::map<int64_t, double>>(R)};
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
                auto h = replicas[r].round_hops.find(step);
                const double after = round_end_s(arrivals, link, b == replicas[r].round_bytes.end() ? 0 : b->second,
                                                 h == replicas[r].round_hops.end() ? 1 : h->second);
                t.exposed_s[r] += after - t.sim_s[r];
                t.sim_s[r] = after;
            }
        }
        for (size_t r = 0; r < R; ++r)
            if (replicas[r].compute_s.count(step)) t.clock_at[r][step] = t.sim_s[r];
    }
    return t;
}

}  // namespace tw
