// What the wire codecs' source files share (one codec per file: fp32/bf16, int8, fp4, SparseLoCo):
// bit and buffer helpers, the checks every decoder makes, and the dense codecs' base. Internal to
// engine/codec: nothing outside it includes this header. Hot loops read and write raw fp32 / byte
// buffers (one core; no per-chunk tensors).
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "core/assert.h"
#include "engine/codec/codec.h"

namespace tw::codec_detail {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "wire layouts are little-endian; this build copies native order");

constexpr uint32_t kAbsMask = 0x7fffffffu;
constexpr uint32_t kExpMask = 0x7f800000u;  // abs bits ≥ this: Inf or NaN

inline uint32_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float bits_float(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
inline float read_f32(const uint8_t* p) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
}
inline void write_f32(uint8_t* p, float f) { std::memcpy(p, &f, 4); }

// ---- shared checks ----------------------------------------------------------------------------

// Codecs whose decode writes a dense fp32 buffer directly; Codec::decode prefers this path (an
// index per element would cost 12 bytes per value for the dense codecs).
class DirectDecoder {
public:
    virtual ~DirectDecoder() = default;
    // Decodes into dst[0..numel(shape)); dst is zero-filled when needs_zeros() says so.
    virtual Status decode_into(const uint8_t* in, size_t size, size_t& offset, at::IntArrayRef shape,
                               float* dst) const = 0;
    virtual bool needs_zeros() const = 0;
};

inline Result<int64_t> numel_of(const std::string& codec, at::IntArrayRef shape) {
    int64_t n = 1;
    for (int64_t d : shape) {
        if (d < 0) return Result<int64_t>::error(codec + ": negative dimension in shape");
        n *= d;
    }
    return n;
}

// The first index whose value is NaN or Inf, or −1. Scans blocks with a branch-free flag first.
inline int64_t first_nonfinite(const float* x, int64_t n) {
    const auto* u = reinterpret_cast<const uint32_t*>(x);
    constexpr int64_t kBlock = 1024;
    for (int64_t b = 0; b < n; b += kBlock) {
        const int64_t e = std::min(n, b + kBlock);
        uint32_t top = 0;
        for (int64_t i = b; i < e; ++i) top = std::max(top, u[i] & kAbsMask);
        if (top < kExpMask) continue;
        for (int64_t i = b; i < e; ++i)
            if ((u[i] & kAbsMask) >= kExpMask) return i;
    }
    return -1;
}

inline Status nonfinite_error(const std::string& codec, const float* x, int64_t i, const char* what = "input") {
    return Status::error(codec + ": " + what + " value at index " + std::to_string(i) + " is " +
                         (std::isnan(x[i]) ? "NaN" : "Inf"));
}

// x as a contiguous CPU fp32 tensor (a copy only when it is not one already).
inline Result<torch::Tensor> fp32_input(const std::string& codec, const torch::Tensor& x) {
    if (!x.defined()) return Result<torch::Tensor>::error(codec + ": undefined tensor");
    if (x.scalar_type() != torch::kFloat32 || !x.device().is_cpu())
        return Result<torch::Tensor>::error(codec + ": expected a CPU fp32 tensor, got " +
                                            std::string(c10::toString(x.scalar_type())));
    return x.contiguous();
}

inline Status truncated(const std::string& codec, uint64_t need, size_t size, size_t offset) {
    return Status::error(codec + ": truncated payload: needs " + std::to_string(need) + " bytes at offset " +
                         std::to_string(offset) + ", " + std::to_string(offset > size ? 0 : size - offset) + " left");
}
inline bool has_bytes(size_t size, size_t offset, uint64_t need) { return offset <= size && size - offset >= need; }

// Largest |x| as abs bits (≥ kExpMask: some value is NaN or Inf).
inline uint32_t max_abs_bits(const float* x, int64_t n) {
    const auto* u = reinterpret_cast<const uint32_t*>(x);
    uint32_t top = 0;
    for (int64_t i = 0; i < n; ++i) top = std::max(top, u[i] & kAbsMask);
    return top;
}

