// DeMo's codec (Peng, Quesnelle, Kingma, "DeMo: Decoupled Momentum Optimization", arXiv 2411.19870):
// a chunked DCT-II, the k largest-magnitude coefficients of every chunk, and only their positions and
// values (or signs) on the wire. The payload lives in the transform domain: decode_sparse gives
// coefficient positions and values of the chunked DCT (chunked_dct below) of the encoded tensor, and
// chunked_idct brings a coefficient tensor back. Pure functions; errors are values (NaN/Inf input,
// a truncated or malformed payload).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "core/status.h"
#include "engine/codec/codec.h"

namespace tw {

// What travels per kept coefficient besides its position. Values are stable (they name wire formats).
enum class DctValues : uint8_t {
    kFp32 = 0,  // the coefficient, IEEE fp32 little-endian (4 B)
    kSign = 1,  // its sign only, one bit (1 = negative), decoded as ±1; an exact 0 is sent as +1
};

struct DctTopkConfig {
    int64_t chunk = 64;  // s: tile side for matrices, run length for every other tensor; 2 ≤ s ≤ 64
    int64_t k = 32;      // coefficients kept per full chunk (1 ≤ k ≤ s²)
    DctValues values = DctValues::kFp32;
};

// ---------------------------------------------------------------------------------------------
// Chunks. A 2-D tensor [R, C] is cut into s×s tiles, row-major over tiles, edge tiles smaller; every
// other tensor (0-d, 1-d, 3-d, …) is flattened into runs of s elements, the last shorter. A tile gets
// the 2-D DCT-II (D_h · T · D_wᵀ), a run the 1-D one (D_n · x). A chunk of n elements keeps
// K_n = min(n, ⌈k·n / s²⌉) coefficients: k for a full tile, proportionally fewer (at least 1) for
// edge tiles and runs, so the density is about k/s² everywhere and a decoder derives every count
// from the shape.
// ---------------------------------------------------------------------------------------------
struct DctChunk {
    int64_t row0 = 0, col0 = 0;  // first element: row and column of a tile; for a run row0 = 0, col0 = flat offset
    int64_t rows = 1, cols = 0;  // tile height and width; a run is 1 × its length
    int64_t size() const { return rows * cols; }
};
std::vector<DctChunk> dct_chunks(at::IntArrayRef shape, int64_t chunk);
// K_n of every chunk of `shape`, in chunk order, and their sum.
std::vector<int64_t> dct_chunk_counts(at::IntArrayRef shape, const DctTopkConfig& cfg);
int64_t dct_kept(at::IntArrayRef shape, const DctTopkConfig& cfg);

// The orthonormal DCT-II matrix [n, n]: D[f][j] = a_f·cos(π·(2j+1)·f / (2n)), a_0 = √(1/n),
// a_f = √(2/n) otherwise; computed in double, rounded once to fp32. Its transpose is the inverse
// (DCT-III). Cached per n; thread-safe.
torch::Tensor dct_matrix(int64_t n);
// Every chunk of `x` (fp32, any shape) replaced by its DCT-II; same shape, contiguous fp32.
torch::Tensor chunked_dct(const torch::Tensor& x, int64_t chunk);
// The inverse: every chunk of the coefficient tensor `c` replaced by its inverse DCT.
torch::Tensor chunked_idct(const torch::Tensor& c, int64_t chunk);
// Flat indices of the K_n largest-magnitude entries of every chunk of `coeffs`, chunk by chunk,
// ascending inside a chunk; ties: the lower position wins.
std::vector<int64_t> dct_topk_indices(const torch::Tensor& coeffs, const DctTopkConfig& cfg);

// ---------------------------------------------------------------------------------------------
// Wire, per tensor: positions | values.
//   positions: each kept coefficient's position inside its chunk (r·w + c in a tile w wide, the
//     offset in a run; < s² ≤ 4096), 12 bits each, two in three bytes as the SparseLoCo codec packs
//     them (codec.h), an odd count padded with a zero position → 3·⌈K/2⌉ bytes;
//   values: kFp32 4·K bytes; kSign ⌈K/8⌉ bytes, bit j%8 of byte j/8 set for a negative value, the
//     last byte zero-padded.
// Bytes = 3·⌈K/2⌉ + (4·K | ⌈K/8⌉), K = Σ K_n. An empty tensor sends nothing.
// ---------------------------------------------------------------------------------------------
class DctTopkCodec : public Codec {
public:
    explicit DctTopkCodec(DctTopkConfig cfg);
    std::string name() const override { return "dct_topk"; }
    // chunked_dct(x), then encode_coefficients.
    Status encode(const torch::Tensor& x, std::vector<uint8_t>& out) const override;
    // Appends the kept coefficients of `coeffs` (a chunked DCT, fp32 contiguous); `kept`, when given,
    // receives their flat indices and exact values (what DeMo takes out of its momentum).
    Status encode_coefficients(const torch::Tensor& coeffs, std::vector<uint8_t>& out, SparsePayload* kept) const;
    // The kept coefficients as sent: flat indices into the coefficient tensor and their values (±1
    // under kSign).
    Status decode_sparse(const uint8_t* in, size_t size, size_t& offset, at::IntArrayRef shape,
                         SparsePayload& out) const override;
    uint64_t wire_bytes(at::IntArrayRef shape) const override;
    const DctTopkConfig& config() const { return cfg_; }

private:
    DctTopkConfig cfg_;
};

// Checks the config (chunk in [2, 64], k in [1, chunk²]) and builds the codec.
Result<std::unique_ptr<DctTopkCodec>> make_dct_topk_codec(DctTopkConfig cfg);

}  // namespace tw
