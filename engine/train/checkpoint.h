// Checkpoints: model, optimizer, step and RNG in one file, written atomically.
//
// File layout: "TWCKPT01" (8 bytes) | payload length u64 | seeded_hash64 (core/hash.h) of payload u64 | payload,
// where the payload is a torch::serialize archive. The envelope lets a truncated or corrupted file
// be reported as such instead of as an archive parser failure.
#pragma once

#include <cstdint>
#include <string>

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

Status save_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer& optim,
                       const CheckpointMeta& meta);

// Restores model, optimizer and the default CPU generator. Errors name the file and what is wrong.
Result<CheckpointMeta> load_checkpoint(const std::string& path, torch::nn::Module& model,
                                       torch::optim::Optimizer& optim);

}  // namespace tw
