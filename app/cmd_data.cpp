// `thinwire data prepare [FILE]`: builds (or loads) the tokenizer and shards and prints what it has.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>

#include "app/commands.h"
#include "core/config_io.h"
#include "engine/data/dataset.h"

namespace tw::cli {
namespace {

struct DataArgs {
    std::string file;
    std::vector<std::string> sets;
};

int run_prepare(const DataArgs& a) {
    RunConfig cfg = unwrap(load_config(a.file, a.sets));
    PreparedData d = unwrap(prepare_data(cfg.data, [](const std::string& s) { std::printf("%s\n", s.c_str()); }));
    std::printf("data ready in %s\n", d.dir.empty() ? "(user shards)" : d.dir.c_str());
    std::printf("  vocabulary %lld, train %zu tokens, val %zu tokens\n", (long long)d.vocab_size, d.train->size(),
                d.val->size());
    std::map<char, std::pair<int, int64_t>> per_genre;  // genre → (documents, train tokens)
    for (auto& s : d.docs) {
        if (s.is_val) continue;
        per_genre[s.genre].first++;
        per_genre[s.genre].second += s.length;
    }
    for (auto& [g, v] : per_genre) std::printf("  genre %c: %3d train documents, %8lld tokens\n", g, v.first, (long long)v.second);
    if (d.vocab_size > 0)
        std::printf("  unigram baseline: %.4f nats/token on val\n", unigram_loss(*d.train, *d.val, d.vocab_size));
    return 0;
}

}  // namespace

Command add_data(CLI::App& app, const Globals&) {
    auto* sub = app.add_subcommand("data", "Corpus and tokenizer tools");
    sub->require_subcommand(1);
    auto* prep = sub->add_subcommand("prepare", "Fetch-free preparation: detag Brown (or read text), train the "
                                                "tokenizer, write train/val shards into the cache");
    auto args = std::make_shared<DataArgs>();
    prep->add_option("file", args->file, "TOML run file whose [data] section to use (default: built-in)");
    prep->add_option("--set", args->sets, "Override a key, e.g. --set data.vocab_size=8192");
    return {sub, [args] { return run_prepare(*args); }};
}

}  // namespace tw::cli
