// The int8 outer-sync codec (docs/methods.md §4); wire layout in codec.h.
#include "engine/codec/codec_internal.h"

namespace tw {
namespace codec_detail {
namespace {

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

}  // namespace
}  // namespace codec_detail

std::unique_ptr<Codec> make_int8_codec() { return std::make_unique<codec_detail::Int8Codec>(); }

}  // namespace tw
