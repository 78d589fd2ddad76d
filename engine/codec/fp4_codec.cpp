// The fp4 (E3M0) outer-sync codec (docs/methods.md §4); wire layout in codec.h.
#include "engine/codec/codec_internal.h"

namespace tw {
namespace codec_detail {
namespace {

class Fp4Codec final : public ScaledBase {
public:
    std::string name() const override { return "fp4"; }

protected:
    uint64_t payload_bytes(uint64_t n) const override { return 4 + (n + 1) / 2; }
    float scale_of(float max_abs) const override { return max_abs; }

    void write_codes(const float* p, int64_t n, float s, uint8_t* dst) const override {
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
    }

    Status read_codes(const uint8_t* src, int64_t n, float s, float* dst) const override {
        float level[16];
        for (int e = 0; e < 8; ++e) {
            level[e] = e == 0 ? 0.0f : s * std::ldexp(1.0f, e - 7);
            level[8 + e] = -level[e];
        }
        int bad = 0;  // code 8 (sign + zero) and a non-zero pad nibble are never written
        for (int64_t i = 0; i + 1 < n; i += 2) {
            const uint8_t b = src[i / 2];
            bad |= (b & 15) == 8 || (b >> 4) == 8;
            dst[i] = level[b & 15];
            dst[i + 1] = level[b >> 4];
        }
        if (n % 2) {
            const uint8_t b = src[n / 2];
            bad |= (b & 15) == 8 || (b >> 4) != 0;
            dst[n - 1] = level[b & 15];
        }
        if (bad) return Status::error("fp4: malformed payload (negative-zero code or non-zero padding)");
        return Status::ok();
    }
};

}  // namespace
}  // namespace codec_detail

std::unique_ptr<Codec> make_fp4_codec() { return std::make_unique<codec_detail::Fp4Codec>(); }

}  // namespace tw
