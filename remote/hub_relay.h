// The hub topology's relay (outer.topology = "hub", docs/topologies.md): every member of an outer
// round uploads its payload once; the relay answers each member's download with the other members'
// payloads, in rank order, once all of the round's uploads are in. A round is among the members
// its requests name (all replicas, or the survivors of a loss: docs/faults.md), not the run's
// full membership. Torch-free: it sees payloads only as bytes. HubRelay is a ROUTER on its own
// thread (the coordinator's or a `thinwire hub` process's); HubClient is one member's DEALER.
//
// Wire format (version 3, little-endian; version 2 had no member mask and a 48-byte header).
// Request: a 56-byte header frame — magic "TWHB", version, op (1 upload, 2 download), 2 zero bytes,
// rank (u32), members (u32: the run's replicas), round (u64), payload length (u64; 0 for a
// download), sender's simulated clock (f64), the run's data-plane token (u64, handed to members with
// their role), the round's members (u64 bit mask: bit r = rank r; at most 64 members) — and, for an
// upload, one payload frame of exactly that length. Reply: a 16-byte header frame — magic,
// version, op, status (0 ok, 1 refused, 2 given up), 1 zero byte, round (u64) — then for an upload
// nothing (ok) or the error text; for a download one frame of the round's members' clocks (f64,
// rank order) and their payloads except the downloader's own, in rank order, or (given up) why.
//
// Rounds. A member's round numbers only go up, not necessarily by one: they are its transport's
// round numbers (Membership::begin_epoch), so an attempt redone after a loss is a new, larger
// round. The relay answers a download of round n once every member the round's mask names has
// uploaded n. Every member of a round names the same mask. A member that uploads a later round
// without having downloaded its previous one gave that round up (its attempt was abandoned): the
// round is dropped and whoever waits for it, or asks for it later, gets a "given up" reply naming
// who moved on. So every round the relay holds is some member's newest upload: at most `members`
// rounds of at most `members` payloads each.
//
// Trust. Messages are untrusted. A request is refused, with an error reply naming the problem,
// when its header does not parse, its version or token is not the run's, its rank or member count
// is not the relay's, (with CurveZMQ) it was not sent with that rank's key, its mask names a rank
// outside the run or leaves out the sender, its mask differs from the one the round's first upload
// named (both named), an upload's round is not after the member's newest (a second upload of a
// round included), a download asks for a round that is not the one it uploaded last or asks twice,
// or its payload length disagrees with its frame or exceeds the limit; the relay keeps serving
// everyone else. A frame more than 64 KiB over the payload limit is dropped by ZeroMQ
// (ZMQ_MAXMSGSIZE) with the sender's connection, unread. With keys (HubRelayOptions::keys), the
// relay is a CURVE server on a context of its own whose ZAP handler admits only the members' keys
// (domain "hub"); clients check the relay's public key.
//
// Bytes: the relay counts every payload byte it receives (uploads) and sends (downloads) on the
// outer-sync link, as a member's transport does.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/collective.h"
#include "core/status.h"
#include "remote/curve.h"
#include "remote/router_server.h"
#include "remote/zmq_fwd.h"


namespace tw {

// A round names its members in a 64-bit mask: a hub run has at most this many replicas.
constexpr int kMaxHubMembers = 64;

struct HubRelayOptions {
    int members = 0;                                 // replicas of the run (2..kMaxHubMembers)
    uint64_t max_payload_bytes = uint64_t{1} << 30;  // an upload longer than this is refused
    std::function<void(const std::string&)> log;     // refusals, one line each; may be empty
    uint64_t token = 0;                              // the run's data-plane token; requests must carry it
    // CurveZMQ: the relay's keypair (the coordinator's) and member r's public key at [r]; both empty
    // = plaintext (thread and child-process runs without keys).
    CurveKeyPair keys;
    std::vector<std::string> member_keys;
};

// A member's way to the relay.
struct HubClientOptions {
    std::string endpoint;    // the relay's, as the role names it
    int rank = 0, members = 0;
    uint64_t token = 0;      // the run's data-plane token
    CurveKeyPair own;        // this node's keypair; empty = plaintext
    std::string relay_key;   // the relay's public key (Z85); required with `own`
};

class HubRelay {
public:
    // Binds `endpoint` (tcp://HOST:PORT, tcp://HOST:*, inproc://, ipc://) and serves it on a new
    // thread: on `ctx` without keys; with keys on a context of its own (one ZAP handler per
    // context, and a thread-mode coordinator shares `ctx` with its nodes).
    static Result<std::unique_ptr<HubRelay>> start(std::shared_ptr<zmq::context_t> ctx, const std::string& endpoint,
                                                   HubRelayOptions opts);
    ~HubRelay();

