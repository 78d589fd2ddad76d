// The `reparam` constraint (docs/methods.md §6): a constrained residual writer W [d, in] is held as
// U·Z with Z [k, in] its coordinates in the subspace span(U) (U [d, k], orthonormal columns); the
// embedding W [V, d] as Z·Uᵀ with Z [V, k]. Z is what the inner optimizer steps; W stays the tensor
// the model uses and the outer algorithm syncs, rebuilt from Z after every step.
//
// Ownership: holds handles to the live W (changed in place), its own Z (a leaf that requires
// grad) and U. Not thread-safe: one worker thread.
#pragma once

#include <string>
#include <vector>

#include <torch/types.h>

namespace tw {

struct ReparamWriter {
    std::string name;
    torch::Tensor w, z, u;  // W [d, in] or [V, d]; Z [k, in] or [V, k]; U [d, k]

    bool embedding() const { return name == "tok_emb"; }
    void to_coordinates();    // Z ← coordinates of W in span(U), then W ← U·Z
    void from_coordinates();  // W ← U·Z (embedding: Z·Uᵀ)
    void move_grad();         // dL/dZ from dL/dW; W's gradient is dropped, W itself is not stepped
};

// One writer per residual writer among `names`/`params` (the slice's live tensors), with basis
// `u` [d, rank], each already in coordinates (W = U·Z from here on). rank 0: none.
std::vector<ReparamWriter> make_reparam_writers(const std::vector<std::string>& names,
                                                const std::vector<torch::Tensor>& params, const torch::Tensor& u,
                                                int64_t rank);

}  // namespace tw
