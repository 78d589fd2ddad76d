// What a node of a run with pipeline replicas carries from step to step beside its model, inner
// optimizer and RNG, as named tensors for its run-scoped checkpoint (run_checkpoint.h;
// docs/checkpoints.md): the outer algorithm's state of every stage slice it holds, T_fixed (AD2
// moves the embedding's out-of-span part into it every round), `reparam`'s coordinates Z (the
// inner optimizer steps them; W = U·Z is rebuilt from them) and, on a later stage of a compressed
// pipeline under AD2 with replayed rounds, its copy of θ_global's embedding and that copy's algorithm.
// Everything else a stage node holds is rebuilt from the config (codecs, bases, loaders: pure
// functions of the seed and the step) or empty between steps (a stage's held activations).
//
// Names: "stages" (int64, the stage of every slice held, in order), "stage.<s>/<algorithm's name>",
// "t_fixed", "reparam/<writer>", "shadow.emb", "shadow/<algorithm's name>". A file is untrusted:
// load_stage_state wants exactly the names this node's parts save, each of the same dtype and
// shape, and names the first that differs (a checkpoint of another stage names both stages).
//
// Ownership: StageStateParts borrows; the tensors are the node's live ones and loading copies into
// them in place (the model, codecs and algorithms share their storage).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/status.h"
#include "engine/algo/outer.h"
#include "engine/pipeline/reparam.h"
#include "engine/train/checkpoint.h"

namespace tw {

struct StageStateParts {
    // (stage, its slice's algorithm; null when the run has no outer rounds), in the node's order.
    std::vector<std::pair<int64_t, OuterAlgorithm*>> slices;
    torch::Tensor t_fixed;                           // undefined: the run compresses nothing
    std::vector<ReparamWriter>* reparam = nullptr;   // null or empty: no `reparam` constraint here
    torch::Tensor shadow_emb;                        // undefined: no shadow
    OuterAlgorithm* shadow = nullptr;
};

// Copies of the parts' state, by the names above.
NamedTensors save_stage_state(const StageStateParts& parts);
// Restores a save_stage_state() of a node with the same parts (same stages, same shapes) into
// them. Errors name what differs; the parts are then partly restored (the caller fails).
Status load_stage_state(const NamedTensors& saved, const StageStateParts& parts);

}  // namespace tw
