// SentencePiece BPE tokenizer: trained on the training documents, cached as a .model file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace tw {

class Tokenizer {
public:
    static constexpr int kUnkId = 0;
    static constexpr int kEosId = 1;  // separates documents in token streams

    // Trains a BPE model of `vocab_size` pieces on `texts` (one document each) and writes it to
    // `model_path` (plus .vocab). Deterministic for the same input.
    static Status train(const std::vector<std::string>& texts, int vocab_size, const std::string& model_path,
                        int threads = 2);
    static Result<Tokenizer> load(const std::string& model_path);
    // seeded_hash64 (core/hash.h) of a model file's bytes without its training record (ModelProto field 2,
    // trainer_spec, which holds the training machine's input and output paths): the same pieces,
    // scores and normalizer hash the same on every machine. Errors name the file.
    static Result<uint64_t> model_hash(const std::string& model_path);

    std::vector<int> encode(const std::string& text) const;
    std::string decode(const std::vector<int>& ids) const;
    int vocab_size() const;

    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;
    ~Tokenizer();

private:
    Tokenizer();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tw
