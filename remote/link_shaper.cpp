// Token-bucket bookkeeping of the in-process shaper; see link_shaper.h.
#include "remote/link_shaper.h"

#include <algorithm>

namespace tw {

LinkShaper::Clock::time_point LinkShaper::release_at(LinkClass link, size_t bytes, Clock::time_point now) {
    const size_t i = static_cast<size_t>(link);
    const LinkSpec& l = links_[i];
    const auto start = std::max(now, free_at_[i]);
    const auto on_wire = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(8.0 * static_cast<double>(bytes) / l.bandwidth_bps));
    free_at_[i] = start + on_wire;
    return free_at_[i] + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(l.latency_s));
}

}  // namespace tw
