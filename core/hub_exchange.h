// The hub topology's round as the engine sees it (outer.topology = "hub", docs/topologies.md): a
// transport that can reach the run's relay (remote/hub_relay.h) implements this beside Collective,
// so the engine never opens a socket. One call per outer round, every member of the round in the
// same order; a round may be among some of the transport's members (the survivors of a loss,
// docs/faults.md), and the relay waits for those only.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"

namespace tw {

class HubExchange {
public:
    virtual ~HubExchange() = default;
    // Uploads `mine` once to the relay and downloads the other members' payloads: returns every
    // member's payload in rank order (this member's own included, not sent back). `clocks`
    // receives every member's simulated clock at its upload (framing, not payload). The transport
    // counts the bytes on the outer-sync link: sent = mine, received = the others'.
    virtual Result<std::vector<std::vector<uint8_t>>> hub_round(const std::vector<uint8_t>& mine, double sim_clock_s,
                                                                std::vector<double>* clocks) = 0;
    // The same among `members` only: ranks of this transport, ascending, this member's among them
    // (at most 64 ranks, below 64). Returns their payloads and clocks in that order. Every member of
    // the round names the same list. Fails, rather than waiting on, when a member of the round is
    // lost or gives the attempt up, as the transport's own rounds do.
    virtual Result<std::vector<std::vector<uint8_t>>> hub_round_among(const std::vector<int>& members,
                                                                      const std::vector<uint8_t>& mine,
                                                                      double sim_clock_s,
                                                                      std::vector<double>* clocks) = 0;
    // False when the transport was built without a relay (the role named none).
    virtual bool has_hub() const = 0;
};

}  // namespace tw
