// Outer-sync payload codecs (docs/methods.md §3, §4): dense fp32 / bf16, int8, fp4 (E3M0) and
// SparseLoCo's chunked Top-k + 2-bit quantiser. Wire layouts are written down in codec.h.
// Hot loops read and write raw fp32 / byte buffers (one core; no per-chunk tensors).
#include "engine/codec/codec.h"

#include <torch/torch.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "core/assert.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tw {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "wire layouts are little-endian; this build copies native order");

constexpr uint32_t kAbsMask = 0x7fffffffu;
constexpr uint32_t kExpMask = 0x7f800000u;  // abs bits ≥ this: Inf or NaN

uint32_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float bits_float(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
float read_f32(const uint8_t* p) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
}
void write_f32(uint8_t* p, float f) { std::memcpy(p, &f, 4); }

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

Result<int64_t> numel_of(const std::string& codec, at::IntArrayRef shape) {
    int64_t n = 1;
    for (int64_t d : shape) {
        if (d < 0) return Result<int64_t>::error(codec + ": negative dimension in shape");
        n *= d;
    }
    return n;
}

// The first index whose value is NaN or Inf, or −1. Scans blocks with a branch-free flag first.
int64_t first_nonfinite(const float* x, int64_t n) {
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

Status nonfinite_error(const std::string& codec, const float* x, int64_t i, const char* what = "input") {
    return Status::error(codec + ": " + what + " value at index " + std::to_string(i) + " is " +
                         (std::isnan(x[i]) ? "NaN" : "Inf"));
}

// x as a contiguous CPU fp32 tensor (a copy only when it is not one already).
Result<torch::Tensor> fp32_input(const std::string& codec, const torch::Tensor& x) {
    if (!x.defined()) return Result<torch::Tensor>::error(codec + ": undefined tensor");
    if (x.scalar_type() != torch::kFloat32 || !x.device().is_cpu())
        return Result<torch::Tensor>::error(codec + ": expected a CPU fp32 tensor, got " +
                                            std::string(c10::toString(x.scalar_type())));
    return x.contiguous();
}

Status truncated(const std::string& codec, uint64_t need, size_t size, size_t offset) {
    return Status::error(codec + ": truncated payload: needs " + std::to_string(need) + " bytes at offset " +
                         std::to_string(offset) + ", " + std::to_string(offset > size ? 0 : size - offset) + " left");
}
bool has_bytes(size_t size, size_t offset, uint64_t need) { return offset <= size && size - offset >= need; }

// Largest |x| as abs bits (≥ kExpMask: some value is NaN or Inf).
uint32_t max_abs_bits(const float* x, int64_t n) {
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

// The dense codecs decode_sparse through decode_into: every index, in order.
class DenseBase : public Codec, public DirectDecoder {
public:
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
};

// ---- fp32 and bf16 ------------------------------------------------------------------------------

class DenseCodec final : public DenseBase {
public:
    explicit DenseCodec(bool bf16) : bf16_(bf16) {}
    std::string name() const override { return bf16_ ? "bf16" : "fp32"; }
    uint64_t wire_bytes(at::IntArrayRef shape) const override {
        auto n = numel_of(name(), shape);
        TORCH_CHECK(n.is_ok(), n.message());
        return static_cast<uint64_t>(*n) * (bf16_ ? 2u : 4u);
    }

    Status encode(const torch::Tensor& x_in, std::vector<uint8_t>& out) const override {
        auto x = fp32_input(name(), x_in);
        if (!x) return x.status();
        const float* p = x->data_ptr<float>();
        const int64_t n = x->numel();
        if (int64_t bad = first_nonfinite(p, n); bad >= 0) return nonfinite_error(name(), p, bad);
        if (!bf16_) {
            const auto* b = reinterpret_cast<const uint8_t*>(p);
            out.insert(out.end(), b, b + 4 * n);
            return Status::ok();
        }
        const size_t old = out.size();
        out.resize(old + 2 * static_cast<size_t>(n));
        auto* dst = out.data() + old;
        const auto* u = reinterpret_cast<const uint32_t*>(p);
        uint32_t overflow = 0;
        for (int64_t i = 0; i < n; ++i) {
            const uint32_t r = u[i] + 0x7fffu + ((u[i] >> 16) & 1u);  // round to nearest even
            const auto h = static_cast<uint16_t>(r >> 16);
            overflow |= static_cast<uint32_t>((h & 0x7f80u) == 0x7f80u);
            std::memcpy(dst + 2 * i, &h, 2);
        }
        if (overflow) {
            out.resize(old);
            for (int64_t i = 0; i < n; ++i)
                if ((((u[i] + 0x7fffu + ((u[i] >> 16) & 1u)) >> 16) & 0x7f80u) == 0x7f80u)
                    return Status::error("bf16: input value at index " + std::to_string(i) + " (" +
                                         std::to_string(p[i]) + ") overflows bf16 to Inf");
        }
        return Status::ok();
    }

    Status decode_into(const uint8_t* in, size_t size, size_t& offset, at::IntArrayRef shape,
                       float* dst) const override {
        auto n = numel_of(name(), shape);
        if (!n) return n.status();
        const uint64_t need = wire_bytes(shape);
        if (!has_bytes(size, offset, need)) return truncated(name(), need, size, offset);
        const uint8_t* src = in + offset;
        auto* d = reinterpret_cast<uint32_t*>(dst);
        uint32_t top = 0;
        if (!bf16_) {
            if (need > 0) std::memcpy(dst, src, need);  // an empty payload may have no buffer at all
            top = max_abs_bits(dst, *n);
        } else {
            for (int64_t i = 0; i < *n; ++i) {
                uint16_t h;
                std::memcpy(&h, src + 2 * i, 2);
                d[i] = static_cast<uint32_t>(h) << 16;
                top = std::max(top, d[i] & kAbsMask);
            }
        }
        if (top >= kExpMask) return nonfinite_error(name(), dst, first_nonfinite(dst, *n), "payload");
        offset += need;
        return Status::ok();
    }

private:
    bool bf16_;
};

// ---- int8 ---------------------------------------------------------------------------------------

class Int8Codec final : public DenseBase {
public:
    std::string name() const override { return "int8"; }
    uint64_t wire_bytes(at::IntArrayRef shape) const override {
        auto n = numel_of(name(), shape);
        TORCH_CHECK(n.is_ok(), n.message());
        return 4 + static_cast<uint64_t>(*n);
    }

    Status encode(const torch::Tensor& x_in, std::vector<uint8_t>& out) const override {
        auto x = fp32_input(name(), x_in);
        if (!x) return x.status();
        const float* p = x->data_ptr<float>();
        const int64_t n = x->numel();
        const uint32_t top = max_abs_bits(p, n);
        if (top >= kExpMask) return nonfinite_error(name(), p, first_nonfinite(p, n));
        const float s = bits_float(top) / 127.0f;
        const size_t old = out.size();
        out.resize(old + 4 + static_cast<size_t>(n));
        write_f32(out.data() + old, s);
        auto* q = reinterpret_cast<int8_t*>(out.data() + old + 4);
        if (s == 0) return Status::ok();  // resize zero-filled the codes
        for (int64_t i = 0; i < n; ++i) {
            float t = round_half_even_small(p[i] / s);
            t = std::min(127.0f, std::max(-127.0f, t));
            q[i] = static_cast<int8_t>(t);
        }
        return Status::ok();
    }

    Status decode_into(const uint8_t* in, size_t size, size_t& offset, at::IntArrayRef shape,
                       float* dst) const override {
        auto n = numel_of(name(), shape);
        if (!n) return n.status();
        const uint64_t need = 4 + static_cast<uint64_t>(*n);
        if (!has_bytes(size, offset, need)) return truncated(name(), need, size, offset);
        const float s = read_f32(in + offset);
        if (!std::isfinite(s) || s < 0)
            return Status::error("int8: payload scale " + std::to_string(s) + " is not a finite scale ≥ 0");
        const auto* q = reinterpret_cast<const int8_t*>(in + offset + 4);
        int bad = 0;
        for (int64_t i = 0; i < *n; ++i) {
            bad |= q[i] == -128;
            dst[i] = s * static_cast<float>(q[i]);
        }
        if (bad) {
            const int64_t i = std::find(q, q + *n, int8_t{-128}) - q;
            return Status::error("int8: payload code −128 at index " + std::to_string(i) +
                                 " (the encoder clamps to ±127)");
        }
        offset += need;
        return Status::ok();
    }
};

// ---- fp4 (E3M0) ---------------------------------------------------------------------------------

class Fp4Codec final : public DenseBase {
public:
    std::string name() const override { return "fp4"; }
    uint64_t wire_bytes(at::IntArrayRef shape) const override {
        auto n = numel_of(name(), shape);
        TORCH_CHECK(n.is_ok(), n.message());
        return 4 + (static_cast<uint64_t>(*n) + 1) / 2;
    }

    Status encode(const torch::Tensor& x_in, std::vector<uint8_t>& out) const override {
        auto x = fp32_input(name(), x_in);
        if (!x) return x.status();
        const float* p = x->data_ptr<float>();
        const int64_t n = x->numel();
        const uint32_t top = max_abs_bits(p, n);
        if (top >= kExpMask) return nonfinite_error(name(), p, first_nonfinite(p, n));
        const float s = bits_float(top);
        const size_t old = out.size();
        out.resize(old + 4 + static_cast<size_t>((n + 1) / 2));
        write_f32(out.data() + old, s);
        uint8_t* dst = out.data() + old + 4;
        if (s == 0) return Status::ok();
        // Thresholds on x² (exact in double for fp32 x): t_1² = s²·2^−14, t_e² = s²·2^(2e−15).
        const double s2 = static_cast<double>(s) * s;
        double th[7];
        th[0] = std::ldexp(s2, -14);
        for (int e = 2; e <= 7; ++e) th[e - 1] = std::ldexp(s2, 2 * e - 15);
        // Blocks of codes, one byte each, then two per byte.
        constexpr int64_t kBlock = 4096;
        uint8_t code[kBlock];
        for (int64_t b = 0; b < n; b += kBlock) {
            const int64_t m = std::min(kBlock, n - b);
            const float* x = p + b;
            int64_t i = 0;
#if defined(__SSE2__)
            __m128d t[7];
            for (int j = 0; j < 7; ++j) t[j] = _mm_set1_pd(th[j]);
            const __m128i zero = _mm_setzero_si128();
            for (; i + 4 <= m; i += 4) {  // e = Σ_j [x² ≥ t_j], two doubles per register
                const __m128 xv = _mm_loadu_ps(x + i);
                __m128d lo = _mm_cvtps_pd(xv), hi = _mm_cvtps_pd(_mm_movehl_ps(xv, xv));
                lo = _mm_mul_pd(lo, lo);
                hi = _mm_mul_pd(hi, hi);
                __m128i elo = zero, ehi = zero;
                for (int j = 0; j < 7; ++j) {
                    elo = _mm_sub_epi64(elo, _mm_castpd_si128(_mm_cmpge_pd(lo, t[j])));
                    ehi = _mm_sub_epi64(ehi, _mm_castpd_si128(_mm_cmpge_pd(hi, t[j])));
                }
                const __m128i e = _mm_castps_si128(
                    _mm_shuffle_ps(_mm_castsi128_ps(elo), _mm_castsi128_ps(ehi), _MM_SHUFFLE(2, 0, 2, 0)));
                const __m128i neg = _mm_and_si128(_mm_srli_epi32(_mm_castps_si128(xv), 31), _mm_cmpgt_epi32(e, zero));
                const __m128i c = _mm_or_si128(e, _mm_slli_epi32(neg, 3));
                const int32_t four = _mm_cvtsi128_si32(_mm_packus_epi16(_mm_packs_epi32(c, zero), zero));
                std::memcpy(code + i, &four, 4);
            }
#endif
            for (; i < m; ++i) {
                const double v2 = static_cast<double>(x[i]) * static_cast<double>(x[i]);
                int32_t e = 0;
                for (int j = 0; j < 7; ++j) e += v2 >= th[j] ? 1 : 0;
                const int32_t neg = static_cast<int32_t>(float_bits(x[i]) >> 31) & (e != 0 ? 1 : 0);
                code[i] = static_cast<uint8_t>(e | (neg << 3));
            }
            uint8_t* o = dst + b / 2;  // kBlock is even, so blocks start on a byte
            for (int64_t i = 0; i + 1 < m; i += 2) o[i / 2] = static_cast<uint8_t>(code[i] | (code[i + 1] << 4));
            if (m % 2) o[m / 2] = code[m - 1];
        }
        return Status::ok();
    }

    Status decode_into(const uint8_t* in, size_t size, size_t& offset, at::IntArrayRef shape,
                       float* dst) const override {
        auto n = numel_of(name(), shape);
        if (!n) return n.status();
        const uint64_t need = wire_bytes(shape);
        if (!has_bytes(size, offset, need)) return truncated(name(), need, size, offset);
        const float s = read_f32(in + offset);
        if (!std::isfinite(s) || s < 0)
            return Status::error("fp4: payload scale " + std::to_string(s) + " is not a finite scale ≥ 0");
        float level[16];
        for (int e = 0; e < 8; ++e) {
            level[e] = e == 0 ? 0.0f : s * std::ldexp(1.0f, e - 7);
            level[8 + e] = -level[e];
        }
        const uint8_t* src = in + offset + 4;
        int bad = 0;  // code 8 (sign + zero) and a non-zero pad nibble are never written
        for (int64_t i = 0; i + 1 < *n; i += 2) {
            const uint8_t b = src[i / 2];
            bad |= (b & 15) == 8 || (b >> 4) == 8;
            dst[i] = level[b & 15];
            dst[i + 1] = level[b >> 4];
        }
        if (*n % 2) {
            const uint8_t b = src[*n / 2];
            bad |= (b & 15) == 8 || (b >> 4) != 0;
            dst[*n - 1] = level[b & 15];
        }
        if (bad) return Status::error("fp4: malformed payload (negative-zero code or non-zero padding)");
        offset += need;
        return Status::ok();
    }
};

// ---- SparseLoCo: chunks -------------------------------------------------------------------------

void check_topk_config(const TopkConfig& cfg) {
    TORCH_CHECK(cfg.block >= 1 && cfg.block * cfg.block <= 4096, "topk: block ", cfg.block,
                " must be in 1..64 (in-chunk positions travel in 12 bits)");
    TORCH_CHECK(cfg.k >= 2 && cfg.k % 2 == 0 && cfg.k <= cfg.block * cfg.block, "topk: k ", cfg.k,
                " must be even and in 2..block² (", cfg.block * cfg.block, ")");
}

// The chunk geometry of a shape (codec.h): tiles of a 2-D tensor, runs of block² otherwise.
struct Chunks {
    struct Chunk {
        int64_t n = 0;                         // elements
        int64_t kept = 0;                      // k_n
        int64_t r0 = 0, c0 = 0, w = 0, h = 0;  // tile: top-left corner and size
        int64_t start = 0;                     // run: first flat index
    };

    Chunks(at::IntArrayRef shape, const TopkConfig& cfg) : block(cfg.block), run(cfg.block * cfg.block), k(cfg.k) {
        numel = 1;
        for (int64_t d : shape) numel *= d;
        tiles = shape.size() == 2;
        if (tiles) {
            rows = shape[0];
            cols = shape[1];
            tiles_per_row = (cols + block - 1) / block;
            count = ((rows + block - 1) / block) * tiles_per_row;
        } else {
            count = (numel + run - 1) / run;
        }
    }
    int64_t kept(int64_t n) const {
        const int64_t m = 2 * ((k * n + run) / (2 * run));
        return std::min(n, std::max<int64_t>(2, m));
    }
    Chunk at(int64_t j) const {
        Chunk c;
        if (tiles) {
            c.r0 = (j / tiles_per_row) * block;
            c.c0 = (j % tiles_per_row) * block;
            c.h = std::min(block, rows - c.r0);
            c.w = std::min(block, cols - c.c0);
            c.n = c.h * c.w;
        } else {
            c.start = j * run;
            c.n = std::min(run, numel - c.start);
        }
        c.kept = kept(c.n);
        return c;
    }
    int64_t total_kept() const {
        int64_t K = 0;
        for (int64_t j = 0; j < count; ++j) K += at(j).kept;
        return K;
    }

    int64_t block, run, k;
    int64_t numel = 0, count = 0;
    bool tiles = false;
    int64_t rows = 0, cols = 0, tiles_per_row = 0;
};

uint64_t sparse_wire_bytes(int64_t K) {
    return 20 + 3 * static_cast<uint64_t>((K + 1) / 2) + static_cast<uint64_t>((K + 3) / 4);
}

// Per-chunk scratch, allocated once per call.
struct Scratch {
    explicit Scratch(int64_t run) : key(run + 16), ckey(run), gmax(run), tmp(run), cpos(run) {}
    std::vector<int32_t> key, ckey, gmax, tmp;
    std::vector<uint16_t> cpos;
};

// |x| as abs bits: for finite values, integer order is magnitude order, and reinterpreted as fp32
// they are |x| itself (so fp32 max instructions apply). Returns false when a NaN or Inf is among them.
bool abs_keys(const uint32_t* src, int64_t n, int32_t* dst) {
    int64_t i = 0;
    uint32_t bad = 0;
#if defined(__SSE2__)
    const __m128i mask = _mm_set1_epi32(static_cast<int32_t>(kAbsMask));
    const __m128i max_finite = _mm_set1_epi32(static_cast<int32_t>(kExpMask - 1));
    __m128i acc = _mm_setzero_si128();
    for (; i + 4 <= n; i += 4) {
        const __m128i k = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)), mask);
        acc = _mm_or_si128(acc, _mm_cmpgt_epi32(k, max_finite));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), k);
    }
    bad = static_cast<uint32_t>(_mm_movemask_epi8(acc));
