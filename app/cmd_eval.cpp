// `thinwire eval RUN [--data FILE] [--data-root DIR] [--expert NODE]`: the loss of a run's final
// model (app/run_model.h).
//  * Without --data: on the run's own validation split, prepared under the data root as the run
//    prepared it, over the windows and batches the run's evaluation takes (train.eval_batches
//    batches of train.batch_size windows in stream order): the run's final val.loss, recomputed.
//  * With --data FILE: a held-out text, split into documents at blank lines, each after a
//    document separator as in training, in windows of model.seq_len: every token of the text is
//    predicted once. Reported in nats per token and in bits per byte of the documents' UTF-8 text,
//    which compares models with different tokenizers.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/commands.h"
#include "app/run_model.h"
#include "coordinator/run_session.h"
#include "core/data_root.h"
#include "engine/data/dataset.h"
#include "engine/data/loader.h"
#include "core/output_file.h"
#include "storage/run_store.h"
#include "storage/safetensors.h"

namespace tw::cli {
namespace {

struct EvalArgs {
    int64_t run = 0;
    std::string db_path;
    std::string data, data_root, expert, logits_out;
};

constexpr uintmax_t kMaxTextBytes = uintmax_t{1} << 30;

// Documents of `text`: runs of lines separated by blank lines (whitespace only), trimmed.
std::vector<std::string> documents(const std::string& text) {
    std::vector<std::string> docs;
    std::string cur, line;
    std::istringstream in(text);
    const auto flush = [&] {
        while (!cur.empty() && (cur.back() == '\n' || cur.back() == ' ')) cur.pop_back();
        if (!cur.empty()) docs.push_back(cur);
        cur.clear();
    };
    while (std::getline(in, line)) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) flush();
        else cur += line + "\n";
    }
    flush();
    return docs;
}

int eval_split(const Globals& g, const EvalArgs& a, RunModel& m) {
    RunConfig cfg = m.cfg;
    const std::string root = unwrap(coordinator_data_root(a.data_root));
    check(confine_paths(cfg, root));
    const PreparedData d = unwrap(prepare_data(cfg.data));
    // The tokens must be the run's: the data prepared here has to use the kept tokenizer.
    if (!d.tokenizer_files.empty()) {
        const uint64_t here = unwrap(tokenizer_hash(d.tokenizer_kind, d.tokenizer_files));
        const uint64_t kept = unwrap(tokenizer_hash(d.tokenizer_kind, m.tokenizer_files));
        if (here != kept)
            throw Error("eval: the data under " + root + " is tokenized with another tokenizer than run " +
                        std::to_string(a.run) + "'s (" + d.tokenizer_files.front() + "); name the run's --data-root");
    }
    WindowLoader val(d.val, select_spans(d, true, cfg.data.genres), cfg.model.seq_len, cfg.train.batch_size,
                     static_cast<uint64_t>(cfg.run.seed));
    torch::NoGradGuard no_grad;
    double sum = 0;
    for (int64_t i = 0; i < cfg.train.eval_batches; ++i) sum += m.model->loss(val.sequential_batch(i)).item<double>();
    const double loss = sum / static_cast<double>(cfg.train.eval_batches);
    std::printf("run %lld: val loss %.6f nats/token on its validation split (%lld batches of %lld windows of %lld tokens)\n",
                (long long)a.run, loss, (long long)cfg.train.eval_batches, (long long)cfg.train.batch_size,
                (long long)cfg.model.seq_len);
    (void)g;
    return 0;
}

