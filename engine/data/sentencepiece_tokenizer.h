// SentencePiece BPE tokenizer (data.tokenizer = "bpe"): trained on the training documents, cached
// as a .model file in the prepared data's folder. The library's headers stay out of this one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/data/tokenizer.h"

namespace tw {

class SentencePieceTokenizer final : public Tokenizer {
public:
    static constexpr int kUnkId = 0;
    static constexpr int kEosId = 1;  // separates documents in token streams

    // Trains a BPE model of `vocab_size` pieces on `texts` (one document each) and writes it to
    // `model_path` (plus .vocab). Deterministic for the same input.
    static Status train(const std::vector<std::string>& texts, int vocab_size, const std::string& model_path,
                        int threads = 2);
    static Result<std::unique_ptr<SentencePieceTokenizer>> load(const std::string& model_path);
    // seeded_hash64 (core/hash.h) of a model file's bytes without its training record (ModelProto field 2,
    // trainer_spec, which holds the training machine's input and output paths): the same pieces,
    // scores and normalizer hash the same on every machine. Errors name the file.
    static Result<uint64_t> model_hash(const std::string& model_path);

    std::string kind() const override { return "bpe"; }
    std::vector<int> encode(const std::string& text) const override;
    std::string decode(const std::vector<int>& ids) const override;
    int vocab_size() const override;
    int eos_id() const override { return kEosId; }
    std::vector<std::string> files() const override { return {model_path_}; }

    ~SentencePieceTokenizer() override;

private:
    SentencePieceTokenizer() = default;
    void* handle_ = nullptr;  // the shim's SentencePieceProcessor, owned
    std::string model_path_;
};

}  // namespace tw
