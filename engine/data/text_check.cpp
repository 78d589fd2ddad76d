// Corpus text checks; see text_check.h.
#include "engine/data/text_check.h"

#include <algorithm>
#include <cstdint>

namespace tw {
namespace {

// Length of the UTF-8 sequence starting with lead byte `c`, 0 when `c` cannot start one
// (a continuation byte, an overlong lead C0/C1, or F5..FF beyond U+10FFFF).
size_t utf8_length(unsigned char c) {
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return 2;
    if (c >= 0xE0 && c <= 0xEF) return 3;
    if (c >= 0xF0 && c <= 0xF4) return 4;
    return 0;
}

std::string hex_byte(unsigned char c) {
    static const char* kDigits = "0123456789abcdef";
    return std::string("0x") + kDigits[c >> 4] + kDigits[c & 15];
}

}  // namespace

Status check_text_bytes(const std::string& path, std::string_view bytes) {
    const size_t n = std::min(bytes.size(), kTextSniffBytes);
    auto not_text = [&](size_t at, const std::string& what) {
        return Status::error("data.corpus " + path + ": not text: at byte " + std::to_string(at) + ", " + what +
                             " (a corpus is plain UTF-8 text; remove binary files from it)");
    };
    for (size_t i = 0; i < n;) {
        const auto c = static_cast<unsigned char>(bytes[i]);
        if (c == 0) return not_text(i, "a NUL byte");
        const size_t len = utf8_length(c);
        if (len == 0) return not_text(i, "byte " + hex_byte(c) + ", invalid in UTF-8");
        for (size_t k = 1; k < len; ++k) {
            // Cut by the sniff window or by the file's end: no evidence of a binary file.
            if (i + k >= n) return Status::ok();
            const auto cont = static_cast<unsigned char>(bytes[i + k]);
            if ((cont & 0xC0) != 0x80)
                return not_text(i, "byte " + hex_byte(c) + " starts a " + std::to_string(len) +
                                       "-byte UTF-8 character that byte " + hex_byte(cont) + " does not continue");
        }
        i += len;
    }
    return Status::ok();
}

Status check_training_text(const std::string& corpus, size_t train_bytes, int64_t vocab_size) {
    if (static_cast<int64_t>(train_bytes) >= vocab_size) return Status::ok();
    return Status::error("data.corpus " + corpus + ": " + std::to_string(train_bytes) +
                         " bytes of training text, too little to learn a tokenizer of data.vocab_size " +
                         std::to_string(vocab_size) + " pieces (use more text or a smaller data.vocab_size)");
}

}  // namespace tw
