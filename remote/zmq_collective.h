// All-gather over a ZeroMQ PUSH/PULL mesh: each member binds one PULL socket at its endpoint and
// connects a PUSH socket to every other member's. Works unchanged over inproc:// (threads in one
// process, sharing one zmq context), ipc:// and tcp://.
//
// Wire: two frames per message, the header of remote/wire_frame.h and the payload. Point-to-point
// messages queue per sender; rounds are buffered by number. Only payload bytes are counted; the
// header is the transport's framing, listed separately by header_bytes().
//
// Hostile input (docs/style.md §4): a frame that is malformed, carries another
// run's token, comes from a key that is not the claimed member's, belongs to a round already
// gathered, repeats one, or comes from outside the round's group is dropped, counted and reported
// through MeshOptions::on_event; the run goes on. With CURVE keys only the run's members can
// connect at all. Liveness: a thread sends a heartbeat frame to every peer each heartbeat_s; a
// member awaited by a wait and silent (no heartbeat, no traffic) for silence_timeout_s is declared
// lost, and a member whose run ended says so (bye) — a deadline on silence, not on the wait.
//
// Real exchange time: a round's frames carry the wall-clock time (system_clock) at which their
// sender began sending; real_exchange_s() adds up, per round, the time from the last member's
// start to this member holding every payload.
//
// Thread-safety: one thread uses a ZmqCollective (the worker's); the heartbeat thread has sockets
// of its own.
#pragma once

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/collective.h"
#include "core/hub_exchange.h"
#include "core/membership.h"
#include "core/network.h"
#include "remote/mesh_membership.h"
#include "remote/wire_frame.h"

namespace zmq { class context_t; }

namespace tw {

class LinkShaper;
class HubClient;
class MeshOutbox;

struct MeshOptions {
    int timeout_ms = 60000;          // backstop on one whole wait
    uint64_t token = 0;              // the run's token; frames carrying another are dropped
    double heartbeat_s = 0;          // liveness frames to every peer this often; 0 = none
    double silence_timeout_s = 0;    // an awaited member silent this long is lost; 0 = no deadline
    // CurveZMQ: this member's keypair (Z85) and every member's public key by rank; empty = no CURVE.
    std::string public_key, secret_key;
    std::vector<std::string> member_keys;
    size_t max_frame_bytes = 0;      // ZMQ_MAXMSGSIZE of the PULL socket (tcp/ipc); 0 = unlimited
    // In-process shaper (remote/link_shaper.h): counted sends wait as the links (by LinkClass) say.
    std::optional<std::array<LinkSpec, 3>> shape;
    // Dropped frames and lost members: (event kind, text). May be empty.
    std::function<void(const std::string& kind, const std::string& text)> on_event;
    // outer.topology = "hub": the relay (remote/hub_relay.h) hub_round uploads to; "" = none.
    std::string hub_endpoint;
    std::string hub_key;  // with keys: the relay's public key (Z85)
    // Ranks whose nodes joined a relay (NodeRole::mesh_relayed; ascending; tcp:// with CURVE keys
    // only). Where one side of a pair is reachable, the other dials it: a reachable member binds an
    // outbox at its data port + 1 (remote/mesh_outbox.h) and sends relayed members their messages
    // there; a relayed member dials every reachable member's outbox with a DEALER, reads those
    // beside its data port, and sends to them directly. Between two relayed members the messages
    // go through the relay, into the receiver's data port: a relayed member counts every frame that
    // arrives there in ByteCounters::relayed_recv_*, by the link class its header names.
    std::vector<int> relayed_members;
};

class ZmqCollective : public Collective, public Membership, public HubExchange {
public:
    // endpoints[i] is member i's PULL endpoint; this member binds endpoints[rank]. For inproc://
    // all members must share `ctx`. Binds and connects here (heartbeats start at once).
    static Result<std::unique_ptr<ZmqCollective>> create(std::shared_ptr<zmq::context_t> ctx,
                                                         std::vector<std::string> endpoints, int rank,
                                                         MeshOptions opts);
    static Result<std::unique_ptr<ZmqCollective>> create(std::shared_ptr<zmq::context_t> ctx,
                                                         std::vector<std::string> endpoints, int rank,
                                                         int timeout_ms = 60000);
    // Tells the peers this member's run ended (bye), stops the heartbeats and closes every socket.
    ~ZmqCollective() override;

