// A server's bound ROUTER; see router_server.h.
#include "remote/router_server.h"

#include <cerrno>
#include <chrono>
#include <thread>
#include <zmq.hpp>

namespace tw {

Result<BoundRouter> bind_router(zmq::context_t& ctx, const std::string& endpoint, int64_t max_msg_bytes,
                                const CurveKeyPair& keys, const char* zap_domain) {
    using Clock = std::chrono::steady_clock;
    BoundRouter r;
    try {
        r.sock = std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::router);
        r.sock->set(zmq::sockopt::linger, 0);
        r.sock->set(zmq::sockopt::maxmsgsize, max_msg_bytes);
        if (!keys.empty()) curve_server(*r.sock, keys, zap_domain);
        const auto give_up = Clock::now() + std::chrono::seconds(2);
        for (;;) {
            try {
                r.sock->bind(endpoint);
                break;
            } catch (const zmq::error_t& e) {
                if (e.num() != EADDRINUSE || Clock::now() >= give_up) throw;
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
        }
        r.endpoint = r.sock->get(zmq::sockopt::last_endpoint);
    } catch (const zmq::error_t& e) {
        return Result<BoundRouter>::error("cannot bind " + endpoint + ": " + e.what());
    }
    return r;
}

void close_router(BoundRouter& r) {
    if (!r.sock) return;
    try {
        r.sock->unbind(r.endpoint);
    } catch (const zmq::error_t&) {
    }
    r.sock->close();
}

}  // namespace tw
