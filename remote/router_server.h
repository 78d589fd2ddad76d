// The bound ROUTER socket of a small server that serves it on its own thread (the rendezvous store,
// remote/kv_store.h; the hub relay, remote/hub_relay.h): bind with a message-size cap and, with
// keys, CurveZMQ under a ZAP domain; unbind before close so the port is free for the next run.
// The socket is made here and then belongs to the server's thread (std::thread's start is the
// memory barrier ZeroMQ asks for).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "remote/curve.h"

namespace zmq {
class context_t;
class socket_t;
}  // namespace zmq

namespace tw {

struct BoundRouter {
    std::unique_ptr<zmq::socket_t> sock;
    std::string endpoint;  // as bound: a wildcard port resolved
};

// Binds a ROUTER at `endpoint` on `ctx`: linger 0, ZMQ_MAXMSGSIZE `max_msg_bytes` (a larger frame
// drops the sender's connection before libzmq allocates it), CURVE server with `keys` under
// `zap_domain` unless `keys` is empty. A port still held by the previous run's socket closing in
// the I/O thread (EADDRINUSE) is retried for up to 2 s. The error names the endpoint and the reason.
Result<BoundRouter> bind_router(zmq::context_t& ctx, const std::string& endpoint, int64_t max_msg_bytes,
                                const CurveKeyPair& keys, const char* zap_domain);

// Unbinds (ignoring a socket already unbound) and closes.
void close_router(BoundRouter& r);

}  // namespace tw
