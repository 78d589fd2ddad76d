// Little-endian fields of the binary wire headers (the rendezvous store's, the hub relay's): fixed
// widths, byte by byte, so a header reads the same on every host whatever its byte order.
// `p` points at the field's first byte; callers check the buffer's length first.
#pragma once

#include <cstdint>
#include <cstring>

namespace tw::le {

inline void put_u32(uint8_t* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void put_u64(uint8_t* p, uint64_t v) {
    for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint32_t get_u32(const uint8_t* p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
    return v;
}
inline uint64_t get_u64(const uint8_t* p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return v;
}
// An IEEE-754 double as its 64 bits.
inline void put_f64(uint8_t* p, double d) {
    uint64_t v;
    std::memcpy(&v, &d, 8);
    put_u64(p, v);
}
inline double get_f64(const uint8_t* p) {
    const uint64_t v = get_u64(p);
    double d;
    std::memcpy(&d, &v, 8);
    return d;
}

}  // namespace tw::le
