// The in-process link shaper (`network.shape = true`): makes a node's data-plane sends as slow as
// the layout's network says, without `tc`, so a live run on one machine shows the real slowness.
// Per link class one uplink modelled as a token bucket at the link's bandwidth: a message of n
// bytes occupies the uplink for 8·n/bandwidth seconds after the previous one left, and leaves the
// sender one latency after its last bit — the network model's cost (core/network.h), latency +
// 8·bytes/bandwidth for bytes sent back to back, paid in wall time before the send.
//
// Pure bookkeeping: release_at() says when a message may go; the mesh (remote/zmq_collective.h)
// sleeps until then. Not thread-safe: one sender (the worker thread) uses it.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>

#include "core/collective.h"
#include "core/network.h"

namespace tw {

class LinkShaper {
public:
    using Clock = std::chrono::steady_clock;
    // Links indexed by LinkClass (intra, stage, outer).
    explicit LinkShaper(std::array<LinkSpec, 3> links) : links_(links) {}

    // When a message of `bytes` over `link`, handed over at `now`, may be sent: its last bit
    // leaves the uplink at max(now, uplink free) + 8·bytes/bandwidth; it arrives one latency later.
    // Books the uplink until the last bit has left.
    Clock::time_point release_at(LinkClass link, size_t bytes, Clock::time_point now);

    const LinkSpec& link(LinkClass c) const { return links_[static_cast<size_t>(c)]; }

private:
    std::array<LinkSpec, 3> links_;
    std::array<Clock::time_point, 3> free_at_{};  // when each uplink has sent its last booked bit
};

}  // namespace tw