#endif
    for (; i < n; ++i) {
        dst[i] = static_cast<int32_t>(src[i] & kAbsMask);
        bad |= static_cast<uint32_t>(dst[i] >= static_cast<int32_t>(kExpMask));
    }
    return bad == 0;
}

// Fills s.key with the chunk's abs keys, row-major inside a tile. A tile's rows are a page apart,
// so the next tile's rows are prefetched. Returns false on NaN/Inf.
bool load_keys(const Chunks& g, const Chunks::Chunk& c, const float* x, Scratch& s) {
    int32_t* key = s.key.data();
    if (!g.tiles) return abs_keys(reinterpret_cast<const uint32_t*>(x + c.start), c.n, key);
    const bool prefetch = c.c0 + c.w < g.cols;
    bool ok = true;
    for (int64_t r = 0; r < c.h; ++r) {
        const float* row = x + (c.r0 + r) * g.cols + c.c0;
        if (prefetch)
            for (int64_t b = 0; b < c.w; b += 16) __builtin_prefetch(row + c.w + b);
        ok &= abs_keys(reinterpret_cast<const uint32_t*>(row), c.w, key + r * c.w);
    }
    return ok;
}

// gmax[j] = max of key[j], key[j + G], key[j + 2G], …: the maxima of G interleaved groups (a
// partition of the n ≥ G keys into G non-empty groups, vertical maxima only).
void group_maxima(const int32_t* key, int64_t n, int64_t G, int32_t* gmax) {
    std::copy(key, key + G, gmax);
    int64_t b = G;
    for (; b + G <= n; b += G) {
        const int32_t* blk = key + b;
        int64_t j = 0;
#if defined(__SSE2__)
        for (; j + 4 <= G; j += 4) {  // fp32 max of the reinterpreted keys: finite, non-negative
            const __m128 m = _mm_max_ps(_mm_loadu_ps(reinterpret_cast<const float*>(gmax + j)),
                                        _mm_loadu_ps(reinterpret_cast<const float*>(blk + j)));
            _mm_storeu_ps(reinterpret_cast<float*>(gmax + j), m);
        }
#endif
        for (; j < G; ++j) gmax[j] = std::max(gmax[j], blk[j]);
    }
    for (int64_t j = 0; b + j < n; ++j) gmax[j] = std::max(gmax[j], key[b + j]);
}

