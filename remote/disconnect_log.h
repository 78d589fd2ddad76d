// Reports connections that ZeroMQ closed on a listening socket. ZMQ_MAXMSGSIZE refuses an
// oversized frame before reading it by dropping the sender's connection without a word, so the
// owner of the socket learns of it only through the socket's monitor; so does a peer that went
// away. Not thread-safe: use it from the thread that uses the socket.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <zmq.hpp>

namespace tw {

class DisconnectLog : private zmq::monitor_t {
public:
    // Starts monitoring `s` (which must outlive this); `what` names the socket in the reports.
    DisconnectLog(zmq::socket_t& s, std::string what, std::function<void(const std::string&)> report);
    // Reports what happened since the last call; never blocks.
    void poll();
    uint64_t disconnects() const { return disconnects_; }

private:
    void on_event_disconnected(const zmq_event_t& event, const char* addr) override;
    std::string what_;
    std::function<void(const std::string&)> report_;
    uint64_t disconnects_ = 0;
};

}  // namespace tw
