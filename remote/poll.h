// Polling sockets for input without letting a signal (Ctrl-C: EINTR) escape as an exception:
// the caller's loop checks its interrupt flag on the next turn.
#pragma once

#include <cerrno>
#include <chrono>
#include <vector>
#include <zmq.hpp>

namespace tw {

inline bool poll_in(zmq::socket_t& s, int timeout_ms) {
    zmq::pollitem_t items[] = {{s.handle(), 0, ZMQ_POLLIN, 0}};
    try {
        zmq::poll(items, 1, std::chrono::milliseconds(timeout_ms));
    } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) return false;
        throw;
    }
    return (items[0].revents & ZMQ_POLLIN) != 0;
}

// Polls several sockets; a signal counts as nothing ready (0).
inline int poll_items(std::vector<zmq::pollitem_t>& items, int timeout_ms) {
    try {
        return zmq::poll(items.data(), items.size(), std::chrono::milliseconds(timeout_ms));
    } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) return 0;
        throw;
    }
}

}  // namespace tw
