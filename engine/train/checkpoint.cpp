// Checkpoint envelope and archive.
#include "engine/train/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cstring>
#include <mutex>

#include "core/hash.h"
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tw {
namespace {

constexpr char kMagic[8] = {'T', 'W', 'C', 'K', 'P', 'T', '0', '1'};

// torch's Module::load accepts a tensor of another shape without complaint (it re-points the
// parameter), so read every parameter and buffer ourselves and check its shape first.
Status load_module_checked(torch::serialize::InputArchive& ar, torch::nn::Module& model, const std::string& path) {
    std::vector<std::pair<torch::Tensor, torch::Tensor>> assign;  // (destination, loaded)
    auto visit = [&](const std::string& name, torch::Tensor& dst, bool is_buffer) -> Status {
        torch::serialize::InputArchive* a = &ar;
        std::vector<torch::serialize::InputArchive> chain;
        std::string rest = name;
        for (auto dot = rest.find('.'); dot != std::string::npos; dot = rest.find('.')) {
            chain.emplace_back();
            if (!a->try_read(rest.substr(0, dot), chain.back()))
                return Status::error("checkpoint " + path + " does not fit this model: it has no " + name);
            a = &chain.back();
            rest = rest.substr(dot + 1);
        }
        torch::Tensor t;
        if (!a->try_read(rest, t, is_buffer))
            return Status::error("checkpoint " + path + " does not fit this model: it has no " + name);
        if (!t.sizes().equals(dst.sizes()) || t.scalar_type() != dst.scalar_type()) {
            std::ostringstream os;
            os << "checkpoint " << path << " does not fit this model: " << name << " is " << t.sizes() << " there, "
               << dst.sizes() << " here";
            return Status::error(os.str());
        }
        assign.emplace_back(dst, t);
        return Status::ok();
    };
    for (auto& p : model.named_parameters())
        if (Status s = visit(p.key(), p.value(), false); !s) return s;
    for (auto& b : model.named_buffers())
        if (Status s = visit(b.key(), b.value(), true); !s) return s;
    torch::NoGradGuard no_grad;
    for (auto& [dst, src] : assign) dst.copy_(src);
    return Status::ok();
}

}  // namespace

Status save_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer& optim,
                       const CheckpointMeta& meta, const NamedTensors& extra) {
    std::ostringstream payload;
    try {
        torch::serialize::OutputArchive ar, model_ar, optim_ar;
        model.save(model_ar);
        optim.save(optim_ar);
        ar.write("model", model_ar);
        ar.write("optim", optim_ar);
        ar.write("step", torch::tensor(meta.step, torch::kLong));
        {
            // Thread nodes share the process's generator: read it under its lock.
            auto gen = at::detail::getDefaultCPUGenerator();
            std::lock_guard<std::mutex> lock(gen.mutex());
            ar.write("rng", gen.get_state());
        }
        ar.write("config_hash", torch::tensor(static_cast<int64_t>(std::stoull(meta.config_hash.empty() ? "0" : meta.config_hash, nullptr, 16)), torch::kLong));
        if (!extra.empty()) {
            // Archive keys are attribute names (a '.' would nest), so the tensors go in as x0, x1,
            // ... and their names as one '\n'-joined byte tensor.
            torch::serialize::OutputArchive extra_ar;
            std::string names;
            for (size_t i = 0; i < extra.size(); ++i) {
                if (extra[i].first.find('\n') != std::string::npos)
                    return Status::error("checkpoint " + path + ": state name with a line break");
                names += (i ? "\n" : "") + extra[i].first;
                extra_ar.write("x" + std::to_string(i), extra[i].second.detach().contiguous());
            }
            extra_ar.write("names", torch::from_blob(names.data(), {static_cast<int64_t>(names.size())}, torch::kUInt8).clone());
            ar.write("extra", extra_ar);
        }
        ar.save_to(payload);
    } catch (const std::exception& e) {
        return Status::error("cannot serialise checkpoint " + path + ": " + e.what());
    }
    const std::string body = payload.str();
    const uint64_t len = body.size(), hash = seeded_hash64(body);
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) return Status::error("cannot write checkpoint " + tmp);
        out.write(kMagic, sizeof kMagic);
        out.write(reinterpret_cast<const char*>(&len), sizeof len);
        out.write(reinterpret_cast<const char*>(&hash), sizeof hash);
        out.write(body.data(), static_cast<std::streamsize>(body.size()));
        if (!out.flush()) return Status::error("write failed for checkpoint " + tmp);
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);  // atomic: a crash leaves either the old or the new file
    if (ec) return Status::error("cannot move checkpoint into place at " + path + ": " + ec.message());
    return Status::ok();
}

Result<CheckpointMeta> load_checkpoint(const std::string& path, torch::nn::Module& model,
                                       torch::optim::Optimizer& optim, NamedTensors* extra) {
    using R = Result<CheckpointMeta>;
    std::ifstream in(path, std::ios::binary);
    if (!in) return R::error("cannot open checkpoint " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string file = ss.str();
    constexpr size_t kHeader = sizeof kMagic + 16;
    if (file.size() < kHeader || std::memcmp(file.data(), kMagic, sizeof kMagic) != 0)
        return R::error("checkpoint " + path + " is not a thinwire checkpoint (bad or missing header)");
    uint64_t len, hash;
    std::memcpy(&len, file.data() + 8, 8);
    std::memcpy(&hash, file.data() + 16, 8);
    if (file.size() - kHeader != len)
        return R::error("checkpoint " + path + " is truncated: header promises " + std::to_string(len) +
                        " payload bytes, file holds " + std::to_string(file.size() - kHeader));
    const std::string body = file.substr(kHeader);
    if (seeded_hash64(body) != hash) return R::error("checkpoint " + path + " is corrupt: payload checksum mismatch");
    CheckpointMeta meta;
    try {
        torch::serialize::InputArchive ar, model_ar, optim_ar;
        ar.load_from(body.data(), body.size());
        ar.read("model", model_ar);
        ar.read("optim", optim_ar);
        if (Status s = load_module_checked(model_ar, model, path); !s) return s;
        optim.load(optim_ar);
        torch::Tensor step, rng, h;
        ar.read("step", step);
        ar.read("rng", rng);
        ar.read("config_hash", h);
        auto gen = at::detail::getDefaultCPUGenerator();
        {
            std::lock_guard<std::mutex> lock(gen.mutex());
            gen.set_state(rng);
        }
        meta.step = step.item<int64_t>();
        char buf[17];
        std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h.item<int64_t>()));
        meta.config_hash = buf;
        if (extra) {
            extra->clear();
            torch::serialize::InputArchive extra_ar;
            if (ar.try_read("extra", extra_ar)) {
                torch::Tensor names_t;
                extra_ar.read("names", names_t);
                const auto* p = names_t.data_ptr<uint8_t>();
                std::string names(reinterpret_cast<const char*>(p), static_cast<size_t>(names_t.numel()));
                for (size_t i = 0, start = 0; start <= names.size(); ++i) {
                    size_t end = names.find('\n', start);
                    if (end == std::string::npos) end = names.size();
                    torch::Tensor t;
                    extra_ar.read("x" + std::to_string(i), t);
                    extra->emplace_back(names.substr(start, end - start), t);
                    start = end + 1;
                }
            }
        }
    } catch (const std::exception& e) {
        std::string what = e.what();
        what = what.substr(0, what.find('\n'));
        return R::error("checkpoint " + path + " does not fit this model: " + what);
    }
    return meta;
}

}  // namespace tw
