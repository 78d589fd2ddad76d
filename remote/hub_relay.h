// The hub topology's relay (outer.topology = "hub", docs/topologies.md): every member of an outer
// round uploads its payload once; the relay answers each member's download with the other members'
// payloads, in rank order, once all of the round's uploads are in. Torch-free: it sees payloads
// only as bytes. HubRelay is a ROUTER on its own thread (the coordinator's or a `thinwire hub`
// process's); HubClient is one member's DEALER.
//
// Wire format (version 1, little-endian). Request: a 40-byte header frame — magic "TWHB", version,
// op (1 upload, 2 download), 2 zero bytes, rank (u32), members (u32), round (u64), payload length
// (u64; 0 for a download), sender's simulated clock (f64) — and, for an upload, one payload frame
// of exactly that length. Reply: a 16-byte header frame — magic, version, op, status (0 ok,
// 1 refused), 1 zero byte, round (u64) — then for an upload nothing (ok) or the error text; for a
// download one frame of `members` clocks (f64, rank order) and the members' payloads except the
// downloader's own, in rank order.
//
// Messages are untrusted: a request whose header does not parse, whose rank or member count is not
// the relay's, whose round is not the member's next one (uploads go 0, 1, 2, …; a download asks for
// a round it uploaded), whose payload length disagrees with its frame or exceeds the limit, or a
// second upload of a round, is refused with an error reply naming the problem; the relay keeps
// serving everyone else. A frame more than 64 KiB over the payload limit is dropped by ZeroMQ
// (ZMQ_MAXMSGSIZE) with the sender's connection, unread. Bytes: the relay counts every payload byte it receives (uploads) and sends
// (downloads) on the outer-sync link, as a member's transport does.
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

namespace zmq {
class context_t;
class socket_t;
}  // namespace zmq

namespace tw {

struct HubRelayOptions {
    int members = 0;                                 // replicas of the run (≥ 2)
    uint64_t max_payload_bytes = uint64_t{1} << 30;  // an upload longer than this is refused
    std::function<void(const std::string&)> log;     // refusals, one line each; may be empty
};

class HubRelay {
public:
    // Binds `endpoint` (tcp://HOST:PORT, tcp://HOST:*, inproc://, ipc://) on `ctx` and serves it on
    // a new thread.
    static Result<std::unique_ptr<HubRelay>> start(std::shared_ptr<zmq::context_t> ctx, const std::string& endpoint,
                                                   HubRelayOptions opts);
    ~HubRelay();

    const std::string& endpoint() const { return endpoint_; }  // as bound (a real port)
    uint64_t refused() const { return refused_.load(); }
    // Payload bytes received (uploads) and sent (downloads), counted on the outer-sync link.
    ByteCounters counters() const;

private:
    HubRelay() = default;
    void serve();

    std::shared_ptr<zmq::context_t> ctx_;
    std::unique_ptr<zmq::socket_t> sock_;
    std::string endpoint_;
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
    static Result<std::unique_ptr<HubClient>> connect(std::shared_ptr<zmq::context_t> ctx,
                                                      const std::string& endpoint, int rank, int members);
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

    // Sends one raw upload request (header fields as given, payload as given) and returns the
    // relay's answer: ok, or its error text. For tests of the relay's checks.
    Status raw_upload(uint32_t rank, uint32_t members, uint64_t round, uint64_t declared_len,
                      const std::vector<uint8_t>& payload, int64_t timeout_ms = 10000);

    const ByteCounters& counters() const { return counters_; }

private:
    HubClient() = default;
    Status upload(uint64_t round, const std::vector<uint8_t>& mine, double clock, int64_t timeout_ms,
                  const std::function<bool()>& abort);

    std::shared_ptr<zmq::context_t> ctx_;
    std::unique_ptr<zmq::socket_t> sock_;
    std::string endpoint_;
    int rank_ = 0, members_ = 0;
    ByteCounters counters_;
};

}  // namespace tw
