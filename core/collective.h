// The byte-level collective an outer algorithm receives (docs/architecture.md §1: the engine never opens a
// socket). remote/ implements it over ZeroMQ; every byte that crosses a link is counted here.
#pragma once

#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "core/enum_names.h"
#include "core/membership.h"
#include "core/metric_names.h"
#include "core/status.h"

namespace tw {

// Link classes of docs/methods.md §10; values reach the DB as metric names, so keep them stable.
enum class LinkClass : uint8_t { kIntraReplica = 0, kInterStage = 1, kOuterSync = 2 };

inline constexpr EnumName<LinkClass> kLinkClassNames[] = {
    {LinkClass::kIntraReplica, "intra"}, {LinkClass::kInterStage, "stage"}, {LinkClass::kOuterSync, "outer"}};
static_assert(enum_table_complete(kLinkClassNames) && std::size(kLinkClassNames) == 3);

inline const char* to_string(LinkClass c) { return enum_name(kLinkClassNames, c); }

// Exact payload bytes and messages per link class and direction, as sent and received by one member.
struct ByteCounters {
    uint64_t sent_bytes[3] = {};
    uint64_t recv_bytes[3] = {};
    uint64_t sent_msgs[3] = {};
    uint64_t recv_msgs[3] = {};
    // A member that joined a relay (remote/relay.h): payload bytes and messages of every frame that
    // arrived at its own data port, by the link class in its header, counted or not (measurement,
    // state, attempts given up) — what the relay carried into it, past the 48-byte headers. Zero for
    // every other member.
    uint64_t relayed_recv_bytes[3] = {};
    uint64_t relayed_recv_msgs[3] = {};

    ByteCounters& operator+=(const ByteCounters& o) {
        for (int k = 0; k < 3; ++k) {
            sent_bytes[k] += o.sent_bytes[k], recv_bytes[k] += o.recv_bytes[k];
            sent_msgs[k] += o.sent_msgs[k], recv_msgs[k] += o.recv_msgs[k];
            relayed_recv_bytes[k] += o.relayed_recv_bytes[k], relayed_recv_msgs[k] += o.relayed_recv_msgs[k];
        }
        return *this;
    }
};

// The counters as metrics ("bytes.outer.sent", "bytes.stage.recv", ...: the names the run store
// keeps), in link-class order; `skip_idle` leaves out link classes that carried nothing.
inline std::vector<std::pair<std::string, double>> byte_metrics(const ByteCounters& c, bool skip_idle) {
    std::vector<std::pair<std::string, double>> out;
    for (int k = 0; k < 3; ++k) {
        if (skip_idle && c.sent_bytes[k] == 0 && c.recv_bytes[k] == 0) continue;
        const std::string base = metric::kBytesPrefix + std::string(to_string(static_cast<LinkClass>(k)));
        out.emplace_back(base + metric::kSentSuffix, static_cast<double>(c.sent_bytes[k]));
        out.emplace_back(base + metric::kRecvSuffix, static_cast<double>(c.recv_bytes[k]));
    }
    return out;
}

// A relayed member's relayed_recv_bytes as metrics ("relayed.outer.recv", ...), link classes that
// carried nothing left out: none at all for a member that did not join a relay.
inline std::vector<std::pair<std::string, double>> relayed_metrics(const ByteCounters& c) {
    std::vector<std::pair<std::string, double>> out;
    for (int k = 0; k < 3; ++k)
        if (c.relayed_recv_bytes[k] > 0)
            out.emplace_back(metric::kRelayedPrefix + std::string(to_string(static_cast<LinkClass>(k))) +
                                 metric::kRecvSuffix,
                             static_cast<double>(c.relayed_recv_bytes[k]));
    return out;
}

class Collective {
public:
    virtual ~Collective() = default;
    virtual int rank() const = 0;  // 0-based member index
    virtual int size() const = 0;  // members

