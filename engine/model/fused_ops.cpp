// Fused kernels; see fused_ops.h. Loops are plain C++ over contiguous fp32 rows so the compiler
// vectorises them; rows are independent and split with at::parallel_for.
#include "engine/model/fused_ops.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cmath>

namespace tw::fused {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

constexpr int64_t kGrain = 64;  // rows per parallel chunk

struct RmsNormFn : torch::autograd::Function<RmsNormFn> {
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x_in, const torch::Tensor& w, double eps) {
        auto x = x_in.contiguous();
        const int64_t d = x.size(-1), rows = x.numel() / d;
        auto y = torch::empty_like(x);
        auto r = torch::empty({rows}, x.options());  // saved 1/rms per row
        const float* px = x.data_ptr<float>();
        const float* pw = w.data_ptr<float>();
        float* py = y.data_ptr<float>();
        float* pr = r.data_ptr<float>();
        at::parallel_for(0, rows, kGrain, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
                const float* xi = px + i * d;
                float ss = 0;
                for (int64_t j = 0; j < d; ++j) ss += xi[j] * xi[j];
                const float ri = 1.0f / std::sqrt(ss / static_cast<float>(d) + static_cast<float>(eps));
                pr[i] = ri;
                float* yi = py + i * d;
                for (int64_t j = 0; j < d; ++j) yi[j] = xi[j] * ri * pw[j];
            }
        });
        ctx->save_for_backward({x, w, r});
        return y;
    }

    // gx = r·(g·w − x̂·mean(g·w·x̂)), x̂ = x·r;  gw = Σ_rows g·x̂
    static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
        auto saved = ctx->get_saved_variables();
        auto x = saved[0], w = saved[1], r = saved[2];
        auto g = grads[0].contiguous();
        const int64_t d = x.size(-1), rows = x.numel() / d;
        auto gx = torch::empty_like(x);
        const float *px = x.data_ptr<float>(), *pw = w.data_ptr<float>(), *pr = r.data_ptr<float>();
        const float* pg = g.data_ptr<float>();
        float* pgx = gx.data_ptr<float>();
        // Per-row contributions to gw summed in fixed row order afterwards: deterministic for any thread count.
        auto gw_rows = torch::empty({rows, d}, x.options());
        float* pgwr = gw_rows.data_ptr<float>();
        at::parallel_for(0, rows, kGrain, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
                const float *xi = px + i * d, *gi = pg + i * d;
                const float ri = pr[i];
                float dot = 0;
                for (int64_t j = 0; j < d; ++j) dot += gi[j] * pw[j] * xi[j];
                const float c = dot * ri * ri / static_cast<float>(d);  // r²·mean(g·w·x), from d r / d x = −r³·x/d
                float* gxi = pgx + i * d;
                float* gwi = pgwr + i * d;
                for (int64_t j = 0; j < d; ++j) {
                    gxi[j] = ri * (gi[j] * pw[j] - xi[j] * c);
                    gwi[j] = gi[j] * xi[j] * ri;
                }
            }
        });
        return {gx, gw_rows.sum(0), torch::Tensor()};
    }
};

// Rotate-half RoPE on one head vector: out_j = x_j·cos_j + rot(x)_j·sin_j, rot(x) = [−x2, x1].
inline void rope_fwd(const float* x, const float* c, const float* s, float* out, int64_t hd) {
    const int64_t h2 = hd / 2;
    for (int64_t j = 0; j < h2; ++j) out[j] = x[j] * c[j] - x[j + h2] * s[j];
    for (int64_t j = h2; j < hd; ++j) out[j] = x[j] * c[j] + x[j - h2] * s[j];
}
// Its transpose: gx_j = g_j·cos_j + rotᵀ(g·sin)_j, rotᵀ(y) = [y2, −y1].
inline void rope_bwd(const float* g, const float* c, const float* s, float* gx, int64_t hd) {
    const int64_t h2 = hd / 2;
    for (int64_t j = 0; j < h2; ++j) gx[j] = g[j] * c[j] + g[j + h2] * s[j + h2];
    for (int64_t j = h2; j < hd; ++j) gx[j] = g[j] * c[j] - g[j - h2] * s[j - h2];
}

