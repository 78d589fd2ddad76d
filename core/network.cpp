// Named network profiles.
#include "core/network.h"

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
    if (n.intra_bandwidth_bps > 0) p->intra.bandwidth_bps = n.intra_bandwidth_bps;
    if (n.intra_latency_s > 0) p->intra.latency_s = n.intra_latency_s;
    if (n.stage_bandwidth_bps > 0) p->stage.bandwidth_bps = n.stage_bandwidth_bps;
    if (n.stage_latency_s > 0) p->stage.latency_s = n.stage_latency_s;
    return p;
}

}  // namespace tw
