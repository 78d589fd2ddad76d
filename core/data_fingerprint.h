// A fingerprint of a run's prepared data (engine/data/dataset.h: data_fingerprint): the project hash
// (core/hash.h) of the tokenizer (a SentencePiece model without the training record of the machine's
// paths, GPT-2's two files) with the corpus's reading settings, and of the train and val token streams. The
// coordinator sends its own in every node's role (core/role.h); each node compares the data it
// prepared on its machine before any step, so a run never trains on data that differ by node.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tw {

struct DataFingerprint {
    // The tokenizer's hash (its kind's files), folded with how a corpus was read (data.format,
    // data.text_field) for a text corpus; none for user shards (data.train_shard), which have no model.
    std::optional<uint64_t> tokenizer;
    uint64_t train = 0, val = 0;        // the token streams, each token as two little-endian bytes

    bool operator==(const DataFingerprint& o) const {
        return tokenizer == o.tokenizer && train == o.train && val == o.val;
    }
    bool operator!=(const DataFingerprint& o) const { return !(*this == o); }
};

// "tokenizer 0123456789abcdef, train …, val …" (16 lower-case hex digits each; "none").
std::string to_text(const DataFingerprint& f);
// The wire form in a role: "TOKENIZER:TRAIN:VAL", each 16 lower-case hex digits, TOKENIZER also "none".
inline constexpr size_t kMaxFingerprintChars = 50;
std::string to_wire(const DataFingerprint& f);
Result<DataFingerprint> parse_data_fingerprint(std::string_view wire);
// What differs, "" if nothing: e.g. "train shard 1a2b… here, 3c4d… at the coordinator"
// (`here` and `there` name the two sides; parts joined by "; ").
std::string fingerprint_difference(const DataFingerprint& mine, const DataFingerprint& theirs,
                                   const std::string& here, const std::string& there);
// A node's check of its own data against the coordinator's fingerprint (wire form; "" = no check):
// the error says what differs, e.g. "its data differ from the coordinator's: train shard … here, …
// at the coordinator (…)"; whoever reports it names the node.
Status check_data_fingerprint(const DataFingerprint& mine, const std::string& coordinator_wire);

}  // namespace tw