// Appends (key, position) of every key[i] ≥ lower to ckey/cpos in position order; returns the count.
// Candidates are a few percent of a chunk, so sixteen keys are tested at once and skipped together.
int64_t compact_candidates(const int32_t* key, int64_t n, int32_t lower, int32_t* ckey, uint16_t* cpos) {
    int64_t nc = 0, i = 0;
#if defined(__SSE2__)
    const __m128i below = _mm_set1_epi32(lower - 1);  // lower ≥ 0, so no overflow
    for (; i + 16 <= n; i += 16) {
        const auto* k = reinterpret_cast<const __m128i*>(key + i);
        const __m128i c0 = _mm_cmpgt_epi32(_mm_loadu_si128(k), below);
        const __m128i c1 = _mm_cmpgt_epi32(_mm_loadu_si128(k + 1), below);
        const __m128i c2 = _mm_cmpgt_epi32(_mm_loadu_si128(k + 2), below);
        const __m128i c3 = _mm_cmpgt_epi32(_mm_loadu_si128(k + 3), below);
        const __m128i any = _mm_or_si128(_mm_or_si128(c0, c1), _mm_or_si128(c2, c3));
        if (_mm_movemask_epi8(any) == 0) continue;
        unsigned mask = static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(c0))) |
                        static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(c1))) << 4 |
                        static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(c2))) << 8 |
                        static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(c3))) << 12;
        while (mask) {
            const int j = __builtin_ctz(mask);
            ckey[nc] = key[i + j];
            cpos[nc] = static_cast<uint16_t>(i + j);
            ++nc;
            mask &= mask - 1;
        }
    }
