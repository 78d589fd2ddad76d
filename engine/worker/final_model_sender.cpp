#include "engine/worker/final_model_sender.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/little_endian.h"
#include "engine/model/llama.h"

namespace tw {

std::vector<std::pair<std::string, torch::Tensor>> final_model_tensors(LlamaImpl& model) {
    std::vector<std::pair<std::string, torch::Tensor>> out;
    for (auto& p : model.named_parameters()) {
        if (p.key() == "tok_emb" && !model.spec().has_embedding()) continue;  // a tied head's copy
        out.emplace_back(p.key(), p.value());
    }
    if (model.frozen_embedding().defined() && model.spec().has_embedding())
        out.emplace_back("frozen_emb", model.frozen_embedding());
    return out;
}

void send_final_model(MetricSink& sink, const std::string& node,
                      const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                      const std::vector<std::string>& tokenizer_files) {
    torch::NoGradGuard no_grad;
    for (const auto& [name, t] : tensors) {
        const torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
        const auto* f = c.data_ptr<float>();
        const uint64_t total = static_cast<uint64_t>(c.numel()) * sizeof(float);
        std::vector<int64_t> shape(c.sizes().begin(), c.sizes().end());
        for (uint64_t at = 0; at < total || (total == 0 && at == 0);) {
            FinalModelPart p;
            p.name = name;
            p.shape = shape;
            p.offset = at;
            p.total = total;
            const uint64_t n = std::min<uint64_t>(kFinalModelPartBytes, total - at);
            p.bytes.resize(n);
            for (uint64_t i = 0; i < n / sizeof(float); ++i) le::put_f32(p.bytes.data() + 4 * i, f[at / sizeof(float) + i]);
            sink.final_model(std::move(p));
            at += n;
            if (n == 0) break;
        }
    }
    for (const std::string& path : tokenizer_files) {
        std::ifstream in(path, std::ios::binary);
        std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (!in.good() && !in.eof()) {
            sink.event({0, node, EventLevel::kWarning, "model", "tokenizer file " + path + " not read: the final model goes without it"});
            continue;
        }
        const std::string name = std::filesystem::path(path).filename().string();
        for (uint64_t at = 0; at < bytes.size() || at == 0;) {
            FinalModelPart p;
            p.name = name;
            p.file = true;
            p.offset = at;
            p.total = bytes.size();
            const uint64_t n = std::min<uint64_t>(kFinalModelPartBytes, bytes.size() - at);
            p.bytes.assign(bytes.begin() + static_cast<std::ptrdiff_t>(at), bytes.begin() + static_cast<std::ptrdiff_t>(at + n));
            sink.final_model(std::move(p));
            at += n;
            if (n == 0) break;
        }
    }
}

}  // namespace tw