// Round half to even for |t| < 2^22 under the default rounding mode (vectorizes, unlike nearbyint).
inline float round_half_even_small(float t) {
    constexpr float kMagic = 12582912.0f;  // 1.5 · 2^23
    return (t + kMagic) - kMagic;
}

// The dense codecs: a payload of n values has payload_bytes(n) bytes, whatever the shape, and
// decode_sparse goes through decode_into (every index, in order).
class DenseBase : public Codec, public DirectDecoder {
public:
    uint64_t wire_bytes(at::IntArrayRef shape) const final {
        auto n = numel_of(name(), shape);
        TORCH_CHECK(n.is_ok(), n.message());
        return payload_bytes(static_cast<uint64_t>(*n));
    }
    Status decode_sparse(const uint8_t* in, size_t size, size_t& offset, at::IntArrayRef shape,
                         SparsePayload& out) const override {
        auto n = numel_of(name(), shape);
        if (!n) return n.status();
        std::vector<float> value(static_cast<size_t>(*n));
        size_t off = offset;
        if (Status s = decode_into(in, size, off, shape, value.data()); !s) return s;
        out.index.resize(value.size());
        for (size_t i = 0; i < value.size(); ++i) out.index[i] = static_cast<int64_t>(i);
        out.value = std::move(value);
        offset = off;
        return Status::ok();
    }
    bool needs_zeros() const override { return false; }

protected:
    // Bytes of the payload of n values.
    virtual uint64_t payload_bytes(uint64_t n) const = 0;

    // What a decoder checks first: the shape's element count, once the payload's bytes are known
    // to stand at `offset` in a buffer of `size`.
    Result<int64_t> payload_numel(size_t size, size_t offset, at::IntArrayRef shape) const {
        auto n = numel_of(name(), shape);
        if (!n) return n;
        const uint64_t need = payload_bytes(static_cast<uint64_t>(*n));
        if (!has_bytes(size, offset, need)) return truncated(name(), need, size, offset);
        return n;
    }
};

// The scaled codecs (int8, fp4; layouts in codec.h): a payload is an f32 scale s ≥ 0 derived from
// the largest |x|, then one code per value; s = 0 (an all-zero input) leaves every code zero. The
// input must be finite. A codec supplies the scale, the codes and their decoding.
class ScaledBase : public DenseBase {
public:
    Status encode(const torch::Tensor& x_in, std::vector<uint8_t>& out) const final {
        auto x = fp32_input(name(), x_in);
        if (!x) return x.status();
        const float* p = x->data_ptr<float>();
        const int64_t n = x->numel();
        const uint32_t top = max_abs_bits(p, n);
        if (top >= kExpMask) return nonfinite_error(name(), p, first_nonfinite(p, n));
        const float s = scale_of(bits_float(top));
        const size_t old = out.size();
        out.resize(old + payload_bytes(static_cast<uint64_t>(n)));
        write_f32(out.data() + old, s);
        if (s == 0) return Status::ok();  // resize zero-filled the codes
        write_codes(p, n, s, out.data() + old + 4);
        return Status::ok();
    }

    Status decode_into(const uint8_t* in, size_t size, size_t& offset, at::IntArrayRef shape,
                       float* dst) const final {
        auto n = payload_numel(size, offset, shape);
        if (!n) return n.status();
        const float s = read_f32(in + offset);
        if (!std::isfinite(s) || s < 0)
            return Status::error(name() + ": payload scale " + std::to_string(s) + " is not a finite scale ≥ 0");
        if (Status st = read_codes(in + offset + 4, *n, s, dst); !st) return st;
        offset += payload_bytes(static_cast<uint64_t>(*n));
        return Status::ok();
    }

protected:
    // s from the largest |x| (> 0 unless the input is all zeros).
    virtual float scale_of(float max_abs) const = 0;
    // The n codes of x[0..n) under scale s > 0, into the payload after the scale (zero-filled).
    virtual void write_codes(const float* x, int64_t n, float s, uint8_t* codes) const = 0;
    // dst[0..n) from the codes under scale s; an error names a code the encoder never writes.
    virtual Status read_codes(const uint8_t* codes, int64_t n, float s, float* dst) const = 0;
};

}  // namespace tw::codec_detail