#endif
    for (; i < n; ++i) {
        ckey[nc] = key[i];
        cpos[nc] = static_cast<uint16_t>(i);
        nc += key[i] >= lower;
    }
    return nc;
}

// Positions (ascending) of the kn largest keys among s.key[0..n) (all finite), ties to the lower
// position.
void select_topk(int64_t n, int64_t kn, Scratch& s, uint16_t* out) {
    const int32_t* key = s.key.data();
    if (kn >= n) {
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<uint16_t>(i);
        return;
    }
    // A lower bound L for the kn-th largest key: partition the chunk into G ≥ kn groups and take the
    // kn-th largest group maximum. The kn groups whose maxima are ≥ L hold kn distinct entries ≥ L,
    // so every kept entry is ≥ L. With G = 2·kn (groups of 32 for k = 64 of 4096) about 1.4·kn
    // candidates remain on Gaussian data, against ~4.5·kn with G = kn; 4·kn leaves 1.1·kn but its
    // selection among the maxima costs more than it saves (measured).
    const int64_t G = std::min(n, 2 * kn);
    int32_t* gmax = s.gmax.data();
    group_maxima(key, n, G, gmax);
    std::nth_element(gmax, gmax + kn - 1, gmax + G, std::greater<int32_t>());
    int32_t* ckey = s.ckey.data();
    uint16_t* cpos = s.cpos.data();
    const int64_t nc = compact_candidates(key, n, gmax[kn - 1], ckey, cpos);
    if (nc == kn) {
        std::copy(cpos, cpos + nc, out);
        return;
    }
    // The kn-th largest candidate key T: everything above T is kept, ties at T lowest position first.
    int32_t* tmp = s.tmp.data();
    std::copy(ckey, ckey + nc, tmp);
    std::nth_element(tmp, tmp + kn - 1, tmp + nc, std::greater<int32_t>());
    const int32_t t = tmp[kn - 1];
    int64_t ties = kn - std::count_if(tmp, tmp + kn - 1, [t](int32_t v) { return v > t; });
    int64_t o = 0;
    for (int64_t i = 0; i < nc; ++i) {
        if (ckey[i] > t) {
            out[o++] = cpos[i];
        } else if (ckey[i] == t && ties > 0) {
            out[o++] = cpos[i];
            --ties;
        }
    }
    TW_ASSERT(o == kn);
}

