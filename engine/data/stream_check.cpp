// Token stream checks; see stream_check.h.
#include "engine/data/stream_check.h"

namespace tw {
namespace {

int64_t selected_tokens(const PreparedData& d, bool val, const std::vector<std::string>& genres) {
    int64_t n = 0;
    for (auto& [off, len] : select_spans(d, val, genres)) n += len;
    return n;
}

}  // namespace

Status check_stream_size(const std::string& source, int64_t tokens, bool train, const StreamNeeds& needs) {
    const int64_t window = needs.seq_len + 1;
    const std::string kind = train ? "a training window" : "a validation window";
    if (tokens < window)
        return Status::error(source + ": " + std::to_string(tokens) + " tokens" + (tokens == 0 ? " (empty)" : "") +
                             ", " + kind + " needs " + std::to_string(window) + " (model.seq_len + 1)");
    if (!train) return Status::ok();
    // Windows start every T tokens and hold T + 1, so W windows take W·T + 1 tokens.
    const int64_t batch = needs.batch_size * needs.seq_len + 1;
    if (tokens < batch)
        return Status::error(source + ": " + std::to_string(tokens) + " tokens hold " +
                             std::to_string((tokens - 1) / needs.seq_len) + " training windows of model.seq_len " +
                             std::to_string(needs.seq_len) + ", one batch needs " + std::to_string(needs.batch_size) +
                             " (train.batch_size): " + std::to_string(batch) + " tokens");
    return Status::ok();
}

Status check_token_ids(const std::string& source, const std::vector<uint16_t>& tokens, const StreamNeeds& needs) {
    if (needs.vocab_size <= 0) return Status::ok();
    for (size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] >= needs.vocab_size)
            return Status::error(source + ": token id " + std::to_string(tokens[i]) + " at position " +
                                 std::to_string(i) + " is not below model.vocab_size " +
                                 std::to_string(needs.vocab_size) +
                                 " (the model's vocabulary must cover every id of the data)");
    return Status::ok();
}

Status check_stream_part(const std::string& source, int64_t tokens, int64_t part, int64_t parts, int64_t seq_len) {
    // The window loader's split (engine/data/loader.h): part r reads [n·r/R, n·(r+1)/R).
    const int64_t n = tokens * (part + 1) / parts - tokens * part / parts;
    if (n >= seq_len + 1) return Status::ok();
    return Status::error(source + ": part " + std::to_string(part) + " of " + std::to_string(parts) + " gets " +
                         std::to_string(n) + " of its " + std::to_string(tokens) +
                         " tokens, a training window needs " + std::to_string(seq_len + 1) +
                         " (model.seq_len + 1); use fewer replicas, a shorter model.seq_len or more data");
}

std::string stream_source(const DataConfig& data, const PreparedData& d, bool train) {
    if (!data.train_shard.empty()) return train ? "data.train_shard " + data.train_shard : "data.val_shard " + data.val_shard;
    const std::string corpus = data.corpus == "brown" ? "brown" : data.corpus;
    const std::string split = train ? "training" : "validation";
    std::string s = "data.corpus " + corpus + ": its " + split + " split";
    if (!data.genres.empty()) {
        s += " of genres";
        for (auto& g : data.genres) s += " " + g;
    }
    if (!d.dir.empty()) s += " (" + d.dir + (train ? "/train.bin)" : "/val.bin)");
    return s;
}

Status check_train_part(const RunConfig& cfg, const PreparedData& d, int64_t part, int64_t parts) {
    return check_stream_part(stream_source(cfg.data, d, true), selected_tokens(d, false, cfg.data.genres), part, parts,
                             cfg.model.seq_len);
}

Status check_run_data(const RunConfig& cfg, const PreparedData& d) {
    if (!d.train || !d.val) return Status::error("data: no token streams were prepared");
    if (cfg.model.vocab_size > 0 && cfg.model.vocab_size < d.vocab_size)
        return Status::error("model.vocab_size " + std::to_string(cfg.model.vocab_size) + " is smaller than the data's " +
                             std::to_string(d.vocab_size));
    StreamNeeds needs;
    needs.seq_len = cfg.model.seq_len;
    needs.batch_size = cfg.train.batch_size;
    needs.vocab_size = cfg.model.vocab_size > 0 ? cfg.model.vocab_size : d.vocab_size;
    for (const bool train : {true, false}) {
        const std::string source = stream_source(cfg.data, d, train);
        if (Status st = check_stream_size(source, selected_tokens(d, !train, cfg.data.genres), train, needs); !st)
            return st;
        if (Status st = check_token_ids(source, train ? *d.train : *d.val, needs); !st) return st;
    }
    return Status::ok();
}

}  // namespace tw
