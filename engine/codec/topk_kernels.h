// SparseLoCo's chunked Top-k and 2-bit quantiser as raw-buffer kernels (codec.h documents the wire
// layout): the chunking of a tensor, the selection of each chunk's largest magnitudes, the
// quantiser and the 12-bit / 2-bit packers. Shared by the SparseLoCo codec and the public helpers
// of codec.h; internal to engine/codec.
#pragma once

#include "engine/codec/codec_internal.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tw::codec_detail {

inline void check_topk_config(const TopkConfig& cfg) {
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

inline uint64_t sparse_wire_bytes(int64_t K) {
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
inline bool abs_keys(const uint32_t* src, int64_t n, int32_t* dst) {
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
inline bool load_keys(const Chunks& g, const Chunks::Chunk& c, const float* x, Scratch& s) {
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
inline void group_maxima(const int32_t* key, int64_t n, int64_t G, int32_t* gmax) {
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
inline int64_t compact_candidates(const int32_t* key, int64_t n, int32_t lower, int32_t* ckey, uint16_t* cpos) {
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
inline void select_topk(int64_t n, int64_t kn, Scratch& s, uint16_t* out) {
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
inline int64_t topk_all(const float* x, const Chunks& g, std::vector<uint16_t>& pos, std::vector<int64_t>* flat,
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
inline double sum4(int64_t K, F&& f) {
    double s[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= K; i += 4)
        for (int l = 0; l < 4; ++l) s[l] += f(i + l);
    for (; i < K; ++i) s[0] += f(i);
    return (s[0] + s[1]) + (s[2] + s[3]);
}

inline void quantize_into(const float* v, int64_t K, float* c, uint8_t* code, float& shift, float lookup[4]) {
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

inline void pack12_into(const uint16_t* idx, int64_t n, uint8_t* out) {
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
inline void pack2_into(const uint8_t* codes, int64_t n, uint8_t* out) {
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

}  // namespace tw::codec_detail
