// SparseLoCo's codec: chunked Top-k with 2-bit values (docs/methods.md §3); wire layout in codec.h.
#include "engine/codec/codec_internal.h"
#include "engine/codec/topk_kernels.h"

namespace tw {
namespace codec_detail {
namespace {

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

}  // namespace
}  // namespace codec_detail

std::unique_ptr<Codec> make_sparseloco_codec(TopkConfig cfg) { return std::make_unique<codec_detail::SparseLoCoCodec>(cfg); }

}  // namespace tw
