// A synchronisation round's simulated time; see round_clock.h.
#include "core/round_clock.h"

namespace tw {

double round_end(const NetworkProfile& net, Topology topology, const RoundTiming& r) {
    switch (r.kind) {
        case RoundKind::kStages:
            return round_end_s(r.clocks, round_link(net, r.self, r.members, r.hops), r.bytes, r.hops);
        case RoundKind::kStepCollective:
        case RoundKind::kOuter:
            // Between replicas, over their access links (core/network.h round_link; a hub by phase).
            if (r.link == LinkClass::kOuterSync)
                return outer_round_end_s(net, topology, r.self, r.members, r.clocks, r.bytes, r.hops);
            return round_end_s(r.clocks, link_of(net, r.link), r.bytes, r.hops);
    }
    return r.clocks.empty() ? 0 : r.clocks.front();  // unreachable: every kind is handled above
}

double close_round(SimClock& clock, RoundKind kind, double end_s, int64_t step, int64_t overlap_steps) {
    switch (kind) {
        case RoundKind::kStepCollective:
            return clock.finish_round_at(end_s);
        case RoundKind::kOuter:
            if (overlap_steps > 0) {  // training goes on; the clock waits then (settle_due)
                clock.defer(step + overlap_steps, end_s);
                return 0;
            }
            return clock.wait_for_round(end_s);
        case RoundKind::kStages:
            return clock.wait_for_round(end_s);
    }
    return 0;
}

}  // namespace tw
