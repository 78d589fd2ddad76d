#include "app/run_model.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/config_io.h"
#include "storage/run_folder.h"
#include "storage/safetensors.h"

namespace tw::cli {

Result<std::string> run_model_file(const std::string& dir, const std::string& expert) {
    using R = Result<std::string>;
    std::error_code ec;
    if (!expert.empty()) {
        const std::string f = dir + "/model-" + expert + ".safetensors";
        if (!std::filesystem::is_regular_file(f, ec)) return R::error(dir + " holds no model of expert " + expert);
        return f;
    }
    const std::string f = dir + "/" + kRunModelFile;
    if (std::filesystem::is_regular_file(f, ec)) return f;
    std::string experts;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        const std::string n = e.path().filename().string();
        if (n.rfind("model-", 0) == 0 && n.size() > 18 && n.substr(n.size() - 12) == ".safetensors")
            experts += (experts.empty() ? "" : ", ") + n.substr(6, n.size() - 18);
    }
    if (!experts.empty()) return R::error(dir + " holds the models of HDEE experts " + experts + ": name one with --expert");
    return R::error(dir + " holds no " + kRunModelFile);
}

Result<RunConfig> run_folder_config(const std::string& dir, const SafeTensorsFile& weights) {
    std::ifstream in(dir + "/" + kRunConfigFile);
    if (!in) return Result<RunConfig>::error(dir + ": no " + kRunConfigFile);
    std::stringstream text;
    text << in.rdbuf();
    auto cfg = parse_config(text.str(), dir + "/" + kRunConfigFile);
    if (!cfg) return cfg.status();
    if (const SafeTensor* w13 = weights.find("block_0.w13"); w13 && w13->shape.size() == 2)
        cfg->model.d_ff = w13->shape[0] / 2;
    return cfg;
}

Result<RunModel> load_run_model(const std::string& db_path, int64_t run_id, const std::string& expert) {
    using R = Result<RunModel>;
    RunModel m;
    m.dir = run_folder(db_path, run_id);
    std::error_code ec;
    if (m.dir.empty() || !std::filesystem::is_directory(m.dir, ec))
        return R::error("run " + std::to_string(run_id) + " keeps no final model (no folder " + m.dir +
                        "; a run keeps one when its nodes reach the end of training or a clean stop)");
    auto file = run_model_file(m.dir, expert);
    if (!file) return file.status();
    auto weights = read_safetensors(*file);
    if (!weights) return weights.status();
    auto cfg = run_folder_config(m.dir, *weights);
    if (!cfg) return cfg.status();
    m.cfg = *cfg;
    if (m.cfg.model.vocab_size <= 0) return R::error(m.dir + "/" + kRunConfigFile + ": the model's vocabulary is not resolved");
    torch::NoGradGuard no_grad;
    m.model = Llama(m.cfg.model, static_cast<uint64_t>(m.cfg.run.seed));
    for (auto& p : m.model->named_parameters()) {
        const SafeTensor* t = weights->find(p.key());
        if (!t) return R::error(*file + ": no tensor " + p.key());
        if (t->shape != std::vector<int64_t>(p.value().sizes().begin(), p.value().sizes().end()))
            return R::error(*file + ": tensor " + p.key() + " has another shape than the config's model");
        std::memcpy(p.value().data_ptr<float>(), t->values.data(), t->values.size() * sizeof(float));
    }
    if (const SafeTensor* f = weights->find("frozen_emb")) {
        if (f->shape != std::vector<int64_t>{m.cfg.model.vocab_size, m.cfg.model.d_model})
            return R::error(*file + ": tensor frozen_emb has another shape than the embedding");
        auto t = torch::empty({m.cfg.model.vocab_size, m.cfg.model.d_model});
        std::memcpy(t.data_ptr<float>(), f->values.data(), f->values.size() * sizeof(float));
        m.model->set_frozen_embedding(t);
    }
    m.model->eval();
    const TokenizerKind* kind = find_tokenizer_kind(m.cfg.data.tokenizer);
    if (!kind) return R::error(m.dir + "/" + kRunConfigFile + ": unknown data.tokenizer \"" + m.cfg.data.tokenizer + "\"");
    for (const std::string& f : kind->file_names) m.tokenizer_files.push_back(m.dir + "/" + f);
    auto tok = load_tokenizer(kind->name, m.tokenizer_files);
    if (!tok) return R::error(m.dir + ": its tokenizer: " + tok.message());
    m.tokenizer = std::move(*tok);
    return m;
}

}  // namespace tw::cli
