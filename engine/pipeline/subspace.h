// Subspace-compressed pipeline boundaries, Protocol Models / Subspace Networks, arXiv 2506.01260
// (docs/methods.md §6, and AD2/AD3 of §7).
//
// Every node derives the same orthonormal basis U [d, k] and frozen token embedding T_fixed [V, d]
// from a seed. While the residual-stream writers of the compressed stages (the trainable embedding
// `tok_emb` and each block's `wo` and `w2`) lie in span(U), a stage's output X satisfies
// X − T_fixed[ids] ∈ span(U), so a boundary sends the coordinates C = (X − T_fixed[ids])·U plus the
// token ids and the receiver rebuilds X = C·Uᵀ + T_fixed[ids]. Backward sends G·U and the receiver
// uses (G·U)·Uᵀ. Rank k = 0 means no compression: dense fp32 X and G, no ids.
//
// Payload layouts (no header: B, T, d, k, dtype and vocab are known to both ends; N = B·T tokens,
// all values little-endian):
//   k = 0                 forward and backward: X or G as fp32 [N, d]
//   fp32 / bf16, forward  C [N, k] (fp32 or bf16, round to nearest even), then ids [N]
//   fp32 / bf16, backward G·U [N, k]
//   int8, forward         per-token scales fp32 [N], codes int8 [N, k], then ids [N]
//   int8, backward        per-token scales fp32 [N], codes int8 [N, k]
// int8 is symmetric per token: scale = absmax/127, code = round_half_even(c/scale) in [−127, 127].
// ids are uint16 when vocab ≤ 65536, else uint32.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "core/status.h"
#include "core/wire_dtype.h"

namespace tw {

// ---- Coordinates on the wire ----------------------------------------------------------------------

// The wire dtypes coordinates can travel in (core/wire_dtype.h): fp32, bf16 or int8 (not fp4).
Result<WireDtype> parse_coord_dtype(const std::string& s);

// ---- Shared seeded tensors ------------------------------------------------------------------------

// U_k = Q[:, :k] of the QR decomposition of a seeded N(0, 1) d×d matrix with R's diagonal positive.
// Computed in float64 by a plain Householder QR (no BLAS/LAPACK, no threads), so it is identical on
// every node and at every thread count; returned as fp32 [d, k]. Nested: the basis for k1 < k2 is
// bit for bit the first k1 columns of the basis for k2. Cost O(d·k²): ~1 s at d = k = 1024.
// Requires 0 < k ≤ d.
torch::Tensor subspace_basis(int64_t d, int64_t k, uint64_t seed);

// T_fixed: N(0, 1) fp32 [vocab, d] from its own seeded generator.
torch::Tensor frozen_embedding(int64_t vocab, int64_t d, uint64_t seed);

// ---- Wire sizes -----------------------------------------------------------------------------------

// Bytes of one boundary's payload for a micro-batch of B×T tokens (see the layouts above).
// k = 0 ignores `c` and `vocab`.
uint64_t forward_wire_bytes(int64_t B, int64_t T, int64_t d, int64_t k, WireDtype c, int64_t vocab);
uint64_t backward_wire_bytes(int64_t B, int64_t T, int64_t d, int64_t k, WireDtype c);

// ---- Encoders and decoders ------------------------------------------------------------------------
// `u` = [d, k] fp32 (undefined when k = 0), `t_fixed` = [vocab, d] fp32 (undefined when k = 0),
// `ids` = [B, T] int64. None of them records autograd history. Shape and dtype mismatches of the
// tensors are programmer errors (TORCH_CHECK); a malformed payload is a Result error.

// x: [B, T, d] stage output. Returns exactly forward_wire_bytes(...) bytes.
std::vector<uint8_t> encode_activations(const torch::Tensor& x, const torch::Tensor& ids, const torch::Tensor& t_fixed,
                                        const torch::Tensor& u, WireDtype c, int64_t vocab);
// Returns X [B, T, d] fp32 = C·Uᵀ + T_fixed[ids] (k > 0) or the dense X (k = 0). When k > 0 and
// `ids_out` is given, writes the token ids [B, T] int64 to it. A payload of the wrong size, an id
// ≥ vocab or a non-finite / negative int8 scale is an error naming what was expected and what came.
Result<torch::Tensor> decode_activations(const std::vector<uint8_t>& payload, int64_t B, int64_t T, int64_t d,
                                         const torch::Tensor& t_fixed, const torch::Tensor& u, WireDtype c,
                                         int64_t vocab, torch::Tensor* ids_out);

// g: [B, T, d] gradient of the loss w.r.t. the boundary's X. Returns backward_wire_bytes(...) bytes.
std::vector<uint8_t> encode_gradient(const torch::Tensor& g, const torch::Tensor& u, WireDtype c);
// Returns [B, T, d] fp32 = (G·U)·Uᵀ (k > 0) or the dense G (k = 0).
Result<torch::Tensor> decode_gradient(const std::vector<uint8_t>& payload, int64_t B, int64_t T, int64_t d,
                                      const torch::Tensor& u, WireDtype c);

// ---- Keeping the writers in span(U) ---------------------------------------------------------------

// True for the names Llama registers for residual-stream writers: "tok_emb", "block_N.wo",
// "block_N.w2". Names alone cannot tell where the constraint applies: the caller applies it to the
// stages before a compressed boundary only (the last stage's blocks stay free), and a split tied
// model's last stage holds a "tok_emb" that is the head, not a writer.
bool is_residual_writer(const std::string& param_name);

// Projects a writer onto span(U) in place, without autograd: "tok_emb" [V, d]: W ← W·U·Uᵀ;
// "block_N.wo" / "block_N.w2" [d, in]: W ← U·Uᵀ·W. Also serves AD3 (an error-feedback buffer shaped
// like the writer, projected by the same rule). TORCH_CHECK on a name that is not a writer.
void project_writer(const std::string& param_name, torch::Tensor& w, const torch::Tensor& u);

// ‖W − P_U(W)‖ / ‖W‖ in float64, P_U the projection project_writer applies (0 for W = 0).
double out_of_span_fraction(const std::string& param_name, const torch::Tensor& w, const torch::Tensor& u);

// AD2: moves the out-of-span part of the trainable embedding into the frozen one, in place:
// t_fixed += t_s − t_s·U·Uᵀ; t_s ← t_s·U·Uᵀ. t_fixed + t_s is unchanged up to fp32 rounding. Every
// node that holds t_fixed must apply the same update (with the same t_s) to stay in step.
void move_out_of_span_into_frozen(torch::Tensor& t_s, torch::Tensor& t_fixed, const torch::Tensor& u);

// Intended usage, one pipeline boundary between stage s (sender) and s + 1 (receiver):
//   auto u = subspace_basis(d, k, seed);  auto t_fixed = frozen_embedding(V, d, seed);   // every node
//   stage s, after each optimizer step: for each writer name n of stages ≤ s: project_writer(n, w, u)
//   forward:  send(encode_activations(y, ids, t_fixed, u, c, V));
//             x = *decode_activations(recv(), B, T, d, t_fixed, u, c, V, &ids);  x.requires_grad_()
//   backward: send(encode_gradient(x.grad(), u, c));
//             y.backward(*decode_gradient(recv(), B, T, d, u, c));

}  // namespace tw