// Flat index of in-chunk positions, which must arrive ascending (a tile's row is advanced, never
// recomputed with a division).
struct FlatMapper {
    FlatMapper(const Chunks& g, const Chunks::Chunk& c) : g_(g), c_(c) {}
    int64_t operator()(int64_t pos) {
        if (!g_.tiles) return c_.start + pos;
        while (pos >= row_start_ + c_.w) {
            ++row_;
            row_start_ += c_.w;
        }
        return (c_.r0 + row_) * g_.cols + c_.c0 + (pos - row_start_);
    }

private:
    const Chunks& g_;
    const Chunks::Chunk& c_;
    int64_t row_ = 0, row_start_ = 0;
};

// Chunked Top-k over the whole tensor: in-chunk positions, and the flat indices (when `flat`) and
// values (when `value`) of the kept entries, read while the chunk is still in cache.
// Returns the flat index of the first NaN/Inf (lowest flat index), or −1.
int64_t topk_all(const float* x, const Chunks& g, std::vector<uint16_t>& pos, std::vector<int64_t>* flat,
                 std::vector<float>* value) {
    const auto K = static_cast<size_t>(g.total_kept());
    pos.resize(K);
    if (flat) flat->resize(K);
    if (value) value->resize(K);
    Scratch s(g.run);
    int64_t t = 0;
    for (int64_t j = 0; j < g.count; ++j) {
        const auto c = g.at(j);
        if (!load_keys(g, c, x, s)) return first_nonfinite(x, g.numel);
        select_topk(c.n, c.kept, s, pos.data() + t);
        FlatMapper map(g, c);
        for (int64_t i = 0; i < c.kept; ++i) {
            const int64_t f = map(pos[t + i]);
            if (flat) (*flat)[t + i] = f;
            if (value) (*value)[t + i] = x[f];
        }
        t += c.kept;
    }
    return -1;
}

