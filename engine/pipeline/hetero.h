// Heterogeneous SparseLoCo's bookkeeping (docs/methods.md §7): which stage a parameter belongs to. The
// holders of one stage sync over a core/member_view.h of the mesh (engine/worker/stage_rounds.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"

namespace tw {

// Stage of a whole-model parameter in an n_stages split, by the names Llama registers:
// tok_emb → 0, block_l.* → the stage holding layer l, norm_f and head → the last.
int64_t stage_of_param(const ModelConfig& cfg, const std::string& name, int64_t n_stages);

// constraint_rank, run_constraint_rank and run_has_compression are config rules: core/layout.h.

}  // namespace tw
