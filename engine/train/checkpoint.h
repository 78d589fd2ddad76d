// Checkpoints: model, optimizer, step and RNG in one file, written atomically.
//
// File layout: "TWCKPT01" (8 bytes) | payload length u64 | seeded_hash64 (core/hash.h) of payload u64 | payload,
// where the payload is a torch::serialize archive. The envelope lets a truncated or corrupted file
// be reported as such instead of as an archive parser failure.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "core/status.h"

namespace torch {
namespace nn { class Module; }
namespace optim { class Optimizer; }
}  // namespace torch

namespace tw {

struct CheckpointMeta {
    int64_t step = 0;             // completed optimizer steps
    std::string config_hash;      // of the run that wrote it (informational)
};

// Named tensors a caller keeps beside model and optimizer (an outer algorithm's state, a node's
// clock and counters): any names, any shapes, stored in order.
using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// Writes `path` atomically (PATH.tmp, then rename). `extra` goes into the archive as given.
Status save_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer& optim,
                       const CheckpointMeta& meta, const NamedTensors& extra = {});

// Restores model, optimizer and the default CPU generator, and when `extra` is given, fills it with
// the named tensors saved with the file (empty for files written without any). Errors name the
// file and what is wrong.
Result<CheckpointMeta> load_checkpoint(const std::string& path, torch::nn::Module& model,
                                       torch::optim::Optimizer& optim, NamedTensors* extra = nullptr);

}  // namespace tw
