// Per-input checks shared by the libFuzzer targets (fuzz_control.cpp, fuzz_frame.cpp, built by
// scripts/fuzz.sh with clang) and the seed replay test (test_fuzz_replay.cpp, the normal build):
// both run every input through exactly the same code.
//
// A check never throws and never crashes on any input; it reports
//   violation: an invariant the parser broke (a round trip that does not come back equal). The
//              libFuzzer entry points trap on it, the replay test fails on it.
//   error:     the first error the input's message got ("" when every parser accepted it), so the
//              replay test can tell accepted seeds from refused ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tw::fuzz {

struct Outcome {
    std::string violation;
    std::string error;
};

// Control protocol input: the bytes are split into 1..8 ZeroMQ frames (see fuzz_control.cpp for
// the scheme), decode()d, then body["role"] and body["rows"] (if present) go through
// role_from_json / metrics_from_rows; whatever is accepted must survive encode → decode.
Outcome check_control(const uint8_t* data, size_t n);

// Data-plane frame header input: byte 0 picks the mesh size (see fuzz_frame.cpp), the rest is the
// header frame for wire::parse_frame_header; a parsed header must re-encode to the same bytes.
Outcome check_frame(const uint8_t* data, size_t n);

}  // namespace tw::fuzz
