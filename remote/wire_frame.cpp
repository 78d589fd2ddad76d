// Data-plane frame header; see wire_frame.h for the layout.
#include "remote/wire_frame.h"

#include <cmath>
#include <cstring>
#include <string>

namespace tw::wire {
namespace {

constexpr char kMagic[4] = {'T', 'W', 'A', 'G'};
constexpr uint8_t kKinds = 8;  // FrameKind values 0..7

template <class T>
T load(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
template <class T>
void store(uint8_t* p, T v) {
    std::memcpy(p, &v, sizeof v);
}

}  // namespace

void encode_frame_header(const FrameHeader& h, uint8_t out[kFrameHeaderBytes]) {
    std::memset(out, 0, kFrameHeaderBytes);
    std::memcpy(out, kMagic, 4);
    out[4] = kFrameVersion;
    out[5] = static_cast<uint8_t>(h.kind);
    out[6] = static_cast<uint8_t>(static_cast<uint8_t>(h.link) | (h.counted ? 0 : 0x80));
    store<uint16_t>(out + 8, h.rank);
    store<uint64_t>(out + 16, h.round);
    store<double>(out + 24, h.clock_s);
    store<uint64_t>(out + 32, h.token);
    store<uint64_t>(out + 40, h.aux);
}

Result<FrameHeader> parse_frame_header(const uint8_t* data, size_t n, int members) {
    using R = Result<FrameHeader>;
    if (n != kFrameHeaderBytes)
        return R::error("header frame of " + std::to_string(n) + " bytes (expected " +
                        std::to_string(kFrameHeaderBytes) + ")");
    if (std::memcmp(data, kMagic, 4) != 0) return R::error("header without the TWAG magic");
    if (data[4] != kFrameVersion)
        return R::error("frame version " + std::to_string(data[4]) + " (this node speaks " +
                        std::to_string(kFrameVersion) + ")");
    if (data[5] >= kKinds) return R::error("unknown frame kind " + std::to_string(data[5]));
    const int link = data[6] & 0x7f;
    if (link >= 3) return R::error("unknown link class " + std::to_string(link));
    if (data[7] != 0) return R::error("reserved byte 7 is not zero");
    for (int i = 10; i < 16; ++i)
        if (data[i] != 0) return R::error("reserved byte " + std::to_string(i) + " is not zero");
    FrameHeader h;
    h.kind = static_cast<FrameKind>(data[5]);
    h.link = static_cast<LinkClass>(link);
    h.counted = (data[6] & 0x80) == 0;
    h.rank = load<uint16_t>(data + 8);
    if (members < 1 || h.rank >= members)
        return R::error("sender rank " + std::to_string(h.rank) + " outside a mesh of " + std::to_string(members));
    h.round = load<uint64_t>(data + 16);
    h.clock_s = load<double>(data + 24);
    if (!std::isfinite(h.clock_s) || h.clock_s < 0) return R::error("sender clock is not a finite time ≥ 0");
    h.token = load<uint64_t>(data + 32);
    h.aux = load<uint64_t>(data + 40);
    return h;
}

}  // namespace tw::wire
