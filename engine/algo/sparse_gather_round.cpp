// The sparse methods' all-gather round; see sparse_gather_round.h.
#include "engine/algo/sparse_gather_round.h"

#include <cmath>
#include <string>

#include "core/hub_exchange.h"
#include "engine/algo/aggregation_guard.h"

namespace tw {

std::vector<float> sparse_payload_guard(const std::vector<std::vector<SparsePayload>>& dec, double ratio,
                                        int& clipped) {
    clipped = 0;
    if (ratio <= 0) return std::vector<float>(dec.size(), 1.0f);
    std::vector<double> norms;
    for (const auto& payload : dec) {
        double s = 0;
        for (const SparsePayload& t : payload)
            for (float v : t.value) s += static_cast<double>(v) * v;
        norms.push_back(std::sqrt(s));
    }
    return norm_clip_scales(norms, ratio, NormReference::kLowerMedianOfOthers, &clipped);
}

Result<RoundReport> sparse_gather_round(const SparseGatherRound& r, std::vector<uint8_t>& mine, Collective& c,
                                        double sim_clock_s) {
    // The round's members are the collective's: all replicas, or the survivors (docs/faults.md).
    if (c.size() > r.replicas)
        return Result<RoundReport>::error(std::string(r.algorithm) + ": built for " + std::to_string(r.replicas) +
                                          " replicas, the collective has " + std::to_string(c.size()) + " members");
    RoundReport rep;
    rep.synced = true;
    if (r.topology == Topology::kHub) {
        auto* hub = dynamic_cast<HubExchange*>(&c);
        if (!hub || !hub->has_hub())
            return Result<RoundReport>::error(std::string(r.algorithm) +
                                              ": outer.topology = hub, but this transport reaches no hub relay");
        if (Status s = r.encode(mine); !s) {
            // An empty upload tells the peers at once; they fail naming this replica.
            (void)hub->hub_round({}, sim_clock_s, nullptr);
            return s;
        }
        auto all = hub->hub_round(mine, sim_clock_s, &rep.clocks);
        if (!all) return all.status();
        if (Status s = r.apply(*all); !s) return s;
        rep.bytes_sent = static_cast<uint64_t>(c.size()) * mine.size();  // upload + (R − 1) downloads
        rep.hops = 2;
        return rep;
    }
    if (Status s = r.encode(mine); !s) {
        // An empty payload tells the peers at once; they fail with a message naming this replica.
        (void)c.all_gather({}, LinkClass::kOuterSync, sim_clock_s, nullptr);
        return s;
    }
    auto all = c.all_gather(mine, LinkClass::kOuterSync, sim_clock_s, &rep.clocks);
    if (!all) return all.status();
    if (Status s = r.apply(*all); !s) return s;
    rep.bytes_sent = static_cast<uint64_t>(c.size() - 1) * mine.size();
    rep.hops = 1;
    return rep;
}

}  // namespace tw
