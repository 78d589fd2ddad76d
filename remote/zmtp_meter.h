// Counts what one direction of a ZeroMQ TCP connection carries, from its bytes alone, for the
// relay's counters (remote/relay.h): the ZMTP 3 greeting, commands and frames, without decrypting
// anything.
//
// ZMTP 3 (RFC 23, 37): a 64-byte greeting, whose bytes 12..31 name the security mechanism, then
// frames, each a flags byte (bit 1: an 8-byte big-endian size follows, else 1 byte; bit 2: a
// command), its size and its body. Without CURVE a message frame is a non-command frame and its
// body is the payload. With CURVE (the greeting says so) every message frame travels as a MESSAGE
// box: the name (8 bytes: length 7 and "MESSAGE"), an 8-byte nonce, a 16-byte tag, the frame's
// flags byte and the payload, so a box of n bytes carries n - 33 payload bytes. ZMTP 3.1 sends it
// as a command frame; libzmq 4.3 sends it as a plain frame, and the meter takes both. Every other
// byte (greeting, handshake commands, ZMTP heartbeats, frame headers, CURVE's nonces and tags) is
// framing.
//
// Units: bytes. Not thread-safe: one meter per direction of one connection, fed in stream order.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tw {

struct ZmtpCount {
    uint64_t bytes = 0;    // everything that passed
    uint64_t payload = 0;  // message frames' payload bytes
    uint64_t frames = 0;   // message frames
    ZmtpCount& operator+=(const ZmtpCount& o) {
        bytes += o.bytes, payload += o.payload, frames += o.frames;
        return *this;
    }
};

inline constexpr size_t kZmtpGreetingBytes = 64;
inline constexpr uint64_t kCurveMessageOverhead = 33;  // name 8 + nonce 8 + tag 16 + flags 1

class ZmtpMeter {
public:
    // Feeds the next `n` bytes of the direction; returns what they completed (bytes always n).
    ZmtpCount feed(const uint8_t* data, size_t n);
    // True once the stream broke the grammar (a size over 2^40, say): the rest counts as bytes only.
    bool lost() const { return lost_; }

private:
    enum class State { kGreeting, kFlags, kSize, kBody };
    State state_ = State::kGreeting;
    size_t need_ = kZmtpGreetingBytes;  // bytes left of the current part
    uint8_t flags_ = 0;
    uint8_t size_buf_[8] = {};
    size_t size_len_ = 0;
    uint64_t body_ = 0;      // the current frame's body size
    uint8_t head_[8] = {};   // the current body's first bytes: a command's or a CURVE box's name
    size_t head_len_ = 0;
    uint8_t mechanism_[20] = {};  // the greeting's mechanism field
    bool curve_ = false;
    bool lost_ = false;
};

}  // namespace tw
