// Fused forward/backward kernels for the decoder's memory-bound steps. Each is one autograd node
// with a hand-written backward, replacing chains of small ATen ops (and their saved
// intermediates). tests/engine/test_fused_ops.cpp checks each against the composite ATen
// expression in double precision.
#pragma once

#include <torch/types.h>

namespace tw::fused {

// RMSNorm over the last dim: x · rsqrt(mean(x²) + eps) · w.   x: [..., d] fp32, w: [d]
torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& w, double eps);

// Splits a fused QKV projection into heads and applies rotate-half RoPE to q and k.
//   qkv: [B, T, 3·d] laid out [q | k | v], heads contiguous inside each; cos, sin: [T, hd]
//   returns q, k, v: [B, h, T, hd] contiguous
std::vector<torch::Tensor> qkv_rope(const torch::Tensor& qkv, const torch::Tensor& cos, const torch::Tensor& sin,
                                    int64_t n_head);

// Causal softmax attention with the heads merged back: y[b, t, h·hd + j].
//   q, k, v: [B, h, T, hd] contiguous fp32 → y: [B, T, h·hd]
// One GEMM call per head straight into BLAS (no per-batch ATen dispatch), the causal softmax
// computed on the lower triangle only, and the head merge written by the GEMM's output stride.
// Requires a CBLAS sgemm in the process (OpenBLAS with Debian's LibTorch); see has_cblas().
torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);
bool has_cblas();

// SwiGLU gate: silu(a)·b where ab = [a | b] along the last dim.   ab: [..., 2·f] → [..., f]
torch::Tensor swiglu(const torch::Tensor& ab);

// Mean next-token cross-entropy. logits: [N, V] fp32, targets: [N] int64. The backward writes
// softmax − onehot from the saved softmax: one exponential pass in all, no zero-filled [N, V].
torch::Tensor cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets);

}  // namespace tw::fused
