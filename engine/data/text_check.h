// Is a corpus file text? The checks a plain-text corpus (data.corpus as a file or folder) passes
// before a tokenizer is trained on it, so a binary file given by mistake is named with its reason
// instead of surfacing as the tokenizer trainer's complaint about a vocabulary too small for its
// characters. Torch-free.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tw {

// How much of a file's start is inspected: enough to catch binary formats (their headers and
// tables come first), cheap for a folder of thousands of files.
constexpr size_t kTextSniffBytes = 4096;

// Ok when the first kTextSniffBytes of `bytes` are UTF-8 without NUL bytes: lead bytes that can
// start a character, each followed by its continuation bytes (a character cut by the window's or
// the file's end is fine; overlong and surrogate forms are not looked for). Otherwise an error naming `path`, the byte offset and
// what is wrong there, e.g. "data.corpus /x/a.dat: not text: at byte 17, a NUL byte (a corpus is
// plain UTF-8 text; ...)".
Status check_text_bytes(const std::string& path, std::string_view bytes);

// The training text a tokenizer of `vocab_size` pieces is learned from must at least hold as many
// bytes as pieces; less is an error naming `corpus` and both numbers. (The trainer may still find
// too few distinct characters in more text; its own message is passed on, named, then.)
Status check_training_text(const std::string& corpus, size_t train_bytes, int64_t vocab_size);

}  // namespace tw
