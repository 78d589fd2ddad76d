// `thinwire sample RUN --prompt TEXT [--tokens N] [--temperature T] [--top-k K] [--seed S]`: text
// from a run's final model (app/run_model.h). The prompt follows a document separator, as a
// document does in training; generation stops at N tokens or at the end of a document. Greedy at
// temperature 0; otherwise the next token is drawn from softmax(logits / T) over the K most likely
// (all with K = 0) by a generator seeded with S, so the same seed gives the same text.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "app/commands.h"
#include "app/run_model.h"
#include "storage/run_store.h"

namespace tw::cli {
namespace {

struct SampleArgs {
    int64_t run = 0, tokens = 64, top_k = 0;
    uint64_t seed = 1;
    double temperature = 0;
    std::string prompt, expert;
};

// The index drawn from logits `l` at temperature `t` among the `k` largest (k ≤ 0: all), with one
// uniform draw `u` in [0, 1); greedy (the first largest) when t ≤ 0.
int64_t pick(const float* l, int64_t V, double t, int64_t k, double u) {
    std::vector<int64_t> idx(static_cast<size_t>(V));
    for (int64_t i = 0; i < V; ++i) idx[static_cast<size_t>(i)] = i;
    std::stable_sort(idx.begin(), idx.end(), [l](int64_t a, int64_t b) { return l[a] > l[b]; });
    if (t <= 0) return idx.front();
    const size_t n = k > 0 ? std::min<size_t>(static_cast<size_t>(k), idx.size()) : idx.size();
    std::vector<double> p(n);
    const double top = l[idx.front()];
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += p[i] = std::exp((l[idx[i]] - top) / t);
    double acc = 0;
    for (size_t i = 0; i < n; ++i) {
        acc += p[i] / sum;
        if (u < acc) return idx[i];
    }
    return idx[n - 1];
}

int run_sample(const Globals& g, const SampleArgs& a) {
    if (a.tokens < 1 || a.tokens > 100000) throw Error("sample: --tokens must be in [1, 100000]");
    if (!(a.temperature >= 0) || a.temperature > 100) throw Error("sample: --temperature must be in [0, 100]");
    if (a.top_k < 0) throw Error("sample: --top-k must be ≥ 0");
    {
        RunStore store = unwrap(RunStore::open(g.db_path, StoreAccess::kExisting));
        check(store.get_run(a.run).status());
    }
    RunModel m = unwrap(load_run_model(g.db_path, a.run, a.expert));
    torch::NoGradGuard no_grad;
    const int64_t T = m.cfg.model.seq_len, V = m.cfg.model.vocab_size;
    std::vector<int> ids{m.tokenizer->eos_id()};  // a document begins after a separator
    for (int id : m.tokenizer->encode(a.prompt)) ids.push_back(id);
    std::mt19937_64 rng(a.seed);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    std::vector<int> out;
    for (int64_t i = 0; i < a.tokens; ++i) {
        const size_t n = std::min<size_t>(ids.size(), static_cast<size_t>(T));
        auto ctx = torch::empty({1, static_cast<int64_t>(n)}, torch::kLong);
        auto* c = ctx.data_ptr<int64_t>();
        for (size_t j = 0; j < n; ++j) c[j] = ids[ids.size() - n + j];
        const torch::Tensor logits = m.model->forward(ctx).select(1, static_cast<int64_t>(n) - 1).contiguous();
        const int64_t next = pick(logits.data_ptr<float>(), V, a.temperature, a.top_k, uniform(rng));
        if (next == m.tokenizer->eos_id()) break;
        ids.push_back(static_cast<int>(next));
        out.push_back(static_cast<int>(next));
    }
    std::printf("%s%s\n", a.prompt.c_str(), m.tokenizer->decode(out).c_str());
    return 0;
}

}  // namespace

Command add_sample(CLI::App& app, const Globals& g) {
    auto args = std::make_shared<SampleArgs>();
    auto* c = app.add_subcommand("sample", "Generate text from a run's final model");
    c->add_option("run", args->run, "run id")->required();
    c->add_option("--prompt", args->prompt, "the text to continue")->required();
    c->add_option("--tokens", args->tokens, "at most this many new tokens")->capture_default_str();
    c->add_option("--temperature", args->temperature, "0 = greedy; > 0 draws from softmax(logits / T)")->capture_default_str();
    c->add_option("--top-k", args->top_k, "draw among the K most likely tokens only (0 = all)")->capture_default_str();
    c->add_option("--seed", args->seed, "seed of the draws")->capture_default_str();
    c->add_option("--expert", args->expert, "an HDEE run: the expert node whose model to sample");
    return {c, [&g, args] { return run_sample(g, *args); }};
}

}  // namespace tw::cli
