// `thinwire export RUN --out DIR [--format hf|safetensors] [--expert NODE] [--force]`: a run's
// final model (storage/run_folder.h) in the Hugging Face Llama layout (storage/hf_llama.h). `hf`
// writes a model folder — model.safetensors, config.json and the run's tokenizer files —, and
// `safetensors` the weights file alone. DIR is created; files already in it are replaced only with
// --force, and never the run store or its own folder.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/commands.h"
#include "app/run_model.h"
#include "core/config_io.h"
#include "core/output_file.h"
#include "storage/hf_llama.h"
#include "storage/run_folder.h"
#include "storage/run_store.h"
#include "storage/safetensors.h"

namespace tw::cli {
namespace {

struct ExportArgs {
    int64_t run = 0;
    std::string out, format = "hf", expert;
    bool force = false;
};

namespace fs = std::filesystem;

int run_export_model(const Globals& g, const ExportArgs& a) {
    if (a.format != "hf" && a.format != "safetensors")
        throw Error("export: --format must be hf or safetensors, not \"" + a.format + "\"");
    {
        RunStore store = unwrap(RunStore::open(g.db_path, StoreAccess::kExisting));
        check(store.get_run(a.run).status());  // the run exists
    }
    const std::string dir = run_folder(g.db_path, a.run);
    std::error_code ec;
    if (dir.empty() || !fs::is_directory(dir, ec))
        throw Error("export: run " + std::to_string(a.run) + " keeps no final model (no folder " + dir + ")");
    const std::string weights_path = unwrap(run_model_file(dir, a.expert));
    const SafeTensorsFile weights = unwrap(read_safetensors(weights_path));
    const RunConfig cfg = unwrap(run_folder_config(dir, weights));
    const SafeTensorsFile hf = unwrap(to_hf_llama(weights, cfg.model));
    const bool tied = hf.find("lm_head.weight") == nullptr;

    // The target: a folder of the user's; nothing in it is replaced without --force, and neither
    // the store nor the run's own folder is ever written into.
    const fs::path out = fs::absolute(a.out, ec).lexically_normal();
    if (ec) throw Error("export: --out " + a.out + ": " + ec.message());
    const fs::path source = fs::path(dir).lexically_normal();
    if (fs::exists(out, ec) && fs::equivalent(out, source, ec))
        throw Error("export: --out " + a.out + " is the run's own folder");
    std::vector<std::string> names{"model.safetensors"};
    // The tokenizer's files under the names Hugging Face's loaders read: SentencePiece's model as it
    // is, GPT-2's vocabulary and merges as vocab.json and merges.txt.
    std::vector<std::pair<std::string, std::string>> copies;
    if (a.format == "hf") {
        names.push_back("config.json");
        for (auto [from, to] : {std::pair<const char*, const char*>{"tokenizer.model", "tokenizer.model"},
                                {"encoder.json", "vocab.json"}, {"vocab.bpe", "merges.txt"}})
            if (fs::is_regular_file(dir + "/" + from, ec)) names.push_back(to), copies.emplace_back(from, to);
    }
    fs::create_directories(out, ec);
    if (ec) throw Error("export: cannot create " + out.string() + ": " + ec.message());
    for (const std::string& n : names) {
        const std::string target = (out / n).string();
        check(check_output_target(target, g.db_path));
        if (fs::exists(target, ec) && !a.force)
            throw Error("export: " + target + " exists; add --force to replace it");
    }
    check(write_safetensors((out / "model.safetensors").string(), hf));
    if (a.format == "hf") {
        check(write_output_file((out / "config.json").string(), Overwrite::kReplace, g.db_path, [&](std::ostream& o) {
            o << hf_llama_config_json(cfg.model, tied);
            return Status::ok();
        }));
        for (const auto& [from, to] : copies) {
            fs::copy_file(dir + "/" + from, out / to, fs::copy_options::overwrite_existing, ec);
            if (ec) throw Error("export: cannot copy " + from + ": " + ec.message());
        }
    }
    std::printf("run %lld%s exported to %s (%s: %zu tensors%s)\n", (long long)a.run,
                a.expert.empty() ? "" : (" expert " + a.expert).c_str(), out.string().c_str(), a.format.c_str(),
                hf.tensors.size(), tied ? ", tied embeddings" : "");
    return 0;
}

}  // namespace

Command add_export(CLI::App& app, const Globals& g) {
    auto args = std::make_shared<ExportArgs>();
    auto* c = app.add_subcommand("export", "Write a run's final model in the Hugging Face Llama layout (safetensors)");
    c->add_option("run", args->run, "run id")->required();
    c->add_option("--out", args->out, "folder to write into (created)")->required();
    c->add_option("--format", args->format, "hf (weights, config.json, tokenizer) or safetensors (weights only)")
        ->capture_default_str();
    c->add_option("--expert", args->expert, "an HDEE run: the expert node whose model to export");
    c->add_flag("--force", args->force, "replace files already in the folder");
    return {c, [&g, args] { return run_export_model(g, *args); }};
}

}  // namespace tw::cli
