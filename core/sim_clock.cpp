// The simulated clock; see sim_clock.h. The order of every floating-point operation here is part
// of the recorded clocks' format: a replay reproduces them only if it is kept.
#include "core/sim_clock.h"

#include <algorithm>

#include "core/assert.h"

namespace tw {

double round_end_s(const std::vector<double>& clocks, const LinkSpec& link, uint64_t bytes, int64_t hops) {
    TW_ASSERT(!clocks.empty());
    return *std::max_element(clocks.begin(), clocks.end()) + static_cast<double>(hops - 1) * link.latency_s +
           transfer_s(link, bytes);
}

double outer_round_end_s(const NetworkProfile& p, Topology topology, int self, const std::vector<int>& members,
                         const std::vector<double>& clocks, uint64_t bytes, int64_t hops) {
    if (topology == Topology::kHub && !p.relay.replicas.empty()) {
        // Relayed nodes dial the hub themselves: no byte of a hub round crosses their relay.
        NetworkProfile direct = p;
        direct.relay.replicas.clear();
        return outer_round_end_s(direct, topology, self, members, clocks, bytes, hops);
    }
    if (topology != Topology::kHub || p.replicas.empty() || clocks.empty())
        return round_end_s(clocks, round_link(p, self, members, hops), bytes, hops);
    const int R = static_cast<int>(p.replicas.size());
    std::vector<int> m = members;
    if (m.empty())
        for (int r = 0; r < R; ++r) m.push_back(r);
    auto access = [&](int r) { return p.replicas[static_cast<size_t>(std::clamp(r, 0, R - 1))]; };
    const double payload = static_cast<double>(bytes) / static_cast<double>(m.size());
    double in_s = 0;  // the last upload's arrival at the relay
    for (size_t j = 0; j < m.size(); ++j) {
        const double c = j < clocks.size() ? clocks[j] : *std::max_element(clocks.begin(), clocks.end());
        in_s = std::max(in_s, c + access(m[j]).latency_s + 8.0 * payload / access(m[j]).up_bps);
    }
    const AccessLink& own = access(self);
    return in_s + own.latency_s + 8.0 * (static_cast<double>(m.size()) - 1.0) * payload / own.down_bps;
}

double SimClock::send(const LinkSpec& link, uint64_t bytes) {
    const double depart = std::max(now_s_, uplink_free_s_);
    const double wire_s = 8.0 * static_cast<double>(bytes) / link.bandwidth_bps;
    uplink_free_s_ = depart + wire_s;
    return depart + wire_s + link.latency_s;
}

double SimClock::finish_round_at(double end_s) {
    const double waited = end_s - now_s_;
    now_s_ = end_s;
    exposed_s_ += waited;
    sync_exposed_s_ += waited;
    return waited;
}

double SimClock::wait_for_round(double end_s) {
    const double waited = std::max(0.0, end_s - now_s_);
    now_s_ += waited;
    exposed_s_ += waited;
    sync_exposed_s_ += waited;
    return waited;
}

void SimClock::settle_due(int64_t step) {
    auto [lo, hi] = due_.equal_range(step);
    for (auto d = lo; d != hi; ++d) wait_until(d->second);
    due_.erase(lo, hi);
}

double SimClock::follow_leader(double own_end_s, float leader_clock_s, const LinkSpec& link, uint64_t bytes) {
    return std::max(own_end_s, static_cast<double>(leader_clock_s)) + transfer_s(link, bytes);
}

}  // namespace tw
