// Named network profiles.
#include "core/network.h"

#include <algorithm>

namespace tw {

Result<NetworkProfile> network_profile(const std::string& name) {
    const LinkSpec dc{100e9, 10e-6};
    if (name == "datacenter") return NetworkProfile{name, dc, dc, dc};
    if (name == "wan-1g") return NetworkProfile{name, dc, {1e9, 0.020}, {1e9, 0.020}};
    if (name == "wan-100m") return NetworkProfile{name, dc, {100e6, 0.030}, {100e6, 0.030}};
    if (name == "home-20m") return NetworkProfile{name, dc, {20e6, 0.040}, {20e6, 0.040}};
    return Result<NetworkProfile>::error("unknown network profile \"" + name +
                                         "\" (expected datacenter, wan-1g, wan-100m or home-20m)");
}

Result<NetworkProfile> network_profile(const std::string& name, double outer_bandwidth_bps, double outer_latency_s) {
    auto p = network_profile(name);
    if (!p) return p;
    if (outer_bandwidth_bps > 0) p->outer.bandwidth_bps = outer_bandwidth_bps;
    if (outer_latency_s > 0) p->outer.latency_s = outer_latency_s;
    return p;
}

Result<NetworkProfile> network_profile(const NetworkConfig& n) {
    auto p = network_profile(n.profile, n.outer_bandwidth_bps, n.outer_latency_s);
    if (!p) return p;
    const size_t R = std::max({n.replica_up_bps.size(), n.replica_down_bps.size(), n.replica_latency_s.size()});
    for (size_t r = 0; r < R; ++r) {
        auto at = [r](const std::vector<double>& v, double otherwise) { return r < v.size() ? v[r] : otherwise; };
        p->replicas.push_back({at(n.replica_up_bps, p->outer.bandwidth_bps), at(n.replica_down_bps, p->outer.bandwidth_bps),
                               at(n.replica_latency_s, p->outer.latency_s)});
    }
    if (n.intra_bandwidth_bps > 0) p->intra.bandwidth_bps = n.intra_bandwidth_bps;
    if (n.intra_latency_s > 0) p->intra.latency_s = n.intra_latency_s;
    if (n.stage_bandwidth_bps > 0) p->stage.bandwidth_bps = n.stage_bandwidth_bps;
    if (n.stage_latency_s > 0) p->stage.latency_s = n.stage_latency_s;
    return p;
}

LinkSpec round_link(const NetworkProfile& p, int self, const std::vector<int>& members, int64_t hops) {
    if (p.replicas.empty()) return p.outer;
    const int R = static_cast<int>(p.replicas.size());
    std::vector<int> m = members;
    if (m.empty())
        for (int r = 0; r < R; ++r) m.push_back(r);
    auto access = [&](int r) { return p.replicas[static_cast<size_t>(std::clamp(r, 0, R - 1))]; };
    LinkSpec out{access(self).down_bps, 0};
    if (hops > 1 && m.size() > 1) out.bandwidth_bps = access(m[0]).up_bps;
    for (size_t i = 0; i < m.size(); ++i) {
        const AccessLink& a = access(m[i]);
        out.latency_s = std::max(out.latency_s, a.latency_s);
        if (hops > 1 && m.size() > 1)
            out.bandwidth_bps = std::min({out.bandwidth_bps, a.up_bps, access(m[(i + 1) % m.size()]).down_bps});
        else
            out.bandwidth_bps = std::min(out.bandwidth_bps, a.up_bps);
    }
    return out;
}

}  // namespace tw