    // Every member contributes `mine`; returns all members' payloads in rank order (own included,
    // not sent to itself). Payloads may differ in size. Blocks until all have arrived.
    // `sim_clock_s` is this member's simulated clock; if `clocks` is given it receives every
    // member's, in rank order (framing metadata, not counted as payload).
    virtual Result<std::vector<std::vector<uint8_t>>> all_gather(const std::vector<uint8_t>& mine, LinkClass link,
                                                                 double sim_clock_s = 0,
                                                                 std::vector<double>* clocks = nullptr) = 0;

    // The same among `group` only (ranks, ascending, this member included): NoLoCo's random groups.
    // Every member calls exchange (or all_gather) once per round, each with its own group, so rounds
    // stay aligned without a coordinator. Returns the group's payloads in the group's order; `clocks`
    // likewise.
    virtual Result<std::vector<std::vector<uint8_t>>> exchange(const std::vector<int>& group,
                                                               const std::vector<uint8_t>& mine, LinkClass link,
                                                               double sim_clock_s = 0,
                                                               std::vector<double>* clocks = nullptr) = 0;

    // Point to point (pipeline stages): messages from one peer arrive in the order it sent them,
    // apart from the all_gather/exchange rounds, so the two sides only have to agree on the order
    // of their own sends and receives. `sim_clock_s` travels with the message (framing, not
    // payload). `count` = false keeps measurement traffic (pipelined evaluation) out of the counters.
    virtual Status send(int peer, const std::vector<uint8_t>& payload, LinkClass link, double sim_clock_s,
                        bool count = true) = 0;
    // The next message from `peer`; its sender's clock goes to `sender_clock_s` when given.
    virtual Result<std::vector<uint8_t>> recv(int peer, double* sender_clock_s = nullptr) = 0;
    // The next message from any of `peers` (ranks, this member excluded), its sender in `from`:
    // a standby spare or a joining replica waiting for the state of whichever peer sends it (docs/
    // faults.md). Peers found lost or gone are skipped; while one of them lives the wait has no
    // backstop (their heartbeats keep it honest). Fails when every peer is lost or gone, or on
    // abort. Default: one peer only, through recv().
    virtual Result<std::vector<uint8_t>> recv_any(const std::vector<int>& peers, int* from,
                                                  double* sender_clock_s = nullptr) {
        if (peers.size() != 1) return Result<std::vector<uint8_t>>::error("collective: this transport receives from one peer at a time");
        if (from) *from = peers.front();
        return recv(peers.front(), sender_clock_s);
    }

    // After a round, the members of `group` (ascending ranks, this member included) compare
    // `state_hash`: a hash of what the algorithm says they must now hold identically. It travels as
    // framing (no payload bytes, not counted). Every member calls it for the same rounds with the
    // same group. The error names the members whose hash differs from the majority's (with two
    // members, the peer whose hash differs from this member's).
    virtual Status agree(const std::vector<int>& group, uint64_t state_hash) = 0;
    // Every member of `group` (ascending ranks, this member included) contributes one 64-bit word;
    // returns the group's words in its order. Framing only, like agree (no payload bytes, not
    // counted): the members of a round agree this way on which restarted replicas they admit
    // (docs/faults.md "Restarted nodes"). Default: a transport that cannot.
    virtual Result<std::vector<uint64_t>> gather_words(const std::vector<int>& group, uint64_t word) {
        (void)group, (void)word;
        return Result<std::vector<uint64_t>>::error("collective: this transport gathers no words");
    }

    virtual const ByteCounters& counters() const = 0;

    // Measured wall seconds of this member's rounds (all_gather, exchange) so far, each from the
    // moment the last of its members began sending until this member held every payload: the real
    // counterpart of the simulated communication time, waiting for late members left out.
    virtual double real_exchange_s() const = 0;
    // Adds `s` measured wall seconds to real_exchange_s(): a round made of point-to-point messages
    // (the ring all-reduce, engine/algo/ring_allreduce.h) counts its message phase here, after its
    // opening all-gather counted the wait for the last member. Default: ignored (not measured).
    virtual void add_real_exchange_s(double s) { (void)s; }

    // Who is in this member's rounds (core/membership.h): the transport's own when it can lose a
    // member, otherwise one in which nobody is ever lost. Owned by the transport.
    virtual Membership& membership() { return Membership::never_lost(); }
};

}  // namespace tw
