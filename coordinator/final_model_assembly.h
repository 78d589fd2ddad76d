// The coordinator's side of a run's final model (core/final_model.h): the parts the nodes send are
// checked against the model the run trains — each tensor's name and shape from its config
// (core/model_size.h model_tensors), parts in order and inside the tensor, tokenizer files by an
// allowed name and size — and kept per node. After the run the session writes the model of the
// nodes it names (a replica's evaluator, a pipeline replica's stages, each HDEE expert) into the
// run's folder (storage/run_folder.h).
// Memory: a node's tensors are held whole until the run ends (one model's fp32 bytes per sender).
// Used from the session's thread only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/final_model.h"
#include "core/status.h"

namespace tw {

// The tokenizer files a final model may carry.
bool final_model_file_allowed(const std::string& name);

class FinalModelAssembly {
public:
    // `model`: the run's model config, vocabulary resolved (> 0).
    explicit FinalModelAssembly(const ModelConfig& model);
    // Node `node` sends the tensors of `model` instead (an HDEE expert's own d_ff).
    void expect(const std::string& node, const ModelConfig& model);

    // Takes one part from `node`. Refused, naming the node and the part: a tensor the model does not
    // have (or with another shape), a file name not allowed, a part that does not continue where the
    // last one of the same tensor or file ended, or one after it was complete.
    Status add(const std::string& node, FinalModelPart part);
    // Whether `node` sent every part of each tensor and file it began.
    bool complete(const std::string& node) const;
    bool holds(const std::string& node) const { return got_.count(node) > 0; }

    // Writes `dir`/`file` (safetensors) from the whole tensors of `nodes` — the first node holding a
    // tensor gives it — and every tokenizer file the first of them that sent one sent, into `dir`
    // (created). Refused, naming them, when a tensor of the model is missing or a node is incomplete.
    // Returns the bytes written.
    Result<uint64_t> write(const std::string& dir, const std::vector<std::string>& nodes,
                           const std::string& file) const;

private:
    struct Item {
        bool file = false;
        std::vector<int64_t> shape;
        uint64_t total = 0, have = 0;
        std::vector<uint8_t> bytes;
    };
    using Shapes = std::map<std::string, std::vector<int64_t>>;
    static Shapes shapes_of(const ModelConfig& model);
    const Shapes& shapes_for(const std::string& node) const;
    Shapes shapes_;
    std::map<std::string, Shapes> node_shapes_;
    std::vector<std::string> order_;  // the model's tensors in the engine's order
    std::map<std::string, std::vector<std::string>> node_order_;
    std::map<std::string, std::map<std::string, Item>> got_;  // node → part name → what arrived
};

}  // namespace tw
