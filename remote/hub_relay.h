// The hub topology's relay (outer.topology = "hub", docs/topologies.md): every member of an outer
// round uploads its payload once; the relay answers each member's download with the other members'
// payloads, in rank order, once all of the round's uploads are in. Torch-free: it sees payloads
// only as bytes. HubRelay is a ROUTER on its own thread (the coordinator's or a `thinwire hub`
// process's); HubClient is one member's DEALER.
//
// Wire format (version 2, little-endian). Request: a 48-byte header frame — magic "TWHB", version,
// op (1 upload, 2 download), 2 zero bytes, rank (u32), members (u32), round (u64), payload length
// (u64; 0 for a download), sender's simulated clock (f64), the run's data-plane token (u64, handed
// to members with their role) — and, for an upload, one payload frame of exactly that length.
// Reply: a 16-byte header frame — magic, version, op, status (0 ok, 1 refused), 1 zero byte, round
// (u64) — then for an upload nothing (ok) or the error text; for a download one frame of `members`
// clocks (f64, rank order) and the members' payloads except the downloader's own, in rank order.
//
// Trust. Messages are untrusted. A request is refused, with an error reply naming the problem,
// when its header does not parse, its token is not the run's, its rank or member count is not the
// relay's, (with CurveZMQ) it was not sent with that rank's key, its round is not the member's next
// one (uploads go 0, 1, 2, …, and a member uploads round n + 1 only after downloading round n, so
// the relay holds at most two rounds per member), a download asks for a round it did not upload,
// its payload length disagrees with its frame or exceeds the limit, or it uploads a round twice;
// the relay keeps serving everyone else. A frame more than 64 KiB over the payload limit is
// dropped by ZeroMQ (ZMQ_MAXMSGSIZE) with the sender's connection, unread. With keys
// (HubRelayOptions::keys), the relay is a CURVE server on a context of its own whose ZAP handler
// admits only the members' keys (domain "hub"); clients check the relay's public key.
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
#include <thread>
#include <vector>

#include "core/collective.h"
#include "core/status.h"
#include "remote/curve.h"
#include "remote/router_server.h"

namespace zmq {
class context_t;
class socket_t;
}  // namespace zmq

namespace tw {

struct HubRelayOptions {
    int members = 0;                                 // replicas of the run (≥ 2)
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

    const std::string& endpoint() const { return router_.endpoint; }  // as bound (a real port)
    uint64_t refused() const { return refused_.load(); }
    // Payload bytes received (uploads) and sent (downloads), counted on the outer-sync link.
    ByteCounters counters() const;

private:
    HubRelay() = default;
    void serve();

    std::shared_ptr<zmq::context_t> ctx_;
    std::unique_ptr<ZapHandler> zap_;  // with keys: the relay's own context's ZAP handler
    BoundRouter router_;               // its socket is the serving thread's
    HubRelayOptions opts_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::atomic<uint64_t> refused_{0};
    mutable std::mutex counters_mu_;
    ByteCounters counters_;
};

// One member's side. Not thread-safe (one per member).
class HubClient {
public:
    static Result<std::unique_ptr<HubClient>> connect(std::shared_ptr<zmq::context_t> ctx, HubClientOptions o);
    ~HubClient();

    // One round: uploads `mine` for round `round` (the next one), then downloads the others'.
    // Returns every member's payload in rank order (its own included, not sent back); `clocks`
    // receives every member's simulated clock. Fails (naming the relay's reason) on a refusal,
    // after `timeout_ms` without an answer, or when `abort` (checked every 100 ms; may be empty)
    // says so (a stop, or a member the coordinator found lost).
    Result<std::vector<std::vector<uint8_t>>> round(uint64_t round, const std::vector<uint8_t>& mine,
                                                    double sim_clock_s, std::vector<double>* clocks,
                                                    int64_t timeout_ms = 600000,
                                                    const std::function<bool()>& abort = {});

    // Sends one raw upload request (header fields as given, payload as given; the token is this
    // client's) and returns the relay's answer: ok, or its error text. For tests of the relay's checks.
    Status raw_upload(uint32_t rank, uint32_t members, uint64_t round, uint64_t declared_len,
                      const std::vector<uint8_t>& payload, int64_t timeout_ms = 10000);
    // The same for a download request.
    Status raw_download(uint32_t rank, uint32_t members, uint64_t round, int64_t timeout_ms = 10000);

    const ByteCounters& counters() const { return counters_; }

private:
    HubClient() = default;
    Status upload(uint64_t round, const std::vector<uint8_t>& mine, double clock, int64_t timeout_ms,
                  const std::function<bool()>& abort);

    std::shared_ptr<zmq::context_t> ctx_;
    std::unique_ptr<zmq::socket_t> sock_;
    HubClientOptions o_;
    ByteCounters counters_;
};

}  // namespace tw