// ---- SparseLoCo: quantiser and packing ----------------------------------------------------------

// codec.h's quantiser: c (K floats of scratch) receives v − shift, code one 0..3 per value.
// Σ f(i) for i < K in double with four interleaved partial sums (latency-bound otherwise).
template <class F>
double sum4(int64_t K, F&& f) {
    double s[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= K; i += 4)
        for (int l = 0; l < 4; ++l) s[l] += f(i + l);
    for (; i < K; ++i) s[0] += f(i);
    return (s[0] + s[1]) + (s[2] + s[3]);
}

void quantize_into(const float* v, int64_t K, float* c, uint8_t* code, float& shift, float lookup[4]) {
    shift = 0;
    for (int b = 0; b < 4; ++b) lookup[b] = 0;
    if (K <= 0) return;
    shift = static_cast<float>(sum4(K, [v](int64_t i) { return static_cast<double>(v[i]); }) / static_cast<double>(K));
    for (int64_t i = 0; i < K; ++i) c[i] = v[i] - shift;
    double sigma = 0;
    if (K >= 2) {
        const double cmean = sum4(K, [c](int64_t i) { return static_cast<double>(c[i]); }) / static_cast<double>(K);
        const double ss = sum4(K, [c, cmean](int64_t i) {
            const double d = static_cast<double>(c[i]) - cmean;
            return d * d;
        });
        sigma = std::sqrt(ss / static_cast<double>(K - 1));
    }
    const auto scale = static_cast<float>(6.0 * sigma / 4.0);
    if (scale == 0.0f) {
        std::fill(code, code + K, uint8_t{2});
    } else {
        for (int64_t i = 0; i < K; ++i) {
            const float t = c[i] / scale + 2.0f;  // two fp32 operations, as the reference does
            // Rounding is monotone, so clamping to [0, 3] first gives the same code (NaN → 0).
            code[i] =
                static_cast<uint8_t>(static_cast<int32_t>(round_half_even_small(std::min(3.0f, std::max(0.0f, t)))));
        }
    }
    // Per-bin sums, four lanes so that runs of one code do not chain additions.
    double bin_sum[4][4] = {};
    int64_t bin_n[4][4] = {};
    int64_t i = 0;
    for (; i + 4 <= K; i += 4)
        for (int l = 0; l < 4; ++l) {
            bin_sum[l][code[i + l]] += c[i + l];
            ++bin_n[l][code[i + l]];
        }
    for (; i < K; ++i) {
        bin_sum[0][code[i]] += c[i];
        ++bin_n[0][code[i]];
    }
    for (int b = 0; b < 4; ++b) {
        const double sum = (bin_sum[0][b] + bin_sum[1][b]) + (bin_sum[2][b] + bin_sum[3][b]);
        const int64_t cnt = bin_n[0][b] + bin_n[1][b] + bin_n[2][b] + bin_n[3][b];
        lookup[b] = cnt ? static_cast<float>(sum / static_cast<double>(cnt)) : 0.0f;
    }
}

void pack12_into(const uint16_t* idx, int64_t n, uint8_t* out) {
    int64_t i = 0;
    for (; i + 1 < n; i += 2, out += 3) {
        const uint32_t a = idx[i], b = idx[i + 1];
        out[0] = static_cast<uint8_t>(a);
        out[1] = static_cast<uint8_t>((a >> 8) | ((b & 0xf) << 4));
        out[2] = static_cast<uint8_t>(b >> 4);
    }
    if (i < n) {
        out[0] = static_cast<uint8_t>(idx[i]);
        out[1] = static_cast<uint8_t>(idx[i] >> 8);
        out[2] = 0;
    }
}
inline uint16_t index12(const uint8_t* in, int64_t t) {
    const uint8_t* p = in + 3 * (t >> 1);
    return static_cast<uint16_t>((t & 1) ? ((p[1] >> 4) | (p[2] << 4)) : (p[0] | ((p[1] & 0xf) << 8)));
}
void pack2_into(const uint8_t* codes, int64_t n, uint8_t* out) {
    int64_t i = 0;
    for (; i + 3 < n; i += 4)
        *out++ = static_cast<uint8_t>(codes[i] | (codes[i + 1] << 2) | (codes[i + 2] << 4) | (codes[i + 3] << 6));
    if (i < n) {
        uint8_t b = 0;
        for (int j = 0; i + j < n; ++j) b |= static_cast<uint8_t>(codes[i + j] << (2 * j));
        *out = b;
    }
}

// ---- SparseLoCo: the codec ----------------------------------------------------------------------

class SparseLoCoCodec final : public Codec, public DirectDecoder {
public:
    explicit SparseLoCoCodec(TopkConfig cfg) : cfg_(cfg) { check_topk_config(cfg); }
    std::string name() const override { return "sparseloco"; }
    uint64_t wire_bytes(at::IntArrayRef shape) const override {
        auto n = numel_of(name(), shape);
        TORCH_CHECK(n.is_ok(), n.message());
        return sparse_wire_bytes(Chunks(shape, cfg_).total_kept());
    }

