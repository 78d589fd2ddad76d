// The one rule for a synchronisation round's simulated time (docs/methods.md §10): when it ends
// for a node and how its clock takes that end. The workers call it as each round ends, the replay
// (core/timeline.h, `runs retime`) for each stored round, and so the planner (engine/plan), which
// replays modelled traces: a run re-timed on the network it ran on reproduces its clocks bit for
// bit because all three run this arithmetic.
//
// Units: seconds of simulated time, bytes. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "core/collective.h"
#include "core/network.h"
#include "core/sim_clock.h"
#include "core/topology.h"

namespace tw {

enum class RoundKind {
    // DDP's all-reduce inside every step: every node of the run waits for it.
    kStepCollective,
    // An outer algorithm's round between replicas (the whole model): waited for at once, or, when
    // overlapped (Streaming DiLoCo's τ), due some steps later.
    kOuter,
    // A node's stage rounds of a run with pipeline replicas: its uplink carries its payloads of every
    // slice it holds back to back after the slowest holder of any of them.
    kStages,
};

struct RoundTiming {
    RoundKind kind = RoundKind::kOuter;
    // The link class the round's bytes travel (kStepCollective: intra-replica when the run is one
    // DDP replica, else outer; the others: outer).
    LinkClass link = LinkClass::kOuterSync;
    int self = 0;                // this node's replica
    std::vector<int> members;    // the round's replicas, ascending (empty = every replica)
    std::vector<double> clocks;  // the members' clocks at the round's start, in members' order (non-empty)
    uint64_t bytes = 0;          // what this node recorded for the round (sent, and for a hub received)
    int64_t hops = 1;            // sequential steps of its exchange (a mesh 1, a ring 2·(R−1))
};

// This node's clock at the round's end (round_end_s / outer_round_end_s of core/sim_clock.h).
double round_end(const NetworkProfile& net, Topology topology, const RoundTiming& r);

// The round's end taken by `clock` at `step`: kStepCollective finishes the round there
// (SimClock::finish_round_at); kOuter waits for it, or with `overlap_steps` > 0 defers it to step +
// overlap_steps; kStages waits for it. Returns the wait it exposed now (0 when deferred).
double close_round(SimClock& clock, RoundKind kind, double end_s, int64_t step = 0, int64_t overlap_steps = 0);

}  // namespace tw
