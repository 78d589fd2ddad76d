// The data plane's framing (remote/zmq_collective.h): every message on the mesh is a fixed header
// frame followed by one payload frame. Pure functions, no sockets, so the parser can be fuzzed on
// its own (tests/fuzz/) and every field is checked before the mesh uses it.
//
// Header, 48 bytes, little-endian:
//   0  "TWAG"            magic
//   4  u8  version       kFrameVersion
//   5  u8  kind          FrameKind
//   6  u8  link          bits 0-6: LinkClass; bit 7: not counted (measurement traffic)
//   7  u8  reserved      0
//   8  u16 rank          sender's mesh rank
//   10 u8[6] reserved    0
//   16 u64 round         the all-gather round (kRound, kAgree, kCommit); kPointToPoint: the first round of
//                        the sender's round attempt (Membership::begin_epoch; 0 without); kAbandon:
//                        the attempt given up; 0 otherwise
//   24 f64 clock_s       sender's simulated clock, finite and ≥ 0
//   32 u64 token         the run's mesh token, handed out at configure: a frame without it is not
//                        from this run and is dropped
//   40 u64 aux           kAgree, kCommit: the sender's state hash; kRound: the wall-clock time (ns since
//                        the Unix epoch) at which the sender began its round, for the measured
//                        exchange time (zmq_collective.h); kBye: why the run ended; kAbandon: the
//                        lost members' bit mask; kReady: the round step whose state the sender
//                        waits for; 0 otherwise
// Only payload bytes count toward the byte counters; the header is framing (header_bytes()).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/collective.h"
#include "core/status.h"

namespace tw::wire {

inline constexpr uint8_t kFrameVersion = 7;  // 7: kCommit; 6: kReady; 5: kAbandon and epochs (survivors); 4: kind byte, token, aux
inline constexpr size_t kFrameHeaderBytes = 48;

// Values are stable: they name the frame on the wire.
enum class FrameKind : uint8_t {
    kRound = 0,         // a payload of all-gather / exchange round `round`
    kPointToPoint = 1,  // a pipeline message, queued per sender in send order
    kHeartbeat = 2,     // liveness only, empty payload; sent every heartbeat interval by every member
    kBye = 3,           // the sender's run ended (stop, failure, finish); empty payload
    kAgree = 4,         // after round `round`: aux = hash of the state the members must hold alike
    kAbandon = 5,       // the sender gave up the round attempt whose first round is `round`; aux = bit
                        // mask of the members it found lost (ranks < 64); empty payload
    kReady = 6,         // a joiner is up and waits for the state after the round at step aux
                        // (Membership::tell_ready); empty payload, outside any round attempt
    kCommit = 7,        // the sender heard every member's hash of agreement round `round` and all
                        // matched: aux = that hash. A member that missed a lost member's hash
                        // holds the same state and takes the round too (zmq_collective.h agree)
};

struct FrameHeader {
    FrameKind kind = FrameKind::kRound;
    LinkClass link = LinkClass::kOuterSync;
    bool counted = true;
    uint16_t rank = 0;
    uint64_t round = 0;
    double clock_s = 0;
    uint64_t token = 0;
    uint64_t aux = 0;
};

void encode_frame_header(const FrameHeader& h, uint8_t out[kFrameHeaderBytes]);

// Parses and checks a header frame of `n` bytes from a mesh of `members` members: size, magic,
// version, kind, link class, reserved bytes, rank < members, a finite non-negative clock. The error
// names the first field that is wrong. The token is returned, not checked (the mesh knows its own).
Result<FrameHeader> parse_frame_header(const uint8_t* data, size_t n, int members);

}  // namespace tw::wire
