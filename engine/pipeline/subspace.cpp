// Subspace-compressed pipeline boundaries (arXiv 2506.01260). See subspace.h for the contract and
// the payload layouts.
#include "engine/pipeline/subspace.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>

#include "core/hash.h"

namespace tw {
namespace {

// The basis and the frozen embedding draw from generators of their own, seeded by (seed, label)
// the way Llama seeds its parameters, so neither shares a stream with the model's initialisation.
at::Generator seeded_generator(uint64_t seed, const char* label) {
    return at::make_generator<at::CPUGeneratorImpl>(seeded_hash64(label, kHashSeed ^ (seed * 0x9E3779B97F4A7C15ull)));
}

uint64_t coord_bytes(WireDtype c) { return c == WireDtype::kFp32 ? 4 : c == WireDtype::kBf16 ? 2 : 1; }
uint64_t id_bytes(int64_t vocab) { return vocab <= 65536 ? 2 : 4; }
int64_t rank_of(const torch::Tensor& u) { return u.defined() ? u.size(1) : 0; }

std::string shape_text(int64_t B, int64_t T, int64_t d, int64_t k, WireDtype c) {
    return "B=" + std::to_string(B) + ", T=" + std::to_string(T) + ", d=" + std::to_string(d) +
           ", k=" + std::to_string(k) + (k > 0 ? std::string(", ") + to_string(c) : std::string());
}

void check_basis(const torch::Tensor& u, int64_t d) {
    TORCH_CHECK(u.dim() == 2 && u.size(0) == d && u.scalar_type() == torch::kFloat32,
                "subspace: U must be fp32 [d=", d, ", k], got ", u.sizes(), " ", u.scalar_type());
}

// Coordinates of r [N, d] in U, quantised into dst (the layouts of subspace.h, ids excluded).
// Returns the bytes written.
uint64_t write_coords(const torch::Tensor& r, const torch::Tensor& u, WireDtype c, uint8_t* dst) {
    const int64_t N = r.size(0), k = u.size(1);
    if (c == WireDtype::kFp32) {
        auto out = torch::from_blob(dst, {N, k}, torch::kFloat32);
        torch::mm_out(out, r, u);  // straight into the payload
        return static_cast<uint64_t>(N * k) * 4;
    }
    const auto coords = torch::mm(r, u);  // [N, k]
    if (c == WireDtype::kBf16) {
        torch::from_blob(dst, {N, k}, torch::kBFloat16).copy_(coords);  // round to nearest even
        return static_cast<uint64_t>(N * k) * 2;
    }
    // int8: symmetric per token. A token whose coordinates are all 0 has scale 0 and codes 0.
    auto scale = coords.abs().amax(1, /*keepdim=*/true).div_(127.0);  // [N, 1]
    torch::from_blob(dst, {N, 1}, torch::kFloat32).copy_(scale);
    auto divisor = scale.masked_fill(scale == 0, 1.0);
    torch::from_blob(dst + 4 * N, {N, k}, torch::kInt8).copy_(coords.div(divisor).round_().clamp_(-127, 127));
    return static_cast<uint64_t>(N) * (4 + static_cast<uint64_t>(k));
}

// Inverse of write_coords: [N, k] fp32. For fp32 the result views the payload (no copy): use it
// before the payload goes away.
Result<torch::Tensor> read_coords(const uint8_t* src, int64_t N, int64_t k, WireDtype c) {
    auto* p = const_cast<uint8_t*>(src);  // from_blob wants void*; nothing writes through it
    if (c == WireDtype::kFp32) return torch::from_blob(p, {N, k}, torch::kFloat32);
    if (c == WireDtype::kBf16) return torch::from_blob(p, {N, k}, torch::kBFloat16).to(torch::kFloat32);
    const auto* scales = reinterpret_cast<const float*>(src);
    for (int64_t i = 0; i < N; ++i)
        if (!std::isfinite(scales[i]) || scales[i] < 0)
            return Result<torch::Tensor>::error("subspace: int8 scale of token " + std::to_string(i) + " is " +
                                                std::to_string(scales[i]) + ", not a finite scale ≥ 0");
    auto codes = torch::from_blob(p + 4 * N, {N, k}, torch::kInt8);
    if (codes.eq(-128).any().item<bool>())
        return Result<torch::Tensor>::error("subspace: int8 code −128 in the payload (the encoder clamps to ±127)");
    return codes.to(torch::kFloat32).mul_(torch::from_blob(p, {N, 1}, torch::kFloat32));
}

void write_ids(const torch::Tensor& ids, int64_t vocab, uint8_t* dst) {
    const int64_t N = ids.numel();
    const int64_t* p = ids.data_ptr<int64_t>();
    int64_t bad = -1;
    if (id_bytes(vocab) == 2) {
        for (int64_t i = 0; i < N; ++i) {
            if (p[i] < 0 || p[i] >= vocab) bad = i;
            const auto v = static_cast<uint16_t>(p[i]);
            std::memcpy(dst + 2 * i, &v, 2);
        }
    } else {
        for (int64_t i = 0; i < N; ++i) {
            if (p[i] < 0 || p[i] >= vocab) bad = i;
            const auto v = static_cast<uint32_t>(p[i]);
            std::memcpy(dst + 4 * i, &v, 4);
        }
    }
    TORCH_CHECK(bad < 0, "subspace: token id ", p[bad], " at ", bad, " is outside the vocabulary of ", vocab);
}

Result<torch::Tensor> read_ids(const uint8_t* src, int64_t N, int64_t vocab) {
    auto ids = torch::empty({N}, torch::kInt64);
    int64_t* q = ids.data_ptr<int64_t>();
    int64_t top = 0;
    if (id_bytes(vocab) == 2) {
        for (int64_t i = 0; i < N; ++i) {
            uint16_t v;
            std::memcpy(&v, src + 2 * i, 2);
            q[i] = v;
            top = std::max<int64_t>(top, v);
        }
    } else {
        for (int64_t i = 0; i < N; ++i) {
            uint32_t v;
            std::memcpy(&v, src + 4 * i, 4);
            q[i] = v;
            top = std::max<int64_t>(top, v);
        }
    }
    if (N > 0 && top >= vocab)
        return Result<torch::Tensor>::error("subspace: token id " + std::to_string(top) +
                                            " in the payload is outside the vocabulary of " + std::to_string(vocab));
    return ids;
}

// P_U(w) by the writer rule of project_writer, in w's dtype.
torch::Tensor projected(const std::string& name, const torch::Tensor& w, const torch::Tensor& u) {
    TORCH_CHECK(is_residual_writer(name), "subspace: \"", name, "\" is not a residual-stream writer");
    TORCH_CHECK(w.dim() == 2, "subspace: writer \"", name, "\" must be 2-D, got ", w.sizes());
    const auto uw = u.to(w.scalar_type());
    if (name == "tok_emb") {
        TORCH_CHECK(w.size(1) == u.size(0), "subspace: tok_emb ", w.sizes(), " does not match U ", u.sizes());
        return w.mm(uw).mm(uw.t());  // [V, d]·[d, k]·[k, d]
    }
    TORCH_CHECK(w.size(0) == u.size(0), "subspace: ", name, " ", w.sizes(), " does not match U ", u.sizes());
    return uw.mm(uw.t().mm(w));  // [d, k]·[k, d]·[d, in]
}

}  // namespace

Result<WireDtype> parse_coord_dtype(const std::string& s) {
    auto d = parse_wire_dtype(s);
    if (!d || *d == WireDtype::kFp4)
        return Result<WireDtype>::error("subspace coordinate dtype \"" + s + "\" is not fp32, bf16 or int8");
    return d;
}

torch::Tensor subspace_basis(int64_t d, int64_t k, uint64_t seed) {
    TORCH_CHECK(d > 0 && k > 0 && k <= d, "subspace: rank k = ", k, " must be in 1..d = ", d);
    // The whole d×d draw, so the stream (and so every prefix) does not depend on k.
    auto gen = seeded_generator(seed, "subspace_basis");
    const auto g = at::normal(0.0, 1.0, {d, d}, gen, torch::kFloat64).contiguous();
    const double* gp = g.data_ptr<double>();
    // Column-major working copies of the first k columns: a[j] is column j. Householder reflector j
    // is built from column j after reflectors 0..j−1 and touches only columns ≥ j, so nothing in the
    // first k1 columns depends on the columns after them: the nesting holds bit for bit.
    std::vector<double> a(static_cast<size_t>(d * k)), v(a.size()), tau(static_cast<size_t>(k)),
        r_diag(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j)
        for (int64_t i = 0; i < d; ++i) a[j * d + i] = gp[i * d + j];
    auto col = [&](std::vector<double>& m, int64_t j) { return m.data() + j * d; };
    // Applies H_j = I − τ_j v_j v_jᵀ to column c of m (rows ≥ j; v_j is zero above row j).
    auto reflect = [&](std::vector<double>& m, int64_t j, int64_t c) {
        const double* vj = col(v, j);
        double* x = col(m, c);
        double s = 0;
        for (int64_t i = j; i < d; ++i) s += vj[i] * x[i];
        s *= tau[j];
        for (int64_t i = j; i < d; ++i) x[i] -= s * vj[i];
    };
    for (int64_t j = 0; j < k; ++j) {
        const double* x = col(a, j);
        double norm2 = 0;
        for (int64_t i = j; i < d; ++i) norm2 += x[i] * x[i];
        const double alpha = x[j] >= 0 ? -std::sqrt(norm2) : std::sqrt(norm2);  // R_jj, no cancellation
        double* vj = col(v, j);
        for (int64_t i = j; i < d; ++i) vj[i] = x[i];
        vj[j] -= alpha;
        double vnorm2 = 0;
        for (int64_t i = j; i < d; ++i) vnorm2 += vj[i] * vj[i];
        tau[j] = vnorm2 > 0 ? 2.0 / vnorm2 : 0.0;
        r_diag[j] = alpha;
        for (int64_t c = j + 1; c < k; ++c) reflect(a, j, c);
    }
    // Q[:, :k] = H_0 ··· H_{k−1} I[:, :k]; H_j leaves columns < j alone.
    std::vector<double> q(a.size(), 0.0);
    for (int64_t j = 0; j < k; ++j) col(q, j)[j] = 1.0;
    for (int64_t j = k - 1; j >= 0; --j)
        for (int64_t c = j; c < k; ++c) reflect(q, j, c);
    // Q·R = A with R_jj = α_j: negating column j where α_j < 0 makes R's diagonal positive.
    auto out = torch::empty({d, k}, torch::kFloat32);
    float* o = out.data_ptr<float>();
    for (int64_t j = 0; j < k; ++j) {
        const double sign = r_diag[j] < 0 ? -1.0 : 1.0;
        for (int64_t i = 0; i < d; ++i) o[i * k + j] = static_cast<float>(sign * col(q, j)[i]);
    }
    return out;
}

torch::Tensor frozen_embedding(int64_t vocab, int64_t d, uint64_t seed) {
    TORCH_CHECK(vocab > 0 && d > 0, "subspace: frozen embedding needs vocab > 0 and d > 0");
    auto gen = seeded_generator(seed, "frozen_embedding");
    return at::normal(0.0, 1.0, {vocab, d}, gen, torch::kFloat32);
}

uint64_t forward_wire_bytes(int64_t B, int64_t T, int64_t d, int64_t k, WireDtype c, int64_t vocab) {
    const auto N = static_cast<uint64_t>(B * T);
    if (k == 0) return N * static_cast<uint64_t>(d) * 4;
    const uint64_t scale = c == WireDtype::kInt8 ? 4 : 0;
    return N * (static_cast<uint64_t>(k) * coord_bytes(c) + scale + id_bytes(vocab));
}

uint64_t backward_wire_bytes(int64_t B, int64_t T, int64_t d, int64_t k, WireDtype c) {
    const auto N = static_cast<uint64_t>(B * T);
    if (k == 0) return N * static_cast<uint64_t>(d) * 4;
    const uint64_t scale = c == WireDtype::kInt8 ? 4 : 0;
    return N * (static_cast<uint64_t>(k) * coord_bytes(c) + scale);
}

std::vector<uint8_t> encode_activations(const torch::Tensor& x, const torch::Tensor& ids, const torch::Tensor& t_fixed,
                                        const torch::Tensor& u, WireDtype c, int64_t vocab) {
    TORCH_CHECK(x.dim() == 3, "subspace: activations must be [B, T, d], got ", x.sizes());
    torch::NoGradGuard no_grad;
    const int64_t B = x.size(0), T = x.size(1), d = x.size(2), N = B * T, k = rank_of(u);
    std::vector<uint8_t> out(forward_wire_bytes(B, T, d, k, c, vocab));
    const auto xf = x.detach().to(torch::kFloat32).contiguous().view({N, d});
    if (k == 0) {
        if (!out.empty()) std::memcpy(out.data(), xf.data_ptr<float>(), out.size());
        return out;
    }
    check_basis(u, d);
    TORCH_CHECK(ids.dim() == 2 && ids.size(0) == B && ids.size(1) == T && ids.scalar_type() == torch::kInt64,
                "subspace: ids must be int64 [B=", B, ", T=", T, "], got ", ids.sizes(), " ", ids.scalar_type());
    TORCH_CHECK(t_fixed.dim() == 2 && t_fixed.size(0) == vocab && t_fixed.size(1) == d,
                "subspace: T_fixed must be [vocab=", vocab, ", d=", d, "], got ", t_fixed.sizes());
    const auto flat_ids = ids.reshape({N}).contiguous();
    const auto residual = xf - t_fixed.index_select(0, flat_ids);  // [N, d], in span(U) while constrained
    const uint64_t off = write_coords(residual, u, c, out.data());
    write_ids(flat_ids, vocab, out.data() + off);
    return out;
}

Result<torch::Tensor> decode_activations(const std::vector<uint8_t>& payload, int64_t B, int64_t T, int64_t d,
                                         const torch::Tensor& t_fixed, const torch::Tensor& u, WireDtype c,
                                         int64_t vocab, torch::Tensor* ids_out) {
    torch::NoGradGuard no_grad;
    const int64_t N = B * T, k = rank_of(u);
    const uint64_t need = forward_wire_bytes(B, T, d, k, c, vocab);
    if (payload.size() != need)
        return Result<torch::Tensor>::error("subspace: activation payload is " + std::to_string(payload.size()) +
                                            " bytes, expected " + std::to_string(need) + " (" +
                                            shape_text(B, T, d, k, c) + ", vocab=" + std::to_string(vocab) + ")");
    if (k == 0) {
        auto x = torch::empty({B, T, d}, torch::kFloat32);
        if (need > 0) std::memcpy(x.data_ptr<float>(), payload.data(), need);
        return x;
    }
    check_basis(u, d);
    TORCH_CHECK(t_fixed.dim() == 2 && t_fixed.size(0) == vocab && t_fixed.size(1) == d,
                "subspace: T_fixed must be [vocab=", vocab, ", d=", d, "], got ", t_fixed.sizes());
    auto coords = read_coords(payload.data(), N, k, c);
    if (!coords) return coords.status();
    const uint64_t ids_at = need - static_cast<uint64_t>(N) * id_bytes(vocab);
    auto ids = read_ids(payload.data() + ids_at, N, vocab);
    if (!ids) return ids.status();
    // X = T_fixed[ids] + C·Uᵀ in one GEMM with the gathered rows as its accumulator.
    auto x = torch::addmm(t_fixed.index_select(0, *ids), *coords, u.t()).view({B, T, d});
    if (ids_out) *ids_out = ids->view({B, T});
    return x;
}

std::vector<uint8_t> encode_gradient(const torch::Tensor& g, const torch::Tensor& u, WireDtype c) {
    TORCH_CHECK(g.dim() == 3, "subspace: gradient must be [B, T, d], got ", g.sizes());
    torch::NoGradGuard no_grad;
    const int64_t B = g.size(0), T = g.size(1), d = g.size(2), N = B * T, k = rank_of(u);
    std::vector<uint8_t> out(backward_wire_bytes(B, T, d, k, c));
    const auto gf = g.detach().to(torch::kFloat32).contiguous().view({N, d});
    if (k == 0) {
        if (!out.empty()) std::memcpy(out.data(), gf.data_ptr<float>(), out.size());
        return out;
    }
    check_basis(u, d);
    write_coords(gf, u, c, out.data());
    return out;
}

Result<torch::Tensor> decode_gradient(const std::vector<uint8_t>& payload, int64_t B, int64_t T, int64_t d,
                                      const torch::Tensor& u, WireDtype c) {
    torch::NoGradGuard no_grad;
    const int64_t N = B * T, k = rank_of(u);
    const uint64_t need = backward_wire_bytes(B, T, d, k, c);
    if (payload.size() != need)
        return Result<torch::Tensor>::error("subspace: gradient payload is " + std::to_string(payload.size()) +
                                            " bytes, expected " + std::to_string(need) + " (" +
                                            shape_text(B, T, d, k, c) + ")");
    if (k == 0) {
        auto g = torch::empty({B, T, d}, torch::kFloat32);
        if (need > 0) std::memcpy(g.data_ptr<float>(), payload.data(), need);
        return g;
    }
    check_basis(u, d);
    auto coords = read_coords(payload.data(), N, k, c);
    if (!coords) return coords.status();
    return torch::mm(*coords, u.t()).view({B, T, d});
}

bool is_residual_writer(const std::string& name) {
    if (name == "tok_emb") return true;
    static const std::string kPrefix = "block_";
    if (name.size() < kPrefix.size() + 4 || name.compare(0, kPrefix.size(), kPrefix) != 0) return false;
    const size_t dot = name.find('.', kPrefix.size());
    if (dot == std::string::npos || dot == kPrefix.size()) return false;
    for (size_t i = kPrefix.size(); i < dot; ++i)
        if (name[i] < '0' || name[i] > '9') return false;
    const std::string leaf = name.substr(dot + 1);
    return leaf == "wo" || leaf == "w2";
}

void project_writer(const std::string& param_name, torch::Tensor& w, const torch::Tensor& u) {
    torch::NoGradGuard no_grad;
    w.copy_(projected(param_name, w, u));
}

double out_of_span_fraction(const std::string& param_name, const torch::Tensor& w, const torch::Tensor& u) {
    torch::NoGradGuard no_grad;
    const auto w64 = w.detach().to(torch::kFloat64);
    const double norm = w64.norm().item<double>();
    if (norm == 0) return 0;
    return (w64 - projected(param_name, w64, u)).norm().item<double>() / norm;
}

void move_out_of_span_into_frozen(torch::Tensor& t_s, torch::Tensor& t_fixed, const torch::Tensor& u) {
    torch::NoGradGuard no_grad;
    TORCH_CHECK(t_s.sizes() == t_fixed.sizes(), "subspace: t_s ", t_s.sizes(), " and T_fixed ", t_fixed.sizes(),
                " differ in shape");
    const auto inside = projected("tok_emb", t_s, u);
    t_fixed.add_(t_s - inside);
    t_s.copy_(inside);
}

}  // namespace tw
