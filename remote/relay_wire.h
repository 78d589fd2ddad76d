// The relay tunnel's small frame helpers (remote/relay.h): connection ids and whole messages.
// Pure functions over ZeroMQ messages; thread-safety is the socket's.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>
#include <zmq.hpp>

namespace tw::relay_wire {

// A connection id as its 4-byte little-endian frame.
inline zmq::message_t sid_frame(uint32_t sid) {
    uint8_t b[4] = {static_cast<uint8_t>(sid), static_cast<uint8_t>(sid >> 8), static_cast<uint8_t>(sid >> 16),
                    static_cast<uint8_t>(sid >> 24)};
    return zmq::message_t(b, 4);
}

// The connection id of a frame; nullopt unless it is exactly 4 bytes.
inline std::optional<uint32_t> sid_of(const zmq::message_t& m) {
    if (m.size() != 4) return std::nullopt;
    const auto* b = m.data<uint8_t>();
    return static_cast<uint32_t>(b[0]) | static_cast<uint32_t>(b[1]) << 8 | static_cast<uint32_t>(b[2]) << 16 |
           static_cast<uint32_t>(b[3]) << 24;
}

// Receives one whole message without waiting; false when none is ready. At most 8 frames are
// kept: a longer message is no message of the tunnel's and is read to its end and refused.
inline bool recv_all(zmq::socket_t& s, std::vector<zmq::message_t>& parts) {
    parts.clear();
    for (;;) {
        zmq::message_t m;
        if (!s.recv(m, zmq::recv_flags::dontwait)) return !parts.empty();
        const bool more = m.more();
        if (parts.size() < 8) parts.push_back(std::move(m));
        if (!more) return true;
    }
}

}  // namespace tw::relay_wire
