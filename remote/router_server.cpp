// A server's bound ROUTER; see router_server.h.
#include "remote/router_server.h"

#include <cerrno>
#include <chrono>
#include <thread>
#include <cstring>
#include <zmq.hpp>

#include "core/little_endian.h"

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

RouterServer::~RouterServer() { stop(); }

Status RouterServer::start(zmq::context_t& ctx, const std::string& endpoint, int64_t max_msg_bytes,
                           const CurveKeyPair& keys, const char* zap_domain, std::function<void()> loop) {
    auto bound = bind_router(ctx, endpoint, max_msg_bytes, keys, zap_domain);
    if (!bound) return bound.status();
    router_ = std::move(*bound);
    serving_.start(std::move(loop));
    return Status::ok();
}

void RouterServer::reply(const std::string& peer, const ReplyHeader& rh, const std::vector<std::string_view>& frames) {
    uint8_t h[kReplyHeaderBytes] = {};
    std::memcpy(h, rh.magic, 4);
    h[4] = rh.version;
    h[5] = rh.op;
    h[6] = rh.status;
    le::put_u64(h + 8, rh.id);
    zmq::socket_t& sock = *router_.sock;
    const auto more = zmq::send_flags::sndmore | zmq::send_flags::dontwait;
    try {
        sock.send(zmq::buffer(peer), more);
        sock.send(zmq::const_buffer(h, sizeof h), frames.empty() ? zmq::send_flags::dontwait : more);
        for (size_t i = 0; i < frames.size(); ++i)
            sock.send(zmq::const_buffer(frames[i].data(), frames[i].size()),
                      i + 1 < frames.size() ? more : zmq::send_flags::dontwait);
    } catch (const zmq::error_t&) {
    }
}

void RouterServer::stop() {
    serving_.stop();
    close_router(router_);
    router_.sock.reset();
}

}  // namespace tw
