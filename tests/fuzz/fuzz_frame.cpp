// Fuzz target for the data-plane frame header (remote/wire_frame.h): parse_frame_header on hostile
// bytes, and encode → parse of every header it accepts.
//
// Input: byte 0 picks the mesh size `members` passed to the parser: byte0 - 1 (so 0 → -1 and 1 → 0,
// both invalid meshes, 2 → one member … 254 → 253), and 255 → 65536 (every 16-bit rank is a
// member). The remaining bytes are the header frame, of any length.
#include <cstdio>
#include <cstring>
#include <string>

#include "remote/wire_frame.h"
#include "tests/fuzz/fuzz_checks.h"

namespace tw::fuzz {

Outcome check_frame(const uint8_t* data, size_t n) {
    Outcome out;
    if (n == 0) {
        out.error = "empty input (no mesh size byte)";
        return out;
    }
    const int members = data[0] == 255 ? 65536 : static_cast<int>(data[0]) - 1;
    const uint8_t* frame = data + 1;
    const size_t len = n - 1;
    auto h = wire::parse_frame_header(frame, len, members);
    if (!h) {
        out.error = h.message();
        return out;
    }
    // Every field is checked, reserved bytes included, so an accepted header is canonical: its
    // encoding is the input itself, and parses to the same fields.
    uint8_t buf[wire::kFrameHeaderBytes];
    wire::encode_frame_header(*h, buf);
    if (len != sizeof buf || std::memcmp(buf, frame, sizeof buf) != 0)
        return {"encode(parse(header)) differs from the header", ""};
    auto again = wire::parse_frame_header(buf, sizeof buf, members);
    if (!again) return {"encode(parse(header)) is refused: " + again.message(), ""};
    if (again->kind != h->kind || again->link != h->link || again->counted != h->counted || again->rank != h->rank ||
        again->round != h->round || std::memcmp(&again->clock_s, &h->clock_s, sizeof(double)) != 0 ||
        again->token != h->token || again->aux != h->aux)
        return {"encode(parse(header)) parses to different fields", ""};
    return out;
}

}  // namespace tw::fuzz

#ifdef TW_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto o = tw::fuzz::check_frame(data, size);
    if (!o.violation.empty()) {
        std::fprintf(stderr, "fuzz_frame: %s\n", o.violation.c_str());
        __builtin_trap();
    }
    return 0;
}
#endif
