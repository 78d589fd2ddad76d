// The dense outer-sync codec, fp32 or bf16 (docs/methods.md §4); wire layout in codec.h.
#include "engine/codec/codec_internal.h"

namespace tw {
namespace codec_detail {
namespace {

class DenseCodec final : public DenseBase {
public:
    explicit DenseCodec(bool bf16) : bf16_(bf16) {}
    std::string name() const override { return bf16_ ? "bf16" : "fp32"; }

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
        auto n = payload_numel(size, offset, shape);
        if (!n) return n.status();
        const uint64_t need = payload_bytes(static_cast<uint64_t>(*n));
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

protected:
    uint64_t payload_bytes(uint64_t n) const override { return n * (bf16_ ? 2u : 4u); }

private:
    bool bf16_;
};

}  // namespace
}  // namespace codec_detail

std::unique_ptr<Codec> make_dense_codec(bool bf16) { return std::make_unique<codec_detail::DenseCodec>(bf16); }

}  // namespace tw
