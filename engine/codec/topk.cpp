// The public Top-k, quantiser and packing helpers of codec.h, over topk_kernels.h.
#include "engine/codec/topk_kernels.h"

namespace tw {

using namespace codec_detail;

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
