// The model presets of model.preset (config_io.h apply_model_preset).
#include "core/config_io.h"

#include <map>

namespace tw {

Status apply_model_preset(const std::string& preset, ModelConfig& m) {
    struct Shape { int64_t d, l, h, ff, t; };
    static const std::map<std::string, Shape> kPresets = {
        {"micro", {64, 2, 4, 0, 128}},          // 172k with a 1024 vocabulary: 20 tokens/param = 1.76 passes over Brown
        {"tiny", {128, 4, 4, 0, 128}},          // ~1.3M with a 4096 vocabulary: trains in minutes on 2 cores
        {"small", {256, 6, 8, 0, 256}},         // ~6M
        {"base", {512, 8, 8, 0, 512}},          // ~27M
        {"paper178m", {1024, 12, 16, 2048, 1024}},  // ~178M with a GPT-2 (50257) tied vocabulary
        {"paper1b", {2048, 18, 16, 5632, 2048}},    // ~1.03B with the same vocabulary, tied
        {"llama8b", {4096, 32, 32, 14336, 2048}},   // Llama-3-8B's shape: ~8.0B with its 128,256 vocabulary, untied
    };
    auto it = kPresets.find(preset);
    if (it == kPresets.end()) return Status::error("unknown model preset \"" + preset + "\"");
    m.preset = preset;
    m.d_model = it->second.d;
    m.n_layer = it->second.l;
    m.n_head = it->second.h;
    m.d_ff = it->second.ff;
    m.seq_len = it->second.t;
    return Status::ok();
}

}  // namespace tw
