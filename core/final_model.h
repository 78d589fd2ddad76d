// A run's final model on its way from the nodes that hold it to the coordinator, which keeps it in
// the run's folder (coordinator/final_model_assembly.h). Each holder sends its tensors — the whole
// model, or a pipeline stage's slice of it — and the tokenizer's files in parts of at most
// kFinalModelPartBytes: a node never builds one message the size of a large model.
// Torch-free: the node server and the coordinator see tensors as little-endian fp32 bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tw {

inline constexpr size_t kFinalModelPartBytes = size_t{32} << 20;
// The tokenizer files a final model may carry, and the largest one accepted.
inline constexpr uint64_t kFinalModelFileMaxBytes = uint64_t{64} << 20;

struct FinalModelPart {
    // A tensor of the whole model in the engine's names (core/model_size.h model_tensors, plus
    // "frozen_emb": a subspace pipeline's frozen token embedding [V, d]) or a tokenizer file's name.
    std::string name;
    bool file = false;
    std::vector<int64_t> shape;  // tensors: the whole tensor's shape; files: empty
    uint64_t offset = 0;         // where `bytes` starts in the whole tensor (fp32, row-major) or file
    uint64_t total = 0;          // the whole tensor's or file's size in bytes
    std::vector<uint8_t> bytes;
};

}  // namespace tw