    Status encode(const torch::Tensor& x_in, std::vector<uint8_t>& out) const override {
        auto x = fp32_input(name(), x_in);
        if (!x) return x.status();
        const float* p = x->data_ptr<float>();
        const Chunks g(x->sizes(), cfg_);
        // Per-thread buffers, kept between calls: fresh ones cost page faults comparable to the
        // quantiser itself (about 11 bytes per kept value are retained).
        thread_local std::vector<uint16_t> pos;
        thread_local std::vector<float> v, c;
        thread_local std::vector<uint8_t> code;
        if (int64_t bad = topk_all(p, g, pos, nullptr, &v); bad >= 0) return nonfinite_error(name(), p, bad);
        const auto K = static_cast<int64_t>(pos.size());
        c.resize(static_cast<size_t>(K));
        code.resize(static_cast<size_t>(K));
        float shift, lookup[4];
        quantize_into(v.data(), K, c.data(), code.data(), shift, lookup);
        bool finite = std::isfinite(shift);
        for (float l : lookup) finite = finite && std::isfinite(l);
        if (!finite)
            return Status::error(
                "sparseloco: the kept values overflow the 2-bit quantiser's fp32 statistics "
                "(values near ±3.4e38)");
        const size_t old = out.size();
        out.resize(old + sparse_wire_bytes(K));
        uint8_t* dst = out.data() + old;
        write_f32(dst, shift);
        for (int b = 0; b < 4; ++b) write_f32(dst + 4 + 4 * b, lookup[b]);
        pack12_into(pos.data(), K, dst + 20);
        pack2_into(code.data(), K, dst + 20 + 3 * ((K + 1) / 2));
        return Status::ok();
    }

    Status decode_sparse(const uint8_t* in, size_t size, size_t& offset, at::IntArrayRef shape,
                         SparsePayload& out) const override {
        std::vector<int64_t> index;
        std::vector<float> value;
        auto sink = [&](int64_t t, int64_t flat, float v) {
            index[t] = flat;
            value[t] = v;
        };
        auto sized = [&](int64_t K) {
            index.resize(static_cast<size_t>(K));
            value.resize(static_cast<size_t>(K));
        };
        size_t off = offset;
        if (Status s = parse(in, size, off, shape, sized, sink); !s) return s;
        out.index = std::move(index);
        out.value = std::move(value);
        offset = off;
        return Status::ok();
    }

    bool needs_zeros() const override { return true; }
    Status decode_into(const uint8_t* in, size_t size, size_t& offset, at::IntArrayRef shape,
                       float* dst) const override {
        return parse(
            in, size, offset, shape, [](int64_t) {}, [dst](int64_t, int64_t flat, float v) { dst[flat] = v; });
    }

private:
    // Validates the payload and calls sink(t, flat index, decoded value) for every kept entry t
    // (after sized(K)). Advances `offset` only on success; the sink may have been called on failure.
    template <class Sized, class Sink>
    Status parse(const uint8_t* in, size_t size, size_t& offset, at::IntArrayRef shape, Sized&& sized,
                 Sink&& sink) const {
        auto n = numel_of(name(), shape);
        if (!n) return n.status();
        const Chunks g(shape, cfg_);
        const int64_t K = g.total_kept();
        const uint64_t need = sparse_wire_bytes(K);
        if (!has_bytes(size, offset, need)) return truncated(name(), need, size, offset);
        const uint8_t* p = in + offset;
        const float shift = read_f32(p);
        float dec[4];
        for (int b = 0; b < 4; ++b) {
            const float l = read_f32(p + 4 + 4 * b);
            if (!std::isfinite(l) || !std::isfinite(shift))
                return Status::error("sparseloco: payload shift or lookup is NaN/Inf");
            dec[b] = l + shift;
        }
        const uint8_t* idx = p + 20;
        const uint8_t* codes = idx + 3 * ((K + 1) / 2);
        if (K % 2 && index12(idx, K) != 0)
            return Status::error("sparseloco: malformed payload (non-zero index padding)");
        if (K % 4 && (codes[K / 4] >> (2 * (K % 4))) != 0)
            return Status::error("sparseloco: malformed payload (non-zero code padding)");
        sized(K);
        int64_t t = 0;
        for (int64_t j = 0; j < g.count; ++j) {
            const auto c = g.at(j);
            FlatMapper map(g, c);
            int64_t prev = -1;
            for (int64_t i = 0; i < c.kept; ++i, ++t) {
                const int64_t pos = index12(idx, t);
                if (pos >= c.n || pos <= prev)
                    return Status::error(
                        "sparseloco: index " + std::to_string(pos) + " in chunk " + std::to_string(j) +
                        (pos >= c.n ? " is out of range (chunk of " + std::to_string(c.n) + ")" : " is not ascending"));
                prev = pos;
                sink(t, map(pos), dec[(codes[t >> 2] >> (2 * (t & 3))) & 3]);
            }
        }
        offset += need;
        return Status::ok();
    }

    TopkConfig cfg_;
};

