// Text ↔ token ids: the one interface every tokenizer kind implements (data.tokenizer), and the one
// table that registers the kinds (tokenizer.cpp). Implementations: sentencepiece_tokenizer.h ("bpe",
// trained on the corpus), gpt2_tokenizer.h ("gpt2", GPT-2's fixed byte-level BPE). Torch-free.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace tw {

// A loaded tokenizer. Implementations are immutable after loading and safe to call from several
// threads at once.
class Tokenizer {
public:
    virtual ~Tokenizer() = default;
    // data.tokenizer's name for this kind: "bpe" | "gpt2".
    virtual std::string kind() const = 0;
    // UTF-8 text → ids in [0, vocab_size()). Text that is not UTF-8 still encodes (byte by byte).
    virtual std::vector<int> encode(const std::string& text) const = 0;
    // Ids in [0, vocab_size()) → text.
    virtual std::string decode(const std::vector<int>& ids) const = 0;
    virtual int vocab_size() const = 0;
    // The id that ends every document in a token stream.
    virtual int eos_id() const = 0;
    // The files it was loaded from (absolute paths), all that a copy of it needs.
    virtual std::vector<std::string> files() const = 0;
};

// One registered kind.
struct TokenizerKind {
    std::string name;       // data.tokenizer's value
    // Folder under data.cache_dir that holds its fixed files (scripts/setup.sh fetches them); "" =
    // trained on the corpus and written into the prepared data's own folder.
    std::string fixed_dir;
    std::vector<std::string> file_names;  // its files in that folder, in the order load takes them
    int64_t vocab_size = 0;               // fixed vocabulary; 0 = data.vocab_size (trained)
    // Loads from `files` (paths in file_names' order). Errors name the file and what is wrong.
    Result<std::unique_ptr<Tokenizer>> (*load)(const std::vector<std::string>& files) = nullptr;
    // seeded_hash64 (core/hash.h) of what decides its ids, the same on every machine whatever its
    // paths. Errors name the file.
    Result<uint64_t> (*hash)(const std::vector<std::string>& files) = nullptr;
};

// Every kind, "bpe" first (the default).
const std::vector<TokenizerKind>& tokenizer_kinds();
// The kind named `name`, nullptr when there is none.
const TokenizerKind* find_tokenizer_kind(const std::string& name);

// The files of kind `kind` for data cached under `cache_dir` whose prepared folder is `data_dir`:
// fixed kinds in cache_dir/fixed_dir, trained ones in data_dir. Deterministic: the same settings
// name the same files. Errors for an unknown kind.
Result<std::vector<std::string>> tokenizer_files(const std::string& kind, const std::string& cache_dir,
                                                 const std::string& data_dir);
// Loads kind `kind` from `files`; errors name the kind or the file.
Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& kind, const std::vector<std::string>& files);
// The kind's hash of `files` (TokenizerKind::hash).
Result<uint64_t> tokenizer_hash(const std::string& kind, const std::vector<std::string>& files);

}  // namespace tw
