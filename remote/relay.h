// The relay for nodes that nobody can dial (behind NAT or a firewall): `thinwire relay`, or a
// thread of the coordinator (cluster.relay_listen). A node started with `--join` dials the relay
// and keeps that one connection open (remote/tunnel_client.h); the relay then listens, on the
// node's behalf, on four consecutive public ports Q..Q+3 that stand for the node's own P..P+3
// (control, metrics, data, gradient-group store: core/layout.h), and carries every TCP connection
// made to them through the node's connections, byte for byte: the control lane carries Q and Q+1,
// the bulk lane Q+2 and Q+3, so that a coordinator's heartbeat never waits behind a round's payload
// on a slow line (each lane is its own TCP connection). Whoever would have dialled the
// node's endpoint dials tcp://PUBLIC:Q instead: the coordinator for control and metrics, the
// run's peers for mesh, ring, pipeline boundaries and the store.
//
// What the relay sees. It splices TCP byte streams and never takes part in ZeroMQ: the CurveZMQ
// handshake of a coordinator or a peer runs end to end with the node, so the relay sees ciphertext,
// the sizes and times of frames, and who talks to whom; it cannot read, alter or inject a message
// (a forged byte breaks the stream's MAC and the node drops the connection). A relay is itself keyed:
// only allowed keys may join or look nodes up, and a node dials it only if it holds the relay's
// public key. Nothing is written to disk; counters live as long as the process.
//
// Tunnel protocol (DEALER at the node or coordinator, ROUTER at the relay, CurveZMQ with the relay
// as server). Each message is a kind frame (text) then its fields:
//   node → relay   hello LANE               on each lane: (re)join (LANE 0, control; a new connection
//                                           there is a rejoin) or name the bulk lane (LANE 1, again
//                                           every second); answered by exposed on that lane
//   relay → node   exposed ENDPOINT         the public control endpoint tcp://PUBLIC:Q
//   relay → node   open SID PORT            a connection arrived on public port Q+PORT (0..3)
//   both ways      data SID BYTES           the next bytes of connection SID
//   both ways      close SID                connection SID ended
//   node → relay   ping                     every second; answered by pong
//   client → relay lookup KEY               answered by found KEY ENDPOINT ("" = not joined)
//   client → relay stats KEY                answered by stats KEY JSON (RelayCounters)
//   relay → client error TEXT               a message it refused, named
// SID is a little-endian u32 the relay assigns, PORT and LANE one byte each. A connection's open,
// data and close travel on its port's lane (the control lane until the bulk lane said hello). A message that does not parse, names
// a connection of another node, or comes from a key the relay does not admit is refused by name and
// the relay keeps serving everyone else.
//
// Liveness. A node silent for `timeout_s` is offline: its connections are closed (its peers'
// ZeroMQ sockets reconnect and find it back once it rejoins), its ports stay its own. A hello
// from the same key, from anywhere, takes the ports back.
//
// Counters (units: bytes, frames). Per node and per port class (control: Q and Q+1; data: Q+2;
// store: Q+3), both ways, as remote/zmtp_meter.h counts them: all bytes, and the payload and count
// of message frames. Relayed bytes = payload + framing (ZMTP greeting, handshake, frame headers and,
// with CurveZMQ, 33 bytes per frame).
//
// Thread-safety: the relay serves on its own thread; counters() and endpoint() may be called from
// any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "remote/curve.h"
#include "remote/zmtp_meter.h"

namespace zmq {
class context_t;
}  // namespace zmq

namespace tw {

inline constexpr const char* kZapRelay = "relay";
inline constexpr int kRelayPortsPerNode = 4;

enum class RelayClass : int { kControl = 0, kData = 1, kStore = 2 };
inline constexpr int kRelayClasses = 3;
// A node's two tunnel connections: control (ports Q, Q+1) and bulk (Q+2, Q+3).
inline constexpr int kRelayLanes = 2;
int relay_lane_of_port(int offset);
const char* to_string(RelayClass c);
// The class of public port Q+offset.
RelayClass relay_class_of_port(int offset);

struct RelayCounters {
    std::array<ZmtpCount, kRelayClasses> to_node{};    // from dialers to the node
    std::array<ZmtpCount, kRelayClasses> from_node{};  // from the node to its dialers
    uint64_t connections = 0;                           // connections carried
    uint64_t bulk_connections = 0;                      // of them, those on the bulk lane
    uint64_t joins = 0;                                 // hellos taken (1 + rejoins)
};
std::string counters_to_json(const RelayCounters& c);
Result<RelayCounters> counters_from_json(const std::string& text);

struct RelayOptions {
    std::string listen;       // tcp://ADDRESS:PORT of the tunnel socket; ADDRESS also hosts the nodes' ports
    std::string public_host;  // the address dialers use for the nodes' ports; "" = listen's address
    int first_port = 0;       // nodes' ports from here on, 4 each; 0 = free ports the system picks
    CurveKeyPair keys;        // required: the relay's keypair
    std::vector<std::string> allowed;  // keys that may join or ask (nodes and coordinators)
    double timeout_s = 5;              // a node silent this long is offline
    int64_t max_message_bytes = 1 << 20;  // a larger tunnel message drops the sender's connection
    std::function<void(const std::string&)> log;  // joins, losses and refusals, one line each
};

class Relay {
public:
    static Result<std::unique_ptr<Relay>> start(RelayOptions opts);
    ~Relay();
    Relay(const Relay&) = delete;
    Relay& operator=(const Relay&) = delete;

    const std::string& endpoint() const { return endpoint_; }  // the tunnel socket, as bound
    // Counters of every node that joined, by public key.
    std::map<std::string, RelayCounters> counters() const;

    struct Impl;

private:
    Relay() = default;
    std::unique_ptr<Impl> impl_;
    std::string endpoint_;
    std::thread thread_;
};

}  // namespace tw
