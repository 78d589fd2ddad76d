// Codecs for outer-sync payloads (docs/methods.md §3, §4): pure functions over fp32 tensors with an
// exact wire size. Every byte a codec writes is counted by the transport, so wire_bytes() must
// equal what encode() appends, to the byte. Each codec's wire layout is written down in its
// section below. Errors are values: NaN or Inf input, a truncated or malformed payload.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "core/status.h"

namespace tw {

// ---------------------------------------------------------------------------------------------
// The interface
// ---------------------------------------------------------------------------------------------

// One tensor's payload in sparse form: flat indices into the tensor (ascending within each chunk,
// chunks in order) and their decoded values. Dense codecs return every index.
struct SparsePayload {
    std::vector<int64_t> index;  // flat positions, 0 ≤ index < numel
    std::vector<float> value;    // decoded values, same length
};

class Codec {
public:
    virtual ~Codec() = default;
    virtual std::string name() const = 0;  // "fp32", "bf16", "int8", "fp4", "sparseloco"
    // Appends the encoding of `x` (fp32, any shape, contiguous) to `out`. NaN/Inf → error naming
    // the codec; `out` is then left as it was.
    virtual Status encode(const torch::Tensor& x, std::vector<uint8_t>& out) const = 0;
    // Decodes one tensor of `shape` from `in[offset...]` (at most `size` bytes in all), advancing
    // `offset` past it. Truncated or malformed input → error, offset unchanged.
    virtual Status decode_sparse(const uint8_t* in, size_t size, size_t& offset, at::IntArrayRef shape,
                                 SparsePayload& out) const = 0;
    // decode_sparse scattered into a dense fp32 tensor of `shape` (zeros elsewhere).
    Status decode(const uint8_t* in, size_t size, size_t& offset, at::IntArrayRef shape, torch::Tensor& out) const;
    // Exact bytes encode() appends for a tensor of `shape`.
    virtual uint64_t wire_bytes(at::IntArrayRef shape) const = 0;
};

// ---------------------------------------------------------------------------------------------
// Dense: fp32 (4 B per value, little-endian IEEE) and bf16 (2 B, round-to-nearest-even of fp32;
//   a finite value that rounds to ±Inf in bf16 is an error).
// int8: fp32 scale s = max|x| / 127 (s = 0 for all-zero input), then round_half_even(x / s)
//   clamped to [−127, 127] as int8 → 4 + n bytes; decode v = s·q (fp32 accumulation).
// fp4 (E3M0, docs/methods.md §4): fp32 scale s = max|x|, then per value a 4-bit code: sign bit + 3-bit
//   exponent e in 0..7, magnitude s·2^(e−7) (e = 0 → exact zero), nearest in log2 space
//   (ties to the larger magnitude); two codes per byte, low nibble first → 4 + ceil(n / 2) bytes.
//   Precisely: e = how many of the thresholds t_1 = s·2^−7 (half the smallest level: zero has no
//   log2 position) and t_e = s·2^(e−7.5), e = 2..7 (log2 midpoints), |x| reaches (|x| ≥ t_e),
//   decided exactly (x² against t_e² in double; only t_1 can tie). Zero and s = 0 give code 0.
// ---------------------------------------------------------------------------------------------
std::unique_ptr<Codec> make_dense_codec(bool bf16);
std::unique_ptr<Codec> make_int8_codec();
std::unique_ptr<Codec> make_fp4_codec();
// The codec of an outer.dtype name (fp32, bf16, int8, fp4: core/wire_dtype.h); an unknown name is
// an error naming the key (wire_codec.cpp).
Result<std::unique_ptr<Codec>> make_wire_codec(const std::string& dtype);

// ---------------------------------------------------------------------------------------------
// SparseLoCo (docs/methods.md §3): chunked Top-k, then the 2-bit statistical quantiser.
// Chunks: a 2-D tensor [R, C] is cut into block × block tiles (row-major over tiles; edge tiles
//   smaller), any other tensor is flattened into runs of block² elements (the last shorter).
//   A chunk of n elements keeps k_n = min(n, k) if n is a full chunk, else the even number
//   closest to k·n / block² (at least 2, at most n) — deterministic from the shape, so the decoder
//   knows every chunk's count without it being sent. In integers: k_n = min(n, max(2,
//   2·floor((k·n + block²) / (2·block²)))), i.e. a tie between two even numbers goes up, and a
//   1-element chunk keeps 1. Requires k even, 2 ≤ k ≤ block², block² ≤ 4096 (checked by the factory).
// Per tensor wire: shift (fp32) | lookup[4] (fp32) | indices | codes, where indices are each
//   kept entry's position inside its chunk (0..block²−1 < 4096 for block 64; row-major inside a
//   tile, r·w + c for a tile w wide, so an edge tile's positions are < its size), 12 bits each, two
//   indices in three bytes (a: low 8 bits | a high 4 bits + b low 4 bits << 4 | b high 8 bits),
//   an odd count padded with a zero index; codes are 2 bits, four per byte, first in the low bits,
//   the last byte zero-padded. Bytes = 20 + 3·ceil(K/2) + ceil(K/4) for K kept values.
// Quantiser over the K kept values v of the whole tensor: shift = mean(v); c = v − shift;
//   σ = unbiased std of c (0 if K < 2); scale = 6σ/4; code = clamp(round_half_even(c/scale + 2),
//   0, 3) (all codes 2 when σ = 0); lookup[b] = mean of c over entries with code b (0 when
//   empty); decode v̂ = lookup[code] + shift.
//   Arithmetic (so that an independent implementation reproduces it bit for bit): sums, means and
//   σ in double, each of shift, scale and lookup[b] rounded once to fp32; c = v − shift, c / scale,
//   + 2 and lookup[code] + shift are single fp32 operations. "σ = 0" means the fp32 scale is 0.
//   Kept values in the kept order (chunk by chunk, ascending inside a chunk). A shift or lookup
//   that overflows fp32 is an encode error.
// ---------------------------------------------------------------------------------------------
struct TopkConfig {
    int64_t block = 64;  // chunk side for matrices; vectors use runs of block² (4096) elements
    int64_t k = 64;      // kept entries per full chunk (even); density k / block²
};
std::unique_ptr<Codec> make_sparseloco_codec(TopkConfig cfg);

// Building blocks, exposed for tests and the PyTorch cross-check.
// Flat indices of the k_n largest |x| of every chunk, chunk by chunk, ascending within a chunk
// (ties: the lower index wins).
std::vector<int64_t> topk_chunked(const torch::Tensor& x, const TopkConfig& cfg);
// The kept count of every chunk of `shape`, in chunk order.
std::vector<int64_t> chunk_counts(at::IntArrayRef shape, const TopkConfig& cfg);
struct Quantized2 {
    float shift = 0;
    float lookup[4] = {0, 0, 0, 0};
    std::vector<uint8_t> code;  // one 0..3 per value
};
Quantized2 quantize_2bit(const std::vector<float>& v);
std::vector<uint8_t> pack12(const std::vector<uint16_t>& idx);  // 3 bytes per pair
std::vector<uint16_t> unpack12(const uint8_t* in, size_t n_idx);
std::vector<uint8_t> pack2(const std::vector<uint8_t>& codes);   // four per byte
std::vector<uint8_t> unpack2(const uint8_t* in, size_t n_codes);

}  // namespace tw
