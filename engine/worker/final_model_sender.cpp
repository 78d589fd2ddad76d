#include "engine/worker/final_model_sender.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/little_endian.h"
#include "engine/data/dataset.h"
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

namespace {

// `bytes` (the whole tensor or file) through `sink` in parts of at most kFinalModelPartBytes; an
// empty one as one empty part.
void send_parts(MetricSink& sink, FinalModelPart head, const std::vector<uint8_t>& bytes) {
    head.total = bytes.size();
    uint64_t at = 0;
    do {
        FinalModelPart p = head;
        p.offset = at;
        const uint64_t n = std::min<uint64_t>(kFinalModelPartBytes, bytes.size() - at);
        p.bytes.assign(bytes.begin() + static_cast<std::ptrdiff_t>(at), bytes.begin() + static_cast<std::ptrdiff_t>(at + n));
        sink.final_model(std::move(p));
        at += n;
    } while (at < bytes.size());
}

}  // namespace

void send_final_model(MetricSink& sink, const std::string& node,
                      const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                      const std::vector<std::string>& tokenizer_files) {
    torch::NoGradGuard no_grad;
    for (const auto& [name, t] : tensors) {
        const torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
        const auto* f = c.data_ptr<float>();
        std::vector<uint8_t> bytes(static_cast<size_t>(c.numel()) * sizeof(float));
        for (int64_t i = 0; i < c.numel(); ++i) le::put_f32(bytes.data() + 4 * i, f[i]);
        FinalModelPart head;
        head.name = name;
        head.shape.assign(c.sizes().begin(), c.sizes().end());
        send_parts(sink, std::move(head), bytes);
    }
    for (const std::string& path : tokenizer_files) {
        std::ifstream in(path, std::ios::binary);
        std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (!in.good() && !in.eof()) {
            sink.event({0, node, EventLevel::kWarning, "model", "tokenizer file " + path + " not read: the final model goes without it"});
            continue;
        }
        FinalModelPart head;
        head.name = std::filesystem::path(path).filename().string();
        head.file = true;
        send_parts(sink, std::move(head), bytes);
    }
}

void send_final_model(MetricSink& sink, const std::string& node, LlamaImpl& model, const PreparedData* data) {
    send_final_model(sink, node, final_model_tensors(model), data ? data->tokenizer_files : std::vector<std::string>{});
}

}  // namespace tw
