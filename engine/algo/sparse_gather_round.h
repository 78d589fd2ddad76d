// One outer round of the methods whose replicas send sparse payloads to every peer (SparseLoCo,
// DeMo): each replica encodes its own payload, all-gathers everyone's over the outer link and
// applies them. A replica whose encoding fails sends an empty payload first, so its peers fail at
// once naming it instead of waiting. Bytes: (R − 1) × its own payload; one hop. With
// outer.topology = "hub" the payloads go through the run's relay instead (core/hub_exchange.h):
// each replica uploads its own once and downloads the R − 1 others', and applies exactly the same
// list in the same order; round.bytes = payload + (R − 1) × payload (what crosses its link), two
// hops (upload, then download). The caller adds what only it knows (guard_clipped).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/collective.h"
#include "core/status.h"
#include "core/topology.h"
#include "engine/algo/outer.h"
#include "engine/codec/codec.h"

namespace tw {

struct SparseGatherRound {
    const char* algorithm;  // for messages, e.g. "sparseloco"
    int replica = 0, replicas = 1;
    std::function<Status(std::vector<uint8_t>&)> encode;                       // fills this replica's payload
    std::function<Status(const std::vector<std::vector<uint8_t>>&)> apply;     // every replica's, in rank order
    Topology topology = Topology::kMesh;                                       // mesh or hub
};

// The aggregation guard (engine/algo/aggregation_guard.h) over decoded payloads dec[replica][tensor]:
// one factor per replica, from the L2 norm of all its values (sequential double sums, so every
// replica computes the same bits). All 1 when ratio ≤ 0; `clipped` receives how many were scaled.
std::vector<float> sparse_payload_guard(const std::vector<std::vector<SparsePayload>>& dec, double ratio,
                                        int& clipped);

// `mine` receives this replica's payload (kept by the caller for tests and replays).
Result<RoundReport> sparse_gather_round(const SparseGatherRound& round, std::vector<uint8_t>& mine, Collective& c,
                                        double sim_clock_s);

}  // namespace tw
