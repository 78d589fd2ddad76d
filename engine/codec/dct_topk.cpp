// DeMo's DCT + Top-k codec, arXiv 2411.19870; see dct_topk.h for the chunks and the wire layout.
#include "engine/codec/dct_topk.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>

namespace tw {
namespace {

bool is_matrix(at::IntArrayRef shape) { return shape.size() == 2; }

int64_t numel_of(at::IntArrayRef shape) {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
}

// Applies `m_rows` on the left and `m_cols` on the right of every tile, or `m` to every run:
// forward uses D, inverse Dᵀ.
torch::Tensor transform(const torch::Tensor& x_in, int64_t chunk, bool inverse) {
    torch::NoGradGuard no_grad;
    TORCH_CHECK(x_in.scalar_type() == torch::kFloat32, "dct_topk: fp32 tensors only");
    const torch::Tensor x = x_in.contiguous();
    torch::Tensor out = torch::empty_like(x);
    auto mat = [&](int64_t n) { return inverse ? dct_matrix(n).t() : dct_matrix(n); };
    if (is_matrix(x.sizes())) {
        for (const DctChunk& c : dct_chunks(x.sizes(), chunk)) {
            auto tile = x.narrow(0, c.row0, c.rows).narrow(1, c.col0, c.cols);
            out.narrow(0, c.row0, c.rows).narrow(1, c.col0, c.cols).copy_(mat(c.rows).mm(tile).mm(mat(c.cols).t()));
        }
        return out;
    }
    const auto flat = x.reshape({-1});
    auto oflat = out.view({-1});
    const int64_t n = flat.numel(), full = n / chunk, tail = n - full * chunk;
    // A run x as a row vector: (D·x)ᵀ = xᵀ·Dᵀ, so all full runs in one product.
    if (full > 0)
        oflat.narrow(0, 0, full * chunk)
            .view({full, chunk})
            .copy_(flat.narrow(0, 0, full * chunk).view({full, chunk}).mm(mat(chunk).t()));
    if (tail > 0) oflat.narrow(0, full * chunk, tail).copy_(mat(tail).mv(flat.narrow(0, full * chunk, tail)));
    return out;
}

// Flat index of position `pos` inside chunk `c` of a tensor whose rows are `width` long.
int64_t flat_index(const DctChunk& c, int64_t pos, int64_t width, bool matrix) {
    return matrix ? (c.row0 + pos / c.cols) * width + c.col0 + pos % c.cols : c.col0 + pos;
}

void put_f32(std::vector<uint8_t>& out, float v) {
    uint8_t b[4];
    std::memcpy(b, &v, 4);  // little-endian hosts only (x86-64, aarch64)
    out.insert(out.end(), b, b + 4);
}

}  // namespace

std::vector<DctChunk> dct_chunks(at::IntArrayRef shape, int64_t chunk) {
    std::vector<DctChunk> out;
    if (is_matrix(shape)) {
        const int64_t R = shape[0], C = shape[1];
        for (int64_t r = 0; r < R; r += chunk)
            for (int64_t c = 0; c < C; c += chunk) out.push_back({r, c, std::min(chunk, R - r), std::min(chunk, C - c)});
        return out;
    }
    const int64_t n = numel_of(shape);
    for (int64_t o = 0; o < n; o += chunk) out.push_back({0, o, 1, std::min(chunk, n - o)});
    return out;
}

std::vector<int64_t> dct_chunk_counts(at::IntArrayRef shape, const DctTopkConfig& cfg) {
    std::vector<int64_t> counts;
    const int64_t full = cfg.chunk * cfg.chunk;
    for (const DctChunk& c : dct_chunks(shape, cfg.chunk)) {
        const int64_t n = c.size();
        counts.push_back(std::min(n, (cfg.k * n + full - 1) / full));  // ⌈k·n / s²⌉
    }
    return counts;
}

int64_t dct_kept(at::IntArrayRef shape, const DctTopkConfig& cfg) {
    int64_t k = 0;
    for (auto n : dct_chunk_counts(shape, cfg)) k += n;
    return k;
}

torch::Tensor dct_matrix(int64_t n) {
    static std::mutex mu;
    static std::map<int64_t, torch::Tensor> cache;
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(n);
    if (it != cache.end()) return it->second;
    auto d = torch::empty({n, n}, torch::kFloat32);
    float* p = d.data_ptr<float>();
    const double pi = 3.14159265358979323846;
    for (int64_t f = 0; f < n; ++f) {
        const double a = std::sqrt((f == 0 ? 1.0 : 2.0) / static_cast<double>(n));
        for (int64_t j = 0; j < n; ++j)
            p[f * n + j] = static_cast<float>(a * std::cos(pi * static_cast<double>((2 * j + 1) * f) / (2.0 * n)));
    }
    cache.emplace(n, d);
    return d;
}

torch::Tensor chunked_dct(const torch::Tensor& x, int64_t chunk) { return transform(x, chunk, false); }
torch::Tensor chunked_idct(const torch::Tensor& c, int64_t chunk) { return transform(c, chunk, true); }

std::vector<int64_t> dct_topk_indices(const torch::Tensor& coeffs, const DctTopkConfig& cfg) {
    TORCH_CHECK(coeffs.scalar_type() == torch::kFloat32 && coeffs.is_contiguous(), "dct_topk: contiguous fp32 only");
    const bool matrix = is_matrix(coeffs.sizes());
    const int64_t width = matrix ? coeffs.size(1) : 0;
    const float* x = coeffs.data_ptr<float>();
    const auto chunks = dct_chunks(coeffs.sizes(), cfg.chunk);
    const auto counts = dct_chunk_counts(coeffs.sizes(), cfg);
    std::vector<int64_t> out, pos;
    for (size_t i = 0; i < chunks.size(); ++i) {
        const DctChunk& c = chunks[i];
        pos.resize(static_cast<size_t>(c.size()));
        for (int64_t p = 0; p < c.size(); ++p) pos[static_cast<size_t>(p)] = p;
        auto mag = [&](int64_t p) { return std::fabs(x[flat_index(c, p, width, matrix)]); };
        const auto k = static_cast<std::ptrdiff_t>(counts[i]);
        // Larger magnitude first; equal magnitudes: the lower position.
        std::nth_element(pos.begin(), pos.begin() + k - 1, pos.end(), [&](int64_t a, int64_t b) {
            const float ma = mag(a), mb = mag(b);
            return ma > mb || (ma == mb && a < b);
        });
        std::sort(pos.begin(), pos.begin() + k);
        for (std::ptrdiff_t j = 0; j < k; ++j) out.push_back(flat_index(c, pos[static_cast<size_t>(j)], width, matrix));
    }
    return out;
}

DctTopkCodec::DctTopkCodec(DctTopkConfig cfg) : cfg_(cfg) {}

Result<std::unique_ptr<DctTopkCodec>> make_dct_topk_codec(DctTopkConfig cfg) {
    if (cfg.chunk < 2 || cfg.chunk > 64)
        return Result<std::unique_ptr<DctTopkCodec>>::error("dct_topk: chunk " + std::to_string(cfg.chunk) +
                                                            " must be in [2, 64] (12-bit positions in a chunk)");
    if (cfg.k < 1 || cfg.k > cfg.chunk * cfg.chunk)
        return Result<std::unique_ptr<DctTopkCodec>>::error("dct_topk: k " + std::to_string(cfg.k) +
                                                            " must be in [1, chunk² = " +
                                                            std::to_string(cfg.chunk * cfg.chunk) + "]");
    return std::make_unique<DctTopkCodec>(cfg);
}

uint64_t DctTopkCodec::wire_bytes(at::IntArrayRef shape) const {
    const auto K = static_cast<uint64_t>(dct_kept(shape, cfg_));
    return 3 * ((K + 1) / 2) + (cfg_.values == DctValues::kFp32 ? 4 * K : (K + 7) / 8);
}

Status DctTopkCodec::encode(const torch::Tensor& x, std::vector<uint8_t>& out) const {
    if (x.numel() > 0 && !torch::isfinite(x).all().item<bool>()) {
        const int64_t bad = torch::nonzero(~torch::isfinite(x.reshape({-1}))).index({0, 0}).item<int64_t>();
        return Status::error("dct_topk: non-finite value at flat index " + std::to_string(bad));
    }
    return encode_coefficients(chunked_dct(x, cfg_.chunk), out, nullptr);
}

Status DctTopkCodec::encode_coefficients(const torch::Tensor& coeffs, std::vector<uint8_t>& out,
                                         SparsePayload* kept) const {
    const float* x = coeffs.data_ptr<float>();
    for (int64_t i = 0; i < coeffs.numel(); ++i)
        if (!std::isfinite(x[i]))
            return Status::error("dct_topk: non-finite coefficient at flat index " + std::to_string(i));
    const auto index = dct_topk_indices(coeffs, cfg_);
    // Positions inside their chunks, in the same order.
    const bool matrix = is_matrix(coeffs.sizes());
    const auto chunks = dct_chunks(coeffs.sizes(), cfg_.chunk);
    const auto counts = dct_chunk_counts(coeffs.sizes(), cfg_);
    std::vector<uint16_t> positions;
    positions.reserve(index.size());
    size_t j = 0;
    for (size_t i = 0; i < chunks.size(); ++i)
        for (int64_t n = 0; n < counts[i]; ++n, ++j) {
            const DctChunk& c = chunks[i];
            const int64_t f = index[j];
            const int64_t pos = matrix ? (f / coeffs.size(1) - c.row0) * c.cols + (f % coeffs.size(1) - c.col0) : f - c.col0;
            positions.push_back(static_cast<uint16_t>(pos));
        }
    const size_t start = out.size();
    const auto packed = pack12(positions);
    out.insert(out.end(), packed.begin(), packed.end());
    if (cfg_.values == DctValues::kFp32) {
        for (int64_t f : index) put_f32(out, x[f]);
    } else {
        std::vector<uint8_t> bits((index.size() + 7) / 8, 0);
        for (size_t i = 0; i < index.size(); ++i)
            if (x[index[i]] < 0) bits[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
        out.insert(out.end(), bits.begin(), bits.end());
    }
    if (out.size() - start != wire_bytes(coeffs.sizes()))
        return Status::error("dct_topk: internal: wrote " + std::to_string(out.size() - start) + " bytes, expected " +
                             std::to_string(wire_bytes(coeffs.sizes())));
    if (kept) {
        kept->index = index;
        kept->value.clear();
        for (int64_t f : index) kept->value.push_back(x[f]);
    }
    return Status::ok();
}

Status DctTopkCodec::decode_sparse(const uint8_t* in, size_t size, size_t& offset, at::IntArrayRef shape,
                                   SparsePayload& out) const {
    const uint64_t need = wire_bytes(shape);
    if (offset > size || size - offset < need)
        return Status::error("dct_topk: truncated payload at offset " + std::to_string(offset) + " (need " +
                             std::to_string(need) + " bytes, " + std::to_string(size - std::min(size, offset)) + " left)");
    const auto chunks = dct_chunks(shape, cfg_.chunk);
    const auto counts = dct_chunk_counts(shape, cfg_);
    size_t K = 0;
    for (auto n : counts) K += static_cast<size_t>(n);
    const uint8_t* p = in + offset;
    const auto positions = unpack12(p, K);
    if (K % 2 == 1 && (p[3 * (K / 2) + 1] >> 4 != 0 || p[3 * (K / 2) + 2] != 0))
        return Status::error("dct_topk: non-zero padding position at offset " + std::to_string(offset));
    const bool matrix = is_matrix(shape);
    const int64_t width = matrix ? shape[1] : 0;
    SparsePayload dec;
    dec.index.reserve(K);
    dec.value.reserve(K);
    size_t j = 0;
    for (size_t i = 0; i < chunks.size(); ++i)
        for (int64_t n = 0; n < counts[i]; ++n, ++j) {
            const int64_t pos = positions[j];
            if (pos >= chunks[i].size() || (n > 0 && pos <= positions[j - 1]))
                return Status::error("dct_topk: position " + std::to_string(pos) + " of chunk " + std::to_string(i) +
                                     " is out of the chunk or not ascending, at offset " + std::to_string(offset));
            dec.index.push_back(flat_index(chunks[i], pos, width, matrix));
        }
    const uint8_t* v = p + 3 * ((K + 1) / 2);
    if (cfg_.values == DctValues::kFp32) {
        for (size_t i = 0; i < K; ++i) {
            float f;
            std::memcpy(&f, v + 4 * i, 4);
            if (!std::isfinite(f))
                return Status::error("dct_topk: non-finite value " + std::to_string(i) + " at offset " +
                                     std::to_string(offset));
            dec.value.push_back(f);
        }
    } else {
        if (K % 8 != 0 && (v[K / 8] >> (K % 8)) != 0)
            return Status::error("dct_topk: non-zero padding bits at offset " + std::to_string(offset));
        for (size_t i = 0; i < K; ++i) dec.value.push_back((v[i / 8] >> (i % 8)) & 1 ? -1.0f : 1.0f);
    }
    out = std::move(dec);
    offset += need;
    return Status::ok();
}

}  // namespace tw