    int rank() const override { return rank_; }
    int size() const override { return static_cast<int>(endpoints_.size()); }
    Result<std::vector<std::vector<uint8_t>>> all_gather(const std::vector<uint8_t>& mine, LinkClass link,
                                                         double sim_clock_s = 0,
                                                         std::vector<double>* clocks = nullptr) override;
    Result<std::vector<std::vector<uint8_t>>> exchange(const std::vector<int>& group, const std::vector<uint8_t>& mine,
                                                       LinkClass link, double sim_clock_s = 0,
                                                       std::vector<double>* clocks = nullptr) override;
    Status agree(const std::vector<int>& group, uint64_t state_hash) override;
    Result<std::vector<uint64_t>> gather_words(const std::vector<int>& group, uint64_t word) override;
    Status send(int peer, const std::vector<uint8_t>& payload, LinkClass link, double sim_clock_s,
                bool count = true) override;
    Result<std::vector<uint8_t>> recv(int peer, double* sender_clock_s = nullptr) override;
    Result<std::vector<uint8_t>> recv_any(const std::vector<int>& peers, int* from,
                                          double* sender_clock_s = nullptr) override;
    const ByteCounters& counters() const override { return counters_; }
    double real_exchange_s() const override { return real_exchange_s_; }
    void add_real_exchange_s(double s) override { real_exchange_s_ += s; }
    // The hub topology's round through the relay at MeshOptions::hub_endpoint (connected on first
    // use, on this mesh's context); its payload bytes are counted here like the mesh's. A hub round
    // takes this transport's next round number (begin_epoch's numbering, so a redone attempt is a
    // larger round for the relay too). While it waits for the relay's answer it reads the data
    // plane as a mesh round does, so a member of the round found lost (silent past
    // silence_timeout_s, gone) or giving the attempt up ends the wait with an error.
    Result<std::vector<std::vector<uint8_t>>> hub_round(const std::vector<uint8_t>& mine, double sim_clock_s,
                                                        std::vector<double>* clocks) override;
    Result<std::vector<std::vector<uint8_t>>> hub_round_among(const std::vector<int>& members,
                                                              const std::vector<uint8_t>& mine, double sim_clock_s,
                                                              std::vector<double>* clocks) override;
    bool has_hub() const override { return !opts_.hub_endpoint.empty(); }
    // The membership is this transport's own: its words travel as frames of the data plane, and
    // its state (remote/mesh_membership.h) is fed by every frame a wait reads.
    Membership& membership() override { return *this; }
    std::vector<int> lost_members() const override;
    void begin_epoch(uint64_t epoch) override;
    void abandon(const std::vector<int>& peers) override;
    bool gave_up(int r) const override;
    void tell_out(const std::vector<int>& peers) override;
    bool counted_out() const override;
    void forgive(int r) override;
    void declare_lost(int r) override;
    void tell_ready(int peer, uint64_t step) override;
    Status wait_ready(int peer, uint64_t step) override;
    bool heard_live(int r) override;
    void await_admission() override { members_->await_admission(); }
    void go_quiet(bool restarting) override;
    // Rounds an attempt may use (the epoch's base is epoch × this): a gather, an agreement, the
    // deadline's clock exchange and the ring's opening fit with room to spare.
    static constexpr uint64_t kEpochRounds = 16;
    uint64_t header_bytes() const { return header_bytes_; }
    uint64_t dropped_frames() const { return dropped_; }
    // Checked every 100 ms while waiting for peers: a true result ends the wait with an error, so
    // a node asked to stop is never stuck behind a peer that paused, stopped or died.
    void set_abort(std::function<bool()> abort) { abort_ = std::move(abort); }

private:
    ZmqCollective() = default;
    struct Sockets;
    struct Heartbeat;
    // Receives one message into the round or point-to-point buffers (dropping what is not from
    // this run); errors on abort, an awaited member lost (silent since max(its last frame,
    // `wait_start`) for silence_timeout_s, gone, or given up on the attempt) or the backstop
    // (timeout_ms since `wait_start`: the start of the caller's whole wait). `what` names the wait.
    // Returns ok after `max_ms` (≥ 0; −1 = no limit) when nothing arrived. `backstop` = false
    // drops the backstop (recv_any: a spare may stand by for the whole run).
    Status pump_until(const std::string& what, const std::function<std::vector<int>()>& awaited,
                      std::chrono::steady_clock::time_point wait_start, int max_ms, bool backstop = true);
    // Called on every pass of a wait with the time of the previous pass: a gap of over a second is
    // a pause of this process (SIGSTOP, a VM stall), and the peers' silence is moved past it.
    void own_pause_check(std::chrono::steady_clock::time_point& last_pass);
    Status send_frame(int peer, const uint8_t* header, const std::vector<uint8_t>& payload);
    // One header-only frame to `peer`, never blocking (dropped when its queue is full).
    void post(int peer, const uint8_t* header);
    // A header-only frame of `kind` for `round` with `aux` to each of `peers` (this member and ranks
    // out of range skipped; `to_lost` = false skips peers counted lost here): abandon and commit words.
    void post_word(wire::FrameKind kind, uint64_t round, uint64_t aux, const std::vector<int>& peers, bool to_lost);
    // Encodes into `out` the header of a framing-only word of `kind` for `round` carrying `aux`
    // (uncounted, this member's rank and the run's token).
    void encode_word_header(wire::FrameKind kind, uint64_t round, uint64_t aux, uint8_t* out) const;
    // After agreement round `round` failed here with a member of `group` lost: abandons the
    // attempt, then waits until every other live member of the group took the round (kCommit) or
    // gave the attempt up. True when one took it with `state_hash`; an error naming the mismatch when
    // one took it with another hash; false when nobody took it (the attempt is redone), when no
    // member is lost (a failure of another kind), on the backstop, or on abort.
    Result<bool> await_verdict(const std::vector<int>& group, uint64_t round, uint64_t state_hash);
    Status drop(const std::string& why);
    // With a shaper: waits (abortably, reading meanwhile) until a counted message may leave.
    Status shape_wait(LinkClass link, size_t bytes);  // counts and reports a dropped frame; always ok
    std::string member(int r) const;
    std::vector<int> all_ranks() const;  // 0..size()−1
    std::shared_ptr<zmq::context_t> ctx_;
    std::unique_ptr<Sockets> s_;
    std::unique_ptr<Heartbeat> hb_;
    std::vector<std::string> endpoints_;
    int rank_ = 0;
    MeshOptions opts_;
    uint64_t round_ = 0;
    // Rounds below this one are complete here (every payload or hash taken): a frame for one of
    // them is a replay or a copy, dropped and counted.
    uint64_t gathered_ = 0;
    std::unique_ptr<MeshMembership> members_;  // who is in this member's rounds
    ByteCounters counters_;
    uint64_t header_bytes_ = 0;
    uint64_t dropped_ = 0;
    double real_exchange_s_ = 0;
    std::unique_ptr<LinkShaper> shaper_;
    std::function<bool()> abort_;
    std::unique_ptr<HubClient> hub_;
    std::unique_ptr<MeshOutbox> outbox_;  // a reachable member's, when the mesh has relayed members
    bool relayed_ = false;                // this member joined a relay
};

}  // namespace tw
