// A node's side of the relay (remote/relay.h): `thinwire node --join RELAY`. It dials the relay
// twice, a control lane and a bulk lane, keeps both connections open, and carries every connection
// the relay hands it to the node's own ports on this machine, byte for byte, each on its lane. The node's sockets stay what they are (CURVE servers that
// decide whom they obey); they only see their dialers arrive from this process.
//
// The node's side of each carried connection is a plain TCP socket to its own port; a dial
// refused (the port not bound yet) closes the dialer's connection at the relay, so the dialer redials.
//
// Reconnects: ZeroMQ redials a dropped link by itself; the client says hello on the control lane
// every second until the relay answers, then pings there and names the bulk lane once a second, and takes the relay as lost when it has heard
// nothing for `timeout_s`: it then closes the connections it carried (the node's dialers notice
// and redial through the relay) and says hello again.
//
// Thread-safety: runs on its own thread; public_endpoint() and joins() from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"
#include "remote/curve.h"

namespace tw {

struct TunnelOptions {
    std::string relay;        // tcp://HOST:PORT of the relay's tunnel socket
    std::string relay_key;    // the relay's public key (Z85)
    CurveKeyPair keys;        // this node's keypair: the relay admits it by its public key
    std::string local_host;   // where the node's own ports listen (an address, 127.0.0.1 for a wildcard)
    int local_port = 0;       // P: the node's control port; P+1..P+3 follow
    double timeout_s = 5;     // the relay silent this long is lost
    std::function<void(const std::string&)> log;  // joins, losses and the relay's refusals
};

class TunnelClient {
public:
    static Result<std::unique_ptr<TunnelClient>> start(TunnelOptions opts);
    ~TunnelClient();
    TunnelClient(const TunnelClient&) = delete;
    TunnelClient& operator=(const TunnelClient&) = delete;

    // The endpoint dialers use for this node's control port ("" until the relay answered).
    std::string public_endpoint() const;
    int joins() const { return joins_.load(); }

    struct Impl;

private:
    TunnelClient() = default;
    std::unique_ptr<Impl> impl_;
    std::thread thread_;
    std::atomic<int> joins_{0};
};

}  // namespace tw