struct QkvRopeFn : torch::autograd::Function<QkvRopeFn> {
    static tensor_list forward(AutogradContext* ctx, const torch::Tensor& qkv_in, const torch::Tensor& cos,
                               const torch::Tensor& sin, int64_t n_head) {
        auto qkv = qkv_in.contiguous();
        const int64_t B = qkv.size(0), T = qkv.size(1), d = qkv.size(2) / 3, hd = d / n_head;
        auto opts = qkv.options();
        auto q = torch::empty({B, n_head, T, hd}, opts), k = torch::empty_like(q), v = torch::empty_like(q);
        const float *src = qkv.data_ptr<float>(), *pc = cos.data_ptr<float>(), *ps = sin.data_ptr<float>();
        float *pq = q.data_ptr<float>(), *pk = k.data_ptr<float>(), *pv = v.data_ptr<float>();
        at::parallel_for(0, B * T, kGrain, [&](int64_t b0, int64_t e0) {
            for (int64_t bt = b0; bt < e0; ++bt) {
                const int64_t b = bt / T, t = bt % T;
                const float* row = src + bt * 3 * d;
                for (int64_t h = 0; h < n_head; ++h) {
                    const int64_t dst = ((b * n_head + h) * T + t) * hd;
                    rope_fwd(row + h * hd, pc + t * hd, ps + t * hd, pq + dst, hd);
                    rope_fwd(row + d + h * hd, pc + t * hd, ps + t * hd, pk + dst, hd);
                    std::copy(row + 2 * d + h * hd, row + 2 * d + (h + 1) * hd, pv + dst);
                }
            }
        });
        ctx->save_for_backward({cos, sin});
        ctx->saved_data["n_head"] = n_head;
        ctx->saved_data["T"] = T;
        return {q, k, v};
    }

    static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
        auto saved = ctx->get_saved_variables();
        const int64_t n_head = ctx->saved_data["n_head"].toInt();
        const int64_t T = ctx->saved_data["T"].toInt();
        // Any of the three may be undefined when its output did not reach the loss.
        torch::Tensor g[3];
        for (int i = 0; i < 3; ++i) g[i] = grads[i].defined() ? grads[i].contiguous() : torch::Tensor();
        const auto& ref = g[0].defined() ? g[0] : (g[1].defined() ? g[1] : g[2]);
        const int64_t B = ref.size(0), hd = ref.size(3), d = n_head * hd;
        auto gqkv = torch::zeros({B, T, 3 * d}, ref.options());
        const float *pc = saved[0].data_ptr<float>(), *ps = saved[1].data_ptr<float>();
        const float* pg[3];
        for (int i = 0; i < 3; ++i) pg[i] = g[i].defined() ? g[i].data_ptr<float>() : nullptr;
        float* dst = gqkv.data_ptr<float>();
        at::parallel_for(0, B * T, kGrain, [&](int64_t b0, int64_t e0) {
            for (int64_t bt = b0; bt < e0; ++bt) {
                const int64_t b = bt / T, t = bt % T;
                float* row = dst + bt * 3 * d;
                for (int64_t h = 0; h < n_head; ++h) {
                    const int64_t src = ((b * n_head + h) * T + t) * hd;
                    if (pg[0]) rope_bwd(pg[0] + src, pc + t * hd, ps + t * hd, row + h * hd, hd);
                    if (pg[1]) rope_bwd(pg[1] + src, pc + t * hd, ps + t * hd, row + d + h * hd, hd);
                    if (pg[2]) std::copy(pg[2] + src, pg[2] + src + hd, row + 2 * d + h * hd);
                }
            }
        });
        return {gqkv, torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};

struct CrossEntropyFn : torch::autograd::Function<CrossEntropyFn> {
    // One exponential pass: the softmax is saved for the backward, and the loss is read off it as
    // −log p[target]. Where that probability underflows (a target logit ~87 nats below the row's
    // best), the row's loss is recomputed exactly from its logits.
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& logits, const torch::Tensor& targets) {
        auto p = torch::softmax(logits, -1);  // [N, V]
        const int64_t N = p.size(0), V = p.size(1);
        auto x = logits.contiguous();
        const float *pp = p.data_ptr<float>(), *px = x.data_ptr<float>();
        const int64_t* pt = targets.data_ptr<int64_t>();
        double total = 0;
        for (int64_t i = 0; i < N; ++i) {
            const float pi = pp[i * V + pt[i]];
            if (pi > 1e-30f) {
                total -= std::log(static_cast<double>(pi));
            } else {
                const float* xi = px + i * V;
                const float mx = *std::max_element(xi, xi + V);
                double se = 0;
                for (int64_t j = 0; j < V; ++j) se += std::exp(static_cast<double>(xi[j] - mx));
                total += std::log(se) + mx - xi[pt[i]];
            }
        }
        ctx->save_for_backward({p, targets});
        return torch::tensor(static_cast<float>(total / static_cast<double>(N)), logits.options());
    }

