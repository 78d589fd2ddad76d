#include "coordinator/final_model_assembly.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/little_endian.h"
#include "core/model_size.h"
#include "storage/safetensors.h"

namespace tw {

bool final_model_file_allowed(const std::string& name) {
    return name == "tokenizer.model" || name == "encoder.json" || name == "vocab.bpe";
}

FinalModelAssembly::Shapes FinalModelAssembly::shapes_of(const ModelConfig& model) {
    Shapes s;
    for (const TensorShape& t : model_tensors(model)) s[t.name] = t.shape;
    s["frozen_emb"] = {model.vocab_size, model.d_model};  // a subspace pipeline's T_fixed
    return s;
}

FinalModelAssembly::FinalModelAssembly(const ModelConfig& model) : shapes_(shapes_of(model)) {
    for (const TensorShape& t : model_tensors(model)) order_.push_back(t.name);
    order_.push_back("frozen_emb");
}

void FinalModelAssembly::expect(const std::string& node, const ModelConfig& model) {
    node_shapes_[node] = shapes_of(model);
    auto& o = node_order_[node];
    o.clear();
    for (const TensorShape& t : model_tensors(model)) o.push_back(t.name);
    o.push_back("frozen_emb");
}

const FinalModelAssembly::Shapes& FinalModelAssembly::shapes_for(const std::string& node) const {
    auto it = node_shapes_.find(node);
    return it == node_shapes_.end() ? shapes_ : it->second;
}

Status FinalModelAssembly::add(const std::string& node, FinalModelPart part) {
    const std::string what = "final model from " + node + ": " + (part.file ? "file " : "tensor ") + part.name;
    if (part.file) {
        if (!final_model_file_allowed(part.name)) return Status::error(what + " is not a tokenizer file");
    } else {
        const Shapes& shapes = shapes_for(node);
        auto it = shapes.find(part.name);
        if (it == shapes.end()) return Status::error(what + " is not a tensor of the run's model");
        if (it->second != part.shape) return Status::error(what + " has another shape than the run's model");
    }
    Item& item = got_[node][part.name];
    if (item.have == 0 && item.bytes.empty()) {
        if (part.offset != 0) return Status::error(what + ": its first part starts at byte " + std::to_string(part.offset));
        item.file = part.file;
        item.shape = part.shape;
        item.total = part.total;
        item.bytes.resize(part.total);
    }
    if (item.file != part.file || item.total != part.total)
        return Status::error(what + ": a part disagrees with the first on its kind or size");
    if (item.have == item.total && item.total > 0) return Status::error(what + ": a part after it was complete");
    if (part.offset != item.have)
        return Status::error(what + ": a part at byte " + std::to_string(part.offset) + " where byte " +
                             std::to_string(item.have) + " was due");
    if (part.bytes.size() > item.total - item.have) return Status::error(what + ": a part past its end");
    if (!part.bytes.empty()) std::memcpy(item.bytes.data() + item.have, part.bytes.data(), part.bytes.size());
    item.have += part.bytes.size();
    return Status::ok();
}

bool FinalModelAssembly::complete(const std::string& node) const {
    auto it = got_.find(node);
    if (it == got_.end()) return false;
    for (auto& [name, item] : it->second)
        if (item.have != item.total) return false;
    return true;
}

Result<uint64_t> FinalModelAssembly::write(const std::string& dir, const std::vector<std::string>& nodes,
                                           const std::string& file) const {
    using R = Result<uint64_t>;
    if (nodes.empty()) return R::error("no node sent the final model");
    for (const std::string& n : nodes)
        if (!complete(n)) return R::error("the final model from " + n + (holds(n) ? " is incomplete" : " never arrived"));
    const auto& order = node_order_.count(nodes.front()) ? node_order_.at(nodes.front()) : order_;
    SafeTensorsFile out;
    std::vector<std::string> missing;
    for (const std::string& name : order) {
        const Item* found = nullptr;
        for (const std::string& n : nodes) {
            const auto& items = got_.at(n);
            if (auto it = items.find(name); it != items.end() && !it->second.file) {
                found = &it->second;
                break;
            }
        }
        if (!found) {
            if (name != "frozen_emb") missing.push_back(name);
            continue;
        }
        SafeTensor t;
        t.name = name;
        t.shape = found->shape;
        t.values.resize(found->total / sizeof(float));
        for (size_t i = 0; i < t.values.size(); ++i) t.values[i] = le::get_f32(found->bytes.data() + 4 * i);
        out.tensors.push_back(std::move(t));
    }
    if (!missing.empty()) {
        std::string list;
        for (size_t i = 0; i < missing.size() && i < 4; ++i) list += (i ? ", " : "") + missing[i];
        if (missing.size() > 4) list += " and " + std::to_string(missing.size() - 4) + " more";
        return R::error("the final model lacks " + list);
    }
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return R::error("cannot create " + dir + ": " + ec.message());
    out.metadata["format"] = "thinwire";
    if (Status st = write_safetensors(dir + "/" + file, out); !st) return st;
    uint64_t bytes = std::filesystem::file_size(dir + "/" + file, ec);
    for (const std::string& n : nodes) {
        bool any = false;
        for (auto& [name, item] : got_.at(n)) {
            if (!item.file) continue;
            any = true;
            std::ofstream f(dir + "/" + name, std::ios::binary | std::ios::trunc);
            f.write(reinterpret_cast<const char*>(item.bytes.data()), static_cast<std::streamsize>(item.bytes.size()));
            if (!f) return R::error("cannot write " + dir + "/" + name);
            bytes += item.bytes.size();
        }
        if (any) break;
    }
    return bytes;
}

}  // namespace tw
