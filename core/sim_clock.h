// One node's simulated clock (docs/methods.md §10). Every worker advances one live (compute segments,
// messages on a link, waits for peers, synchronisation rounds), and re-timing replays stored
// traces through the same object (core/timeline.h), so a run re-timed on the network it ran on
// reproduces its recorded clocks bit for bit: there is one copy of the arithmetic.
//
// Units: seconds of simulated time, bytes, bits per second (LinkSpec). Not thread-safe; a clock
// belongs to one worker (or one replayed node).
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "core/network.h"
#include "core/topology.h"

namespace tw {

// The clock rule of one synchronisation round: it starts when the slowest member arrives (the
// maximum of `clocks`, non-empty) and this member's uplink then carries `bytes` back to back in
// `hops` sequential steps, each paying the link's latency (an all-gather over a mesh is one hop; a
// ring all-reduce over R members is 2·(R−1)). Returns this member's clock after the round.
double round_end_s(const std::vector<double>& clocks, const LinkSpec& link, uint64_t bytes, int64_t hops = 1);

// The end of one outer round between replicas for replica `self`: round_end_s over the members'
// round link (round_link), except a hub round (outer.topology = "hub") when replicas have access
// links of their own, which is costed by phase: every member's upload of its payload (bytes / R,
// every payload of a round having the same size) leaves at its own clock over its own uplink, and
// `self` downloads the R − 1 others' over its downlink once the last upload is in:
//   max_j(clocks[j] + latency_j + 8·payload/up_j) + latency_self + 8·(R − 1)·payload/down_self.
// The hub's own link is not modelled (object storage or a datacenter host), and a hub round never
// crosses a relay (network.relay_replicas): relayed nodes dial the hub themselves. `clocks` are the
// members' clocks in the order of `members` (empty members = every replica, clocks in replica
// order); `bytes` is what `self` recorded for the round (upload + downloads for a hub).
double outer_round_end_s(const NetworkProfile& p, Topology topology, int self, const std::vector<int>& members,
                         const std::vector<double>& clocks, uint64_t bytes, int64_t hops);

// The cost a round reports as its communication time: latency·hops + 8·bytes/bandwidth.
inline double round_comm_s(const LinkSpec& link, uint64_t bytes, int64_t hops) {
    return transfer_s(link, bytes) + static_cast<double>(hops - 1) * link.latency_s;
}

// Everything a SimClock holds, for a checkpoint (engine/worker/run_checkpoint.h): restoring it
// continues the clock exactly where it stood, overlapped rounds still due included.
struct SimClockState {
    double now_s = 0, compute_s = 0, exposed_s = 0, sync_exposed_s = 0, uplink_free_s = 0;
    std::vector<std::pair<int64_t, double>> due;  // (step, end) of overlapped rounds not yet settled
};

class SimClock {
public:
    SimClockState state() const {
        return {now_s_, compute_s_, exposed_s_, sync_exposed_s_, uplink_free_s_, {due_.begin(), due_.end()}};
    }
    void restore(const SimClockState& s) {
        now_s_ = s.now_s, compute_s_ = s.compute_s, exposed_s_ = s.exposed_s, sync_exposed_s_ = s.sync_exposed_s;
        uplink_free_s_ = s.uplink_free_s;
        due_ = {s.due.begin(), s.due.end()};
    }

    double now_s() const { return now_s_; }
    double compute_s() const { return compute_s_; }          // total compute so far
    double exposed_s() const { return exposed_s_; }          // total waiting (messages, rounds, due results)
    double sync_exposed_s() const { return sync_exposed_s_; }  // the part of exposed_s spent in outer rounds

    // A compute segment of `s` measured seconds.
    void compute(double s) {
        now_s_ += s;
        compute_s_ += s;
    }

    // ---- point to point (pipeline stages) ----
    // A message of `bytes` leaves when this node's uplink is free (the node's compute is not
    // blocked: an asynchronous send only occupies the link), occupies it for 8·bytes/bandwidth and
    // arrives one latency after its last bit. Returns the arrival time, which travels with the
    // message to the receiver.
    double send(const LinkSpec& link, uint64_t bytes);
    // The receiver of a message that arrives at `arrival_s` waits for it.
    void receive(double arrival_s) { wait_until(arrival_s); }

    // ---- synchronisation rounds ----
    // A round whose end (round_end_s) is `end_s` and which every member waits for (DDP's
    // all-reduce: its end is never before this clock). Returns the time waited.
    double finish_round_at(double end_s);
    // A round of an outer algorithm ending at `end_s`: the clock waits for it if it is later
    // (`now += max(0, end − now)`, the form the workers have always used, kept so that runs
    // recorded before this object existed replay bit for bit). Returns the time waited.
    double wait_for_round(double end_s);
    // An overlapped round (Streaming DiLoCo's τ): its result, ready at `end_s`, is applied at step
    // `due_step`; the clock waits for it then (settle_due), if at all.
    void defer(int64_t due_step, double end_s) { due_.emplace(due_step, end_s); }
    // Results due at `step` that have not arrived yet: the clock waits for the latest.
    void settle_due(int64_t step);

    // A replica's other nodes receive its leader's clock (sent as fp32 inside the weights'
    // broadcast) and the weights over the intra-replica link: this clock becomes
    // max(own end, leader's fp32 clock) + transfer_s(link, bytes). Returns the new clock.
    double follow_leader(double own_end_s, float leader_clock_s, const LinkSpec& link, uint64_t bytes);

    // Jumps to `t` when it is later, counting the difference as waiting.
    void wait_until(double t) {
        if (t > now_s_) exposed_s_ += t - now_s_, now_s_ = t;
    }

private:
    double now_s_ = 0, compute_s_ = 0, exposed_s_ = 0, sync_exposed_s_ = 0;
    double uplink_free_s_ = 0;               // when this node's uplink has sent its last queued bit
    std::multimap<int64_t, double> due_;     // step → end of an overlapped transfer
};

}  // namespace tw
