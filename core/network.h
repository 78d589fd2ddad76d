// The network and time model of docs/methods.md §10: per link class a bandwidth and a latency; a
// message costs latency + 8·bytes/bandwidth of simulated time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/algorithm.h"
#include "core/collective.h"
#include "core/config.h"
#include "core/status.h"

namespace tw {

struct LinkSpec {
    double bandwidth_bps = 1e9;  // bits per second
    double latency_s = 0.02;     // one-way
};

// A replica's access link for traffic between replicas (a participant on its own site, e.g. a home
// line with 500 Mb/s down and 110 Mb/s up). Its nodes share it; links inside a replica (intra,
// stage) are not affected.
struct AccessLink {
    double up_bps = 1e9, down_bps = 1e9;  // bits per second
    double latency_s = 0.02;               // one-way
};

// A relay (docs/relay.md) and the replicas peers reach only through it: every byte into a relayed
// replica between replicas enters the relay on its downlink and leaves on its uplink.
struct RelayLink {
    std::vector<int> replicas;             // relayed replica indices; empty = no relay
    double up_bps = 1e9, down_bps = 1e9;  // bits per second
    double latency_s = 0;                  // one-way, added to a relayed replica's own
};

struct NetworkProfile {
    std::string name;
    LinkSpec intra;  // inside a full replica
    LinkSpec stage;  // between pipeline stages
    LinkSpec outer;  // between replicas (outer sync)
    std::vector<AccessLink> replicas;  // per replica; empty = every replica on `outer` both ways
    RelayLink relay;
};

// Named profiles: datacenter (100 Gb/s, 10 µs), wan-1g (1 Gb/s, 20 ms), wan-100m (100 Mb/s, 30 ms),
// home-20m (20 Mb/s up, 40 ms). Inside a replica every profile keeps datacenter links.
Result<NetworkProfile> network_profile(const std::string& name);
// The same, with the outer link's bandwidth and latency replaced where the override is > 0.
Result<NetworkProfile> network_profile(const std::string& name, double outer_bandwidth_bps, double outer_latency_s);

// The run's profile with every link override of [network] applied.
Result<NetworkProfile> network_profile(const NetworkConfig& net);

// The link class of a run's synchronisation rounds: DDP inside a single replica all-reduces over
// the intra-replica link; every other round (DDP across replicas, the outer algorithms) crosses
// replicas on the outer link. The one place this rule lives.
inline LinkClass round_link_class(const RunConfig& c) {
    return algorithm_of(c) == Algorithm::kDdp && c.outer.replicas == 1 ? LinkClass::kIntraReplica
                                                                        : LinkClass::kOuterSync;
}
inline const LinkSpec& link_of(const NetworkProfile& p, LinkClass c) {
    return c == LinkClass::kIntraReplica ? p.intra : c == LinkClass::kInterStage ? p.stage : p.outer;
}

// The link one synchronisation round among `members` (replica indices, ascending; empty = every
// replica) costs replica `self`, for round_end_s / round_comm_s. Without per-replica links: `outer`,
// unchanged. With them, every payload of a round having the same size (true of every algorithm
// here: dense tensors, fixed top-k counts):
//   an all-gather over the mesh (hops = 1): each member's uplink carries its copies to the others
//   while `self`'s downlink takes in as many bytes from them, so the round moves at
//   min(self's downlink, every member's uplink);
//   a ring (hops > 1): every step waits for its slowest edge, min over j of min(up_j, down_{j+1});
// and a transfer pays the largest latency among the members.
// Through a relay (p.relay): where one side of a pair is reachable the other dials it, so only the
// payloads between two relayed members cross the relay (its rate: min(relay up, relay down)), and
// such members pay its latency on top of their own. In a mesh of n with k relayed, the relay carries
// k·(k − 1) payloads, a share of relay / k for each relayed member's k − 1, so a relayed member's
// downlink counts as min(its own, relay / k · (n − 1) / (k − 1)) (its own for k < 2); in a ring,
// the e edges between two relayed members share the relay, each at most relay / e.
LinkSpec round_link(const NetworkProfile& p, int self, const std::vector<int>& members, int64_t hops);

// Seconds for `bytes` sent back to back over one link: latency + 8·bytes/bandwidth.
inline double transfer_s(const LinkSpec& l, uint64_t bytes) {
    return l.latency_s + 8.0 * static_cast<double>(bytes) / l.bandwidth_bps;
}

}  // namespace tw