// A decoded tensor of `shape` (n elements). Past glibc's mmap threshold (32 MiB at most, the
// setting app/main.cpp uses) every allocation is a fresh mapping, and its 4 KiB page faults cost
// more than decoding itself (~35 ms per 64 MiB on the CI machine, against ~10 ms for the whole
// decode with 2 MiB pages). Such outputs are therefore 2 MiB-aligned and advised for transparent
// huge pages (an advice: no effect where THP is off). The tensor frees its memory when it dies;
// its storage is not resizable.
torch::Tensor new_output(at::IntArrayRef shape, int64_t n, bool zero) {
    const auto bytes = static_cast<size_t>(n) * 4;
    constexpr size_t kHuge = size_t{2} << 20;
    if (bytes >= (size_t{32} << 20)) {
        const size_t size = (bytes + kHuge - 1) / kHuge * kHuge;
        if (void* p = std::aligned_alloc(kHuge, size)) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
            madvise(p, size, MADV_HUGEPAGE);
#endif
            if (zero) std::memset(p, 0, bytes);
            return torch::from_blob(
                p, shape, [](void* q) { std::free(q); }, torch::kFloat32);
        }
    }
    return zero ? torch::zeros(shape, torch::kFloat32) : torch::empty(shape, torch::kFloat32);
}

}  // namespace

// ---- public entry points ------------------------------------------------------------------------

Status Codec::decode(const uint8_t* in, size_t size, size_t& offset, at::IntArrayRef shape, torch::Tensor& out) const {
    auto n = numel_of(name(), shape);
    if (!n) return n.status();
    if (const auto* direct = dynamic_cast<const DirectDecoder*>(this)) {
        auto t = new_output(shape, *n, direct->needs_zeros());
        size_t off = offset;
        if (Status s = direct->decode_into(in, size, off, shape, t.data_ptr<float>()); !s) return s;
        out = std::move(t);
        offset = off;
        return Status::ok();
    }
    SparsePayload sp;
    size_t off = offset;
    if (Status s = decode_sparse(in, size, off, shape, sp); !s) return s;
    auto t = new_output(shape, *n, true);
    float* dst = t.data_ptr<float>();
    for (size_t i = 0; i < sp.index.size(); ++i) {
        if (sp.index[i] < 0 || sp.index[i] >= *n)
            return Status::error(name() + ": decoded index " + std::to_string(sp.index[i]) + " out of range");
        dst[sp.index[i]] = sp.value[i];
    }
    out = std::move(t);
    offset = off;
    return Status::ok();
}

std::unique_ptr<Codec> make_dense_codec(bool bf16) { return std::make_unique<DenseCodec>(bf16); }
std::unique_ptr<Codec> make_int8_codec() { return std::make_unique<Int8Codec>(); }
std::unique_ptr<Codec> make_fp4_codec() { return std::make_unique<Fp4Codec>(); }
std::unique_ptr<Codec> make_sparseloco_codec(TopkConfig cfg) { return std::make_unique<SparseLoCoCodec>(cfg); }

std::vector<int64_t> topk_chunked(const torch::Tensor& x_in, const TopkConfig& cfg) {
    check_topk_config(cfg);
    TORCH_CHECK(x_in.scalar_type() == torch::kFloat32 && x_in.device().is_cpu(),
                "topk_chunked: CPU fp32 tensor expected");
    const auto x = x_in.contiguous();
    std::vector<uint16_t> pos;
    std::vector<int64_t> flat;
    const int64_t bad = topk_all(x.data_ptr<float>(), Chunks(x.sizes(), cfg), pos, &flat, nullptr);
    TORCH_CHECK(bad < 0, "topk_chunked: value at index ", bad, " is NaN or Inf");
    return flat;
}

std::vector<int64_t> chunk_counts(at::IntArrayRef shape, const TopkConfig& cfg) {
    check_topk_config(cfg);
    for (int64_t d : shape) TORCH_CHECK(d >= 0, "chunk_counts: negative dimension");
    const Chunks g(shape, cfg);
    std::vector<int64_t> counts(static_cast<size_t>(g.count));
    for (int64_t j = 0; j < g.count; ++j) counts[j] = g.at(j).kept;
    return counts;
}

Quantized2 quantize_2bit(const std::vector<float>& v) {
    Quantized2 q;
    const auto K = static_cast<int64_t>(v.size());
    std::vector<float> c(v.size());
    q.code.resize(v.size());
    quantize_into(v.data(), K, c.data(), q.code.data(), q.shift, q.lookup);
    return q;
}

std::vector<uint8_t> pack12(const std::vector<uint16_t>& idx) {
    std::vector<uint8_t> out(3 * ((idx.size() + 1) / 2));
    pack12_into(idx.data(), static_cast<int64_t>(idx.size()), out.data());
    return out;
}

std::vector<uint16_t> unpack12(const uint8_t* in, size_t n_idx) {
    std::vector<uint16_t> out(n_idx);
    for (size_t t = 0; t < n_idx; ++t) out[t] = index12(in, static_cast<int64_t>(t));
    return out;
}

std::vector<uint8_t> pack2(const std::vector<uint8_t>& codes) {
    std::vector<uint8_t> out((codes.size() + 3) / 4);
    pack2_into(codes.data(), static_cast<int64_t>(codes.size()), out.data());
    return out;
}

std::vector<uint8_t> unpack2(const uint8_t* in, size_t n_codes) {
    std::vector<uint8_t> out(n_codes);
    for (size_t t = 0; t < n_codes; ++t) out[t] = (in[t >> 2] >> (2 * (t & 3))) & 3;
    return out;
}

}  // namespace tw