    const std::string& endpoint() const { return server_.endpoint(); }  // as bound (a real port)
    uint64_t refused() const { return refused_.load(); }
    // Rounds the relay holds now (each some member's newest: at most `members`). Updated before
    // the relay acknowledges the upload or answers the download that changed it.
    size_t held_rounds() const { return held_rounds_.load(); }
    // Payload bytes received (uploads) and sent (downloads), counted on the outer-sync link.
    ByteCounters counters() const;
    // The coordinator's word on rank `rank` (< 64): counted lost (`out`), its requests are refused
    // — a process that was only paused must not open or join a round its peers hold without it —
    // until it is taken back (a restarted process, admitted). Thread-safe.
    void fence(int rank, bool out) {
        if (rank < 0 || rank >= 64) return;
        if (out) fenced_.fetch_or(uint64_t{1} << rank);
        else fenced_.fetch_and(~(uint64_t{1} << rank));
    }

private:
    HubRelay() = default;
    void serve();

    std::shared_ptr<zmq::context_t> ctx_;
    std::unique_ptr<ZapHandler> zap_;  // with keys: the relay's own context's ZAP handler
    RouterServer server_;              // the socket and the thread serving it
    HubRelayOptions opts_;
    std::atomic<uint64_t> refused_{0};
    std::atomic<uint64_t> fenced_{0};  // ranks counted lost (fence)
    std::atomic<size_t> held_rounds_{0};
    mutable std::mutex counters_mu_;
    ByteCounters counters_;
};

// What HubClient::poll_round found: nothing yet, the round's payloads, or that the round was given
// up (a member of it moved on; `why` names it).
struct HubPoll {
    enum State { kPending, kDone, kGivenUp } state = kPending;
    std::vector<std::vector<uint8_t>> all;  // kDone: the members' payloads in rank order, its own included
    std::string why;                        // kGivenUp: the relay's text
};

// One member's side. Not thread-safe (one per member).
class HubClient {
public:
    static Result<std::unique_ptr<HubClient>> connect(std::shared_ptr<zmq::context_t> ctx, HubClientOptions o);
    ~HubClient();

    // One round among `mask`'s members (bit r = rank r, this member's included): uploads `mine` for
    // round `round` (after this member's previous one), then downloads the others'. Returns the
    // members' payloads in rank order (its own included, not sent back); `clocks` receives the
    // members' simulated clocks in the same order. Fails (naming the relay's reason) on a refusal or
    // a round given up, after `timeout_ms` without an answer, or when `abort` (checked every
    // 100 ms; may be empty) says so.
    Result<std::vector<std::vector<uint8_t>>> round(uint64_t round, uint64_t mask, const std::vector<uint8_t>& mine,
                                                    double sim_clock_s, std::vector<double>* clocks,
                                                    int64_t timeout_ms = 600000,
                                                    const std::function<bool()>& abort = {});
    // The same in two halves, for a caller that watches its peers while it waits: begin_round
    // uploads (waiting up to `timeout_ms` for the relay's acknowledgement) and asks for the
    // download; poll_round waits up to `wait_ms` for the answer. A round given up by a new
    // begin_round is left behind: its late answer is skipped.
    Status begin_round(uint64_t round, uint64_t mask, const std::vector<uint8_t>& mine, double sim_clock_s,
                       int64_t timeout_ms, const std::function<bool()>& abort = {});
    Result<HubPoll> poll_round(int64_t wait_ms, std::vector<double>* clocks);

    // Sends one raw upload request (header fields as given, payload as given; the token is this
    // client's; mask 0 = every member) and returns the relay's answer: ok, or its error text. For
    // tests of the relay's checks.
    Status raw_upload(uint32_t rank, uint32_t members, uint64_t round, uint64_t declared_len,
                      const std::vector<uint8_t>& payload, int64_t timeout_ms = 10000, uint64_t mask = 0);
    // The same for a download request.
    Status raw_download(uint32_t rank, uint32_t members, uint64_t round, int64_t timeout_ms = 10000,
                        uint64_t mask = 0);

    const ByteCounters& counters() const { return counters_; }

private:
    HubClient() = default;

    std::shared_ptr<zmq::context_t> ctx_;
    std::unique_ptr<zmq::socket_t> sock_;
    HubClientOptions o_;
    ByteCounters counters_;
    // The round begun and not yet answered (begin_round → poll_round).
    bool pending_ = false;
    uint64_t round_ = 0, mask_ = 0;
    std::vector<uint8_t> mine_;
};

}  // namespace tw