int eval_text(const EvalArgs& a, RunModel& m) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(a.data, ec);
    if (ec) throw Error("eval: --data " + a.data + ": " + ec.message());
    if (size > kMaxTextBytes) throw Error("eval: --data " + a.data + " is over 1 GiB");
    std::ifstream in(a.data, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    const std::vector<std::string> docs = documents(text.str());
    if (docs.empty()) throw Error("eval: --data " + a.data + " holds no text");
    std::vector<int> stream;
    uint64_t bytes = 0;
    for (const std::string& doc : docs) {
        stream.push_back(m.tokenizer->eos_id());
        for (int id : m.tokenizer->encode(doc)) stream.push_back(id);
        bytes += doc.size();
    }
    const int64_t T = m.cfg.model.seq_len, V = m.cfg.model.vocab_size;
    torch::NoGradGuard no_grad;
    double nll = 0;
    int64_t predicted = 0;
    // Windows of up to T + 1 tokens overlapping by one: each predicts its last T tokens.
    for (size_t at = 0; at + 1 < stream.size(); at += static_cast<size_t>(T)) {
        const int64_t n = std::min<int64_t>(T + 1, static_cast<int64_t>(stream.size() - at));
        auto w = torch::empty({1, n}, torch::kLong);
        auto* p = w.data_ptr<int64_t>();
        for (int64_t j = 0; j < n; ++j) p[j] = stream[at + static_cast<size_t>(j)];
        auto logits = m.model->forward(w.narrow(1, 0, n - 1)).reshape({-1, V});
        if (at == 0 && !a.logits_out.empty()) {
            // The first window's input ids [n - 1] and logits [n - 1, V], to compare with another
            // implementation of the model (docs/your_model.md).
            SafeTensorsFile f;
            SafeTensor ids{"ids", {n - 1}, {}}, lg{"logits", {n - 1, V}, {}};
            for (int64_t j = 0; j + 1 < n; ++j) ids.values.push_back(static_cast<float>(p[j]));
            auto c = logits.contiguous();
            lg.values.assign(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
            f.tensors = {std::move(ids), std::move(lg)};
            check(check_output_target(a.logits_out, a.db_path));
            check(write_safetensors(a.logits_out, f));
        }
        auto logp = torch::log_softmax(logits.to(torch::kDouble), -1);
        nll -= logp.gather(1, w.narrow(1, 1, n - 1).reshape({-1, 1})).sum().item<double>();
        predicted += n - 1;
    }
    const double per_token = nll / static_cast<double>(predicted);
    std::printf("run %lld on %s: %.6f nats/token (perplexity %.3f) over %lld tokens; %.6f bits/byte over %llu bytes "
                "of %zu documents\n",
                (long long)a.run, a.data.c_str(), per_token, std::exp(per_token), (long long)predicted,
                nll / std::log(2.0) / static_cast<double>(bytes), (unsigned long long)bytes, docs.size());
    return 0;
}

int run_eval(const Globals& g, const EvalArgs& a) {
    {
        RunStore store = unwrap(RunStore::open(g.db_path, StoreAccess::kExisting));
        check(store.get_run(a.run).status());
    }
    if (!a.logits_out.empty() && a.data.empty()) throw Error("eval: --logits-out needs --data");
    RunModel m = unwrap(load_run_model(g.db_path, a.run, a.expert));
    EvalArgs with = a;
    with.db_path = g.db_path;
    return a.data.empty() ? eval_split(g, with, m) : eval_text(with, m);
}

}  // namespace

Command add_eval(CLI::App& app, const Globals& g) {
    auto args = std::make_shared<EvalArgs>();
    auto* c = app.add_subcommand("eval", "Loss of a run's final model: on its validation split, or on a text file");
    c->add_option("run", args->run, "run id")->required();
    c->add_option("--data", args->data, "a plain-text file (documents separated by blank lines); default: the run's validation split");
    c->add_option("--data-root", args->data_root,
                  "without --data: the folder the run's data paths are relative to (default as for run)");
    c->add_option("--expert", args->expert, "an HDEE run: the expert node whose model to evaluate");
    c->add_option("--logits-out", args->logits_out,
                  "with --data: write the first window's ids and logits to this safetensors file");
    return {c, [&g, args] { return run_eval(g, *args); }};
}

}  // namespace tw::cli
