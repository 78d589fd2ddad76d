// Little-endian fields of the binary formats (the rendezvous store's and the hub relay's headers,
// an outer algorithm's state and the recovery message): fixed widths, byte by byte, so bytes read
// the same on every host whatever its byte order. put_/get_ work on a field whose first byte is
// `p` (callers check the length first); Appender and Reader grow a buffer and read one with every
// length checked. Pure functions and plain structs, no state shared between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tw::le {

// An unsigned integer U (uint32_t, uint64_t) in sizeof(U) bytes, least significant first.
template <class U>
inline void put_uint(uint8_t* p, U v) {
    for (size_t i = 0; i < sizeof(U); ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
template <class U>
inline U get_uint(const uint8_t* p) {
    U v = 0;
    for (size_t i = 0; i < sizeof(U); ++i) v |= static_cast<U>(p[i]) << (8 * i);
    return v;
}
// An IEEE-754 value F (float, double) as its bits U (uint32_t, uint64_t).
template <class F, class U>
inline void put_ieee(uint8_t* p, F f) {
    static_assert(sizeof(F) == sizeof(U));
    U v;
    std::memcpy(&v, &f, sizeof v);
    put_uint<U>(p, v);
}
template <class F, class U>
inline F get_ieee(const uint8_t* p) {
    static_assert(sizeof(F) == sizeof(U));
    const U v = get_uint<U>(p);
    F f;
    std::memcpy(&f, &v, sizeof f);
    return f;
}

inline void put_u32(uint8_t* p, uint32_t v) { put_uint<uint32_t>(p, v); }
inline void put_u64(uint8_t* p, uint64_t v) { put_uint<uint64_t>(p, v); }
inline uint32_t get_u32(const uint8_t* p) { return get_uint<uint32_t>(p); }
inline uint64_t get_u64(const uint8_t* p) { return get_uint<uint64_t>(p); }
inline void put_f64(uint8_t* p, double d) { put_ieee<double, uint64_t>(p, d); }
inline double get_f64(const uint8_t* p) { return get_ieee<double, uint64_t>(p); }
inline void put_f32(uint8_t* p, float f) { put_ieee<float, uint32_t>(p, f); }
inline float get_f32(const uint8_t* p) { return get_ieee<float, uint32_t>(p); }

inline void put_u16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v);
    p[1] = static_cast<uint8_t>(v >> 8);
}
inline uint16_t get_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

// Appends fields to a byte vector.
struct Appender {
    std::vector<uint8_t>& out;
    void u8(uint8_t v) { out.push_back(v); }
    void u16(uint16_t v) { grow(2), put_u16(out.data() + out.size() - 2, v); }
    void u32(uint32_t v) { grow(4), put_u32(out.data() + out.size() - 4, v); }
    void u64(uint64_t v) { grow(8), put_u64(out.data() + out.size() - 8, v); }
    void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
    void f64(double v) { grow(8), put_f64(out.data() + out.size() - 8, v); }
    void f32(float v) { grow(4), put_f32(out.data() + out.size() - 4, v); }
    void bytes(const void* p, size_t n) {
        const auto* b = static_cast<const uint8_t*>(p);
        out.insert(out.end(), b, b + n);
    }

private:
    void grow(size_t n) { out.resize(out.size() + n); }
};

// Reads fields from `n` bytes at `p`; every read checks what is left and returns false (reading
// nothing) when the field does not fit.
struct Reader {
    const uint8_t* p;
    size_t n, at = 0;
    size_t left() const { return n - at; }
    bool u8(uint8_t& v) { return take(1) && (v = p[at - 1], true); }
    bool u16(uint16_t& v) { return take(2) && (v = get_u16(p + at - 2), true); }
    bool u32(uint32_t& v) { return take(4) && (v = get_u32(p + at - 4), true); }
    bool u64(uint64_t& v) { return take(8) && (v = get_u64(p + at - 8), true); }
    bool i64(int64_t& v) {
        uint64_t u = 0;
        if (!u64(u)) return false;
        v = static_cast<int64_t>(u);
        return true;
    }
    bool f64(double& v) { return take(8) && (v = get_f64(p + at - 8), true); }
    bool f32(float& v) { return take(4) && (v = get_f32(p + at - 4), true); }

private:
    bool take(size_t k) {
        if (left() < k) return false;
        at += k;
        return true;
    }
};

}  // namespace tw::le
