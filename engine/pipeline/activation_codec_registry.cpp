// The activation codecs' table; see activation_codec_registry.h.
#include "engine/pipeline/activation_codec_registry.h"

#include <algorithm>
#include <deque>
#include <mutex>

#include "engine/pipeline/subspace.h"

namespace tw {
namespace {

ActivationCodecRow dense_row() {
    return {"dense", "fp32 activations and gradients as they are",
            [](const BoundaryCodecSpec& b) { return make_dense_codec(b.d_model); },
            [](const BoundaryCodecSpec& b, int64_t B, int64_t T) { return make_dense_codec(b.d_model)->forward_bytes(B, T); },
            [](const BoundaryCodecSpec& b, int64_t B, int64_t T) { return make_dense_codec(b.d_model)->backward_bytes(B, T); }};
}

ActivationCodecRow subspace_row() {
    return {"subspace", "rank-k coordinates in a fixed subspace plus token ids forward, G·U back (docs/methods.md §6)",
            [](const BoundaryCodecSpec& b) {
                return make_subspace_codec(subspace_basis(b.d_model, b.rank, b.seed), b.coord_dtype, b.t_fixed, b.vocab);
            },
            [](const BoundaryCodecSpec& b, int64_t B, int64_t T) {
                return forward_wire_bytes(B, T, b.d_model, b.rank, b.coord_dtype, b.vocab);
            },
            [](const BoundaryCodecSpec& b, int64_t B, int64_t T) {
                return backward_wire_bytes(B, T, b.d_model, b.rank, b.coord_dtype);
            }};
}

struct Table {
    std::mutex mu;
    std::deque<ActivationCodecRow> rows;  // a deque: rows never move once added
};

Table& table() {
    static Table* t = [] {
        auto* fresh = new Table;  // never destroyed: rows outlive every static that may hold one
        fresh->rows.push_back(dense_row());
        fresh->rows.push_back(subspace_row());
        return fresh;
    }();
    return *t;
}

bool well_formed(const std::string& name) {
    return !name.empty() && name.size() <= 32 && std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
}

}  // namespace

Status register_activation_codec(ActivationCodecRow row) {
    if (!well_formed(row.name))
        return Status::error("activation codec \"" + row.name + "\": a name is 1–32 characters of a–z, 0–9 and _");
    if (!row.make || !row.forward_bytes || !row.backward_bytes)
        return Status::error("activation codec \"" + row.name + "\": a row needs its factory and both byte functions");
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mu);
    for (const auto& r : t.rows)
        if (r.name == row.name) return Status::error("activation codec \"" + row.name + "\" is registered already");
    t.rows.push_back(std::move(row));
    return Status::ok();
}

const ActivationCodecRow* activation_codec(std::string_view name) {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mu);
    for (const auto& r : t.rows)
        if (r.name == name) return &r;
    return nullptr;
}

std::string activation_codec_names() {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mu);
    std::string out;
    for (const auto& r : t.rows) out += (out.empty() ? "" : ", ") + r.name;
    return out;
}

BoundaryCodecSpec boundary_spec(const RunConfig& cfg, int64_t rank, torch::Tensor t_fixed) {
    BoundaryCodecSpec b;
    b.d_model = cfg.model.d_model;
    b.vocab = cfg.model.vocab_size;
    b.rank = rank;
    // pipeline.coord_dtype was checked against its choices when the config was parsed.
    b.coord_dtype = parse_coord_dtype(cfg.pipeline.coord_dtype).value();
    b.seed = cfg.run.seed;
    b.t_fixed = std::move(t_fixed);
    return b;
}

Result<const ActivationCodecRow*> boundary_codec(const RunConfig& cfg, int64_t rank) {
    const std::string name = rank == 0 ? "dense" : cfg.pipeline.codec;
    if (const ActivationCodecRow* row = activation_codec(name)) return row;
    return Result<const ActivationCodecRow*>::error("pipeline.codec \"" + name + "\": no activation codec of that name (" +
                                                    activation_codec_names() + ")");
}

}  // namespace tw
