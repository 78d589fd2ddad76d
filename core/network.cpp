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
    for (int64_t r : n.relay_replicas) p->relay.replicas.push_back(static_cast<int>(r));
    p->relay.up_bps = n.relay_up_bps > 0 ? n.relay_up_bps : p->outer.bandwidth_bps;
    p->relay.down_bps = n.relay_down_bps > 0 ? n.relay_down_bps : p->outer.bandwidth_bps;
    p->relay.latency_s = n.relay_latency_s;
    if (n.intra_bandwidth_bps > 0) p->intra.bandwidth_bps = n.intra_bandwidth_bps;
    if (n.intra_latency_s > 0) p->intra.latency_s = n.intra_latency_s;
    if (n.stage_bandwidth_bps > 0) p->stage.bandwidth_bps = n.stage_bandwidth_bps;
    if (n.stage_latency_s > 0) p->stage.latency_s = n.stage_latency_s;
    return p;
}

LinkSpec round_link(const NetworkProfile& p, int self, const std::vector<int>& members, int64_t hops) {
    if (p.replicas.empty() && p.relay.replicas.empty()) return p.outer;
    const int R = static_cast<int>(p.replicas.size());
    std::vector<int> m = members;
    if (m.empty()) {
        int n = R;
        for (int r : p.relay.replicas) n = std::max(n, r + 1);
        for (int r = 0; r < n; ++r) m.push_back(r);
    }
    const size_t n = m.size();
    const auto relayed = [&](int r) {
        return std::find(p.relay.replicas.begin(), p.relay.replicas.end(), r) != p.relay.replicas.end();
    };
    const auto own = [&](int r) {
        return R == 0 ? AccessLink{p.outer.bandwidth_bps, p.outer.bandwidth_bps, p.outer.latency_s}
                      : p.replicas[static_cast<size_t>(std::clamp(r, 0, R - 1))];
    };
    const double relay_bps = std::min(p.relay.up_bps, p.relay.down_bps);
    LinkSpec out{0, 0};
    if (hops > 1 && n > 1) {
        // A ring: member i sends to i + 1; an edge between two relayed members crosses the relay,
        // which its e such edges share.
        const auto through_relay = [&](size_t i) { return relayed(m[i]) && relayed(m[(i + 1) % n]); };
        size_t e = 0;
        for (size_t i = 0; i < n; ++i) e += through_relay(i) ? 1 : 0;
        out.bandwidth_bps = own(m[0]).up_bps;
        for (size_t i = 0; i < n; ++i) {
            double edge = std::min(own(m[i]).up_bps, own(m[(i + 1) % n]).down_bps);
            if (through_relay(i)) edge = std::min(edge, relay_bps / static_cast<double>(e));
            out.bandwidth_bps = std::min(out.bandwidth_bps, edge);
            const bool on_relay = through_relay(i) || through_relay((i + n - 1) % n);
            out.latency_s = std::max(out.latency_s, own(m[i]).latency_s + (on_relay ? p.relay.latency_s : 0));
        }
        return out;
    }
    // A mesh: every member sends its payload to every other. Of the n − 1 payloads into a relayed
    // member, the k − 1 from the other relayed members cross the relay, which carries k·(k − 1) of
    // them in all; at a share of relay / k each, a relayed member takes its payloads in at
    // min(its own downlink, relay / k · (n − 1) / (k − 1)).
    const auto k = static_cast<size_t>(std::count_if(m.begin(), m.end(), relayed));
    const auto down = [&](int r) {
        const double d = own(r).down_bps;
        if (!relayed(r) || k < 2) return d;
        return std::min(d, relay_bps / static_cast<double>(k) * static_cast<double>(n - 1) / static_cast<double>(k - 1));
    };
    out.bandwidth_bps = down(self);
    for (int r : m) {
        out.bandwidth_bps = std::min(out.bandwidth_bps, own(r).up_bps);
        out.latency_s = std::max(out.latency_s, own(r).latency_s + (relayed(r) && k >= 2 ? p.relay.latency_s : 0));
    }
    return out;
}

}  // namespace tw
