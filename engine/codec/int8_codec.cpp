// The int8 outer-sync codec (docs/methods.md §4); wire layout in codec.h.
#include "engine/codec/codec_internal.h"

namespace tw {
namespace codec_detail {
namespace {

class Int8Codec final : public ScaledBase {
public:
    std::string name() const override { return "int8"; }

protected:
    uint64_t payload_bytes(uint64_t n) const override { return 4 + n; }
    float scale_of(float max_abs) const override { return max_abs / 127.0f; }

    void write_codes(const float* p, int64_t n, float s, uint8_t* codes) const override {
        auto* q = reinterpret_cast<int8_t*>(codes);
        for (int64_t i = 0; i < n; ++i) {
            float t = round_half_even_small(p[i] / s);
            t = std::min(127.0f, std::max(-127.0f, t));
            q[i] = static_cast<int8_t>(t);
        }
    }

    Status read_codes(const uint8_t* codes, int64_t n, float s, float* dst) const override {
        const auto* q = reinterpret_cast<const int8_t*>(codes);
        int bad = 0;
        for (int64_t i = 0; i < n; ++i) {
            bad |= q[i] == -128;
            dst[i] = s * static_cast<float>(q[i]);
        }
        if (bad) {
            const int64_t i = std::find(q, q + n, int8_t{-128}) - q;
            return Status::error("int8: payload code −128 at index " + std::to_string(i) +
                                 " (the encoder clamps to ±127)");
        }
        return Status::ok();
    }
};

}  // namespace
}  // namespace codec_detail

std::unique_ptr<Codec> make_int8_codec() { return std::make_unique<codec_detail::Int8Codec>(); }

}  // namespace tw
