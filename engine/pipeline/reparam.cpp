// The `reparam` constraint; see reparam.h.
#include "engine/pipeline/reparam.h"

#include <torch/torch.h>

#include "engine/pipeline/subspace.h"

namespace tw {

void ReparamWriter::to_coordinates() {
    torch::NoGradGuard no_grad;
    z.copy_(embedding() ? torch::mm(w, u) : torch::mm(u.t(), w));
    from_coordinates();
}

void ReparamWriter::from_coordinates() {
    torch::NoGradGuard no_grad;
    w.copy_(embedding() ? torch::mm(z, u.t()) : torch::mm(u, z));
}

void ReparamWriter::move_grad() {
    if (!w.grad().defined()) return;
    z.mutable_grad() = embedding() ? torch::mm(w.grad(), u) : torch::mm(u.t(), w.grad());
    w.mutable_grad() = torch::Tensor();
}

std::vector<ReparamWriter> make_reparam_writers(const std::vector<std::string>& names,
                                                const std::vector<torch::Tensor>& params, const torch::Tensor& u,
                                                int64_t rank) {
    std::vector<ReparamWriter> out;
    if (rank == 0) return out;
    for (size_t i = 0; i < names.size(); ++i) {
        if (!is_residual_writer(names[i])) continue;
        ReparamWriter r{names[i], params[i], torch::Tensor(), u};
        r.z = (r.embedding() ? torch::zeros({r.w.size(0), rank}) : torch::zeros({rank, r.w.size(1)}))
                  .requires_grad_(true);
        r.to_coordinates();
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace tw
