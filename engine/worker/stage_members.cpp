// Stage round membership; see stage_members.h.
#include "engine/worker/stage_members.h"

#include <algorithm>
#include <cmath>

namespace tw {

uint64_t replica_mask(const std::vector<int>& replicas) {
    uint64_t m = 0;
    for (int r : replicas)
        if (r >= 0 && r < kMaxMaskReplicas) m |= uint64_t{1} << r;
    return m;
}

std::vector<int> mask_replicas(uint64_t mask) {
    std::vector<int> out;
    for (int r = 0; r < kMaxMaskReplicas; ++r)
        if (mask >> r & 1) out.push_back(r);
    return out;
}

Result<uint64_t> mask_from_wire(double v, int64_t replicas) {
    const int64_t n = std::min<int64_t>(std::max<int64_t>(replicas, 0), kMaxMaskReplicas);
    const double limit = std::ldexp(1.0, static_cast<int>(n));  // 2^n: every mask of n replicas is below it
    if (!std::isfinite(v) || v < 0 || v >= limit || v != std::floor(v))
        return Result<uint64_t>::error("stage round: a member's set of present replicas (" + std::to_string(v) +
                                       ") is not a mask of " + std::to_string(n) + " replicas");
    return static_cast<uint64_t>(v);
}

Result<ViewCheck> check_views(uint64_t mine, const std::vector<double>& sent, int64_t replicas) {
    ViewCheck out;
    uint64_t meet = mine;
    for (double v : sent) {
        auto m = mask_from_wire(v, replicas);
        if (!m) return m.status();
        if (*m != mine && out.agreed) out.other = mask_replicas(*m);
        out.agreed = out.agreed && *m == mine;
        meet &= *m;
    }
    out.present = mask_replicas(meet);
    return out;
}

}  // namespace tw