    // d loss / d logits = (softmax − onehot(target)) / N, written in one pass over the saved softmax.
    static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
        auto saved = ctx->get_saved_variables();
        auto p = saved[0], targets = saved[1];
        const int64_t N = p.size(0), V = p.size(1);
        const float scale = grads[0].item<float>() / static_cast<float>(N);
        auto g = torch::empty_like(p);
        const float* pp = p.data_ptr<float>();
        const int64_t* pt = targets.data_ptr<int64_t>();
        float* pg = g.data_ptr<float>();
        at::parallel_for(0, N, kGrain, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
                for (int64_t j = 0; j < V; ++j) pg[i * V + j] = pp[i * V + j] * scale;
                pg[i * V + pt[i]] -= scale;
            }
        });
        return {g, torch::Tensor()};
    }
};

// SwiGLU gate on a fused projection: out = silu(a)·b with [a | b] = ab.
struct SwigluFn : torch::autograd::Function<SwigluFn> {
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& ab_in) {
        auto ab = ab_in.contiguous();
        const int64_t f = ab.size(-1) / 2, rows = ab.numel() / (2 * f);
        auto sig = torch::sigmoid(ab.narrow(-1, 0, f)).contiguous();  // vectorised exp, saved for backward
        std::vector<int64_t> shape(ab.sizes().begin(), ab.sizes().end());
        shape.back() = f;
        auto out = torch::empty(shape, ab.options());
        const float *pab = ab.data_ptr<float>(), *ps = sig.data_ptr<float>();
        float* po = out.data_ptr<float>();
        at::parallel_for(0, rows, kGrain, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
                const float *a = pab + i * 2 * f, *bb = a + f, *s = ps + i * f;
                float* o = po + i * f;
                for (int64_t j = 0; j < f; ++j) o[j] = a[j] * s[j] * bb[j];
            }
        });
        ctx->save_for_backward({ab, sig});
        return out;
    }

    // ga = g·b·σ(a)·(1 + a·(1 − σ(a))),  gb = g·a·σ(a)
    static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
        auto saved = ctx->get_saved_variables();
        auto ab = saved[0], sig = saved[1];
        auto g = grads[0].contiguous();
        const int64_t f = ab.size(-1) / 2, rows = ab.numel() / (2 * f);
        auto gab = torch::empty_like(ab);
        const float *pab = ab.data_ptr<float>(), *ps = sig.data_ptr<float>(), *pg = g.data_ptr<float>();
        float* pgab = gab.data_ptr<float>();
        at::parallel_for(0, rows, kGrain, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
                const float *a = pab + i * 2 * f, *bb = a + f, *s = ps + i * f, *gi = pg + i * f;
                float *ga = pgab + i * 2 * f, *gb = ga + f;
                for (int64_t j = 0; j < f; ++j) {
                    ga[j] = gi[j] * bb[j] * s[j] * (1.0f + a[j] * (1.0f - s[j]));
                    gb[j] = gi[j] * a[j] * s[j];
                }
            }
        });
        return {gab};
    }
};

