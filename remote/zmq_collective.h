// All-gather over a ZeroMQ PUSH/PULL mesh: each member binds one PULL socket at its endpoint and
// connects a PUSH socket to every other member's. Works unchanged over inproc:// (threads in one
// process, sharing one zmq context), ipc:// and tcp://.
//
// Wire, per message (two frames): header "TWAG" | version u8 | link u8 | rank u16 | round u64 |
// sender's simulated clock f64 (24 bytes, little-endian), then the payload. Point-to-point
// messages carry round 2⁶⁴−1; link has bit 7 set when the message is not counted. Only payload bytes are
// counted; the 24-byte header is the transport's framing, listed separately by header_bytes().
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/collective.h"

namespace zmq { class context_t; }

namespace tw {

class ZmqCollective : public Collective {
public:
    // endpoints[i] is member i's PULL endpoint; this member binds endpoints[rank]. For inproc://
    // all members must share `ctx`. Bind happens here, connects lazily at the first all_gather.
    static Result<std::unique_ptr<ZmqCollective>> create(std::shared_ptr<zmq::context_t> ctx,
                                                         std::vector<std::string> endpoints, int rank,
                                                         int timeout_ms = 60000);
    ~ZmqCollective() override;

    int rank() const override { return rank_; }
    int size() const override { return static_cast<int>(endpoints_.size()); }
    Result<std::vector<std::vector<uint8_t>>> all_gather(const std::vector<uint8_t>& mine, LinkClass link,
                                                         double sim_clock_s = 0,
                                                         std::vector<double>* clocks = nullptr) override;
    Result<std::vector<std::vector<uint8_t>>> exchange(const std::vector<int>& group, const std::vector<uint8_t>& mine,
                                                       LinkClass link, double sim_clock_s = 0,
                                                       std::vector<double>* clocks = nullptr) override;
    Status send(int peer, const std::vector<uint8_t>& payload, LinkClass link, double sim_clock_s,
                bool count = true) override;
    Result<std::vector<uint8_t>> recv(int peer, double* sender_clock_s = nullptr) override;
    const ByteCounters& counters() const override { return counters_; }
    uint64_t header_bytes() const { return header_bytes_; }
    // Checked every 100 ms while waiting for peers: a true result ends the wait with an error, so
    // a node asked to stop is never stuck behind a peer that paused, stopped or died.
    void set_abort(std::function<bool()> abort) { abort_ = std::move(abort); }

private:
    ZmqCollective() = default;
    struct Sockets;
    Status connect_once();
    // Receives one message into the round or point-to-point buffers; `what` names the wait in errors.
    Status pump(const std::string& what);
    std::shared_ptr<zmq::context_t> ctx_;
    std::unique_ptr<Sockets> s_;
    std::vector<std::string> endpoints_;
    int rank_ = 0;
    int timeout_ms_ = 60000;
    uint64_t round_ = 0;
    ByteCounters counters_;
    uint64_t header_bytes_ = 0;
    std::function<bool()> abort_;
};

}  // namespace tw
