// Timeline re-computation; see timeline.h.
#include "core/timeline.h"

#include <algorithm>
#include <cstdio>
#include <set>

namespace tw {

double round_end_s(const std::vector<double>& clocks, const LinkSpec& link, uint64_t bytes, int64_t hops) {
    return *std::max_element(clocks.begin(), clocks.end()) + static_cast<double>(hops - 1) * link.latency_s +
           transfer_s(link, bytes);
}

const std::vector<std::string>& trace_metric_names() {
    static const std::vector<std::string> kNames{"train.compute_s", "round.bytes", "round.hops", "round.overlap_steps",
                                                 "round.group_mask"};
    return kNames;
}

bool add_to_trace(ReplicaTrace& t, const MetricRecord& m) {
    if (m.name == "train.compute_s") t.compute_s[m.step] = m.value;
    else if (m.name == "round.bytes") t.round_bytes[m.step] = static_cast<uint64_t>(m.value);
    else if (m.name == "round.hops") t.round_hops[m.step] = static_cast<int64_t>(m.value);
    else if (m.name == "round.overlap_steps") t.round_overlap[m.step] = static_cast<int64_t>(m.value);
    else if (m.name == "round.group_mask") t.round_group[m.step] = static_cast<uint64_t>(m.value);
    else return false;
    return true;
}

std::vector<std::string> replica_order(std::vector<std::string> names) {
    auto key = [](const std::string& n) {
        long r = 0, k = 0;
        std::sscanf(n.c_str(), "replica-%ld.%ld", &r, &k);
        return std::make_pair(r, k);
    };
    std::stable_sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) { return key(a) < key(b); });
    return names;
}

Timeline retime(const std::vector<ReplicaTrace>& replicas, const LinkSpec& link) {
    const size_t R = replicas.size();
    Timeline t{std::vector<double>(R, 0.0), std::vector<double>(R, 0.0), std::vector<double>(R, 0.0),
               std::vector<std::map<int64_t, double>>(R)};
    std::set<int64_t> steps;
    for (auto& r : replicas)
        for (auto& [s, c] : r.compute_s) steps.insert(s);
    std::vector<std::multimap<int64_t, double>> due(R);  // apply step → end of an overlapped transfer
    auto wait_until = [&](size_t r, double end) {
        if (end > t.sim_s[r]) t.exposed_s[r] += end - t.sim_s[r], t.sim_s[r] = end;
    };
    for (int64_t step : steps) {
        for (size_t r = 0; r < R; ++r) {
            auto it = replicas[r].compute_s.find(step);
            if (it == replicas[r].compute_s.end()) continue;
            t.sim_s[r] += it->second;
            t.compute_s[r] += it->second;
        }
        for (size_t r = 0; r < R; ++r) {
            auto [lo, hi] = due[r].equal_range(step);
            for (auto d = lo; d != hi; ++d) wait_until(r, d->second);
            due[r].erase(lo, hi);
        }
        const std::vector<double> arrivals = t.sim_s;
        for (size_t r = 0; r < R; ++r) {
            auto b = replicas[r].round_bytes.find(step);
            if (b == replicas[r].round_bytes.end()) continue;
            std::vector<double> group;
            auto g = replicas[r].round_group.find(step);
            for (size_t q = 0; q < R; ++q)
                if (g == replicas[r].round_group.end() || (q < 64 && ((g->second >> q) & 1u))) group.push_back(arrivals[q]);
            auto h = replicas[r].round_hops.find(step);
            const double end = round_end_s(group.empty() ? arrivals : group, link, b->second,
                                           h == replicas[r].round_hops.end() ? 1 : h->second);
            auto o = replicas[r].round_overlap.find(step);
            if (o != replicas[r].round_overlap.end() && o->second > 0) due[r].emplace(step + o->second, end);
            else wait_until(r, end);
        }
        for (size_t r = 0; r < R; ++r)
            if (replicas[r].compute_s.count(step)) t.clock_at[r][step] = t.sim_s[r];
    }
    return t;
}

}  // namespace tw