// CBLAS sgemm, looked up at run time: LibTorch's BLAS (OpenBLAS on Debian) exports it.
enum CblasOrder { kRowMajor = 101 };
enum CblasTranspose { kNoTrans = 111, kTrans = 112 };
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);

SgemmFn sgemm_fn() {
    static SgemmFn fn = reinterpret_cast<SgemmFn>(dlsym(RTLD_DEFAULT, "cblas_sgemm"));
    return fn;
}

// C[m×n] = alpha · op(A)·op(B) + beta · C, row-major with leading dimensions.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc) {
    sgemm_fn()(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, static_cast<int>(m), static_cast<int>(n),
               static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
               static_cast<int>(ldc));
}

struct CausalAttentionFn : torch::autograd::Function<CausalAttentionFn> {
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                                 const torch::Tensor& v) {
        const int64_t B = q.size(0), H = q.size(1), T = q.size(2), hd = q.size(3), d = H * hd;
        const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
        auto p = torch::empty({B * H, T, T}, q.options());  // softmax probabilities, saved
        auto y = torch::empty({B, T, d}, q.options());
        const float *pq = q.data_ptr<float>(), *pk = k.data_ptr<float>(), *pv = v.data_ptr<float>();
        float *pp = p.data_ptr<float>(), *py = y.data_ptr<float>();
        for (int64_t bh = 0; bh < B * H; ++bh) {
            const int64_t b = bh / H, h = bh % H;
            const float *qi = pq + bh * T * hd, *ki = pk + bh * T * hd, *vi = pv + bh * T * hd;
            float* P = pp + bh * T * T;
            gemm(false, true, T, T, hd, scale, qi, hd, ki, hd, 0.0f, P, T);  // scores
            for (int64_t i = 0; i < T; ++i) {  // causal softmax: row i sees keys 0..i
                float* row = P + i * T;
                float mx = row[0];
                for (int64_t j = 1; j <= i; ++j) mx = std::max(mx, row[j]);
                float sum = 0;
                for (int64_t j = 0; j <= i; ++j) sum += (row[j] = std::exp(row[j] - mx));
                const float inv = 1.0f / sum;
                for (int64_t j = 0; j <= i; ++j) row[j] *= inv;
                for (int64_t j = i + 1; j < T; ++j) row[j] = 0.0f;
            }
            gemm(false, false, T, hd, T, 1.0f, P, T, vi, hd, 0.0f, py + b * T * d + h * hd, d);  // merged heads
        }
        ctx->save_for_backward({q, k, v, p});
        return y;
    }

    static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
        auto s = ctx->get_saved_variables();
        auto q = s[0], k = s[1], v = s[2], p = s[3];
        auto gy = grads[0].contiguous();
        const int64_t B = q.size(0), H = q.size(1), T = q.size(2), hd = q.size(3), d = H * hd;
        const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
        auto gq = torch::empty_like(q), gk = torch::empty_like(k), gv = torch::empty_like(v);
        auto ds = torch::empty({T, T}, q.options());
        const float *pq = q.data_ptr<float>(), *pk = k.data_ptr<float>(), *pv = v.data_ptr<float>();
        const float *pp = p.data_ptr<float>(), *pgy = gy.data_ptr<float>();
        float *pgq = gq.data_ptr<float>(), *pgk = gk.data_ptr<float>(), *pgv = gv.data_ptr<float>();
        float* dS = ds.data_ptr<float>();
        for (int64_t bh = 0; bh < B * H; ++bh) {
            const int64_t b = bh / H, h = bh % H, off = bh * T * hd;
            const float* P = pp + bh * T * T;
            const float* dY = pgy + b * T * d + h * hd;  // leading dimension d
            gemm(true, false, T, hd, T, 1.0f, P, T, dY, d, 0.0f, pgv + off, hd);      // dV = Pᵀ·dY
            gemm(false, true, T, T, hd, 1.0f, dY, d, pv + off, hd, 0.0f, dS, T);      // dP = dY·Vᵀ
            for (int64_t i = 0; i < T; ++i) {  // dS = P ∘ (dP − rowsum(P ∘ dP)), lower triangle
                const float* pr = P + i * T;
                float* r = dS + i * T;
                float dot = 0;
                for (int64_t j = 0; j <= i; ++j) dot += pr[j] * r[j];
                for (int64_t j = 0; j <= i; ++j) r[j] = pr[j] * (r[j] - dot);
                for (int64_t j = i + 1; j < T; ++j) r[j] = 0.0f;
            }
            gemm(false, false, T, hd, T, scale, dS, T, pk + off, hd, 0.0f, pgq + off, hd);  // dQ = s·dS·K
            gemm(true, false, T, hd, T, scale, dS, T, pq + off, hd, 0.0f, pgk + off, hd);   // dK = s·dSᵀ·Q
        }
        return {gq, gk, gv};
    }
};

}  // namespace

