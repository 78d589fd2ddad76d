// The bound ROUTER socket of a small server that serves it on its own thread (the rendezvous store,
// remote/kv_store.h; the hub relay, remote/hub_relay.h): bind with a message-size cap and, with
// keys, CurveZMQ under a ZAP domain; unbind before close so the port is free for the next run.
// The socket is made here and then belongs to the server's thread (std::thread's start is the
// memory barrier ZeroMQ asks for). RouterServer holds both, the socket and that thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "remote/curve.h"
#include "remote/serve_thread.h"
#include "remote/zmq_fwd.h"


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

// A bound ROUTER and the thread serving it. start() binds (as bind_router) and, bound, runs `loop`
// on the serving thread, which then owns the socket; the loop polls stopping() between short
// waits. stop() (and the destructor) joins the thread, then unbinds and closes the socket, so the
// port is free by the time the next run binds it. start() and stop() from the owner's thread.
class RouterServer {
public:
    RouterServer() = default;
    RouterServer(const RouterServer&) = delete;
    RouterServer& operator=(const RouterServer&) = delete;
    ~RouterServer();

    // The error is bind_router's.
    Status start(zmq::context_t& ctx, const std::string& endpoint, int64_t max_msg_bytes, const CurveKeyPair& keys,
                 const char* zap_domain, std::function<void()> loop);
    // Idempotent.
    void stop();
    bool stopping() const { return serving_.stopping(); }
    // The loop's socket.
    zmq::socket_t& socket() { return *router_.sock; }

    // The replies of both servers: to `peer` (its routing identity), a 16-byte header — 4 bytes of
    // `magic`, then `version`, `op`, `status`, a zero byte, and `id` as a little-endian u64 — then
    // `frames`, each copied out before this returns. Never blocks: a peer that went away or whose
    // queue is full loses its reply (nothing else depends on it). From the serving thread.
    static constexpr size_t kReplyHeaderBytes = 16;
    struct ReplyHeader {
        const char* magic;  // 4 bytes
        uint8_t version = 0, op = 0, status = 0;
        uint64_t id = 0;
    };
    void reply(const std::string& peer, const ReplyHeader& h, const std::vector<std::string_view>& frames);
    const std::string& endpoint() const { return router_.endpoint; }  // as bound (a real port)

private:
    BoundRouter router_;
    ServeThread serving_;
};

}  // namespace tw