bool has_cblas() { return sgemm_fn() != nullptr; }

torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
    TORCH_CHECK(has_cblas(), "fused::causal_attention needs a CBLAS sgemm in the process");
    TORCH_CHECK(q.dim() == 4 && q.sizes() == k.sizes() && q.sizes() == v.sizes() && q.size(2) <= (1 << 20),
                "fused::causal_attention expects q, k, v of one shape [B, h, T, hd]");
    TORCH_CHECK(q.scalar_type() == torch::kFloat, "fused::causal_attention is fp32");
    return CausalAttentionFn::apply(q.contiguous(), k.contiguous(), v.contiguous());
}

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& w, double eps) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat && w.scalar_type() == torch::kFloat, "fused::rms_norm is fp32");
    TORCH_CHECK(w.dim() == 1 && x.size(-1) == w.size(0), "fused::rms_norm: weight must be [d]");
    return RmsNormFn::apply(x, w.contiguous(), eps);
}

std::vector<torch::Tensor> qkv_rope(const torch::Tensor& qkv, const torch::Tensor& cos, const torch::Tensor& sin,
                                    int64_t n_head) {
    TORCH_CHECK(qkv.dim() == 3 && qkv.size(2) % (3 * n_head) == 0, "fused::qkv_rope expects [B, T, 3·d]");
    TORCH_CHECK(qkv.scalar_type() == torch::kFloat, "fused::qkv_rope is fp32");
    const int64_t hd = qkv.size(2) / 3 / n_head;
    TORCH_CHECK(cos.size(0) >= qkv.size(1) && cos.size(1) == hd && hd % 2 == 0, "fused::qkv_rope: bad RoPE tables");
    return QkvRopeFn::apply(qkv, cos.contiguous(), sin.contiguous(), n_head);
}

torch::Tensor swiglu(const torch::Tensor& ab) {
    TORCH_CHECK(ab.scalar_type() == torch::kFloat && ab.size(-1) % 2 == 0, "fused::swiglu expects fp32 [..., 2·f]");
    return SwigluFn::apply(ab);
}

torch::Tensor cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets) {
    TORCH_CHECK(logits.dim() == 2 && targets.dim() == 1 && logits.size(0) == targets.size(0),
                "fused::cross_entropy expects logits [N, V] and targets [N]");
    return CrossEntropyFn::apply(logits, targets);
}

}  // namespace tw::fused
