// GPT-2's pre-tokenizer (Radford et al. 2019, "Language Models are Unsupervised Multitask
// Learners"): the text is cut into the pieces byte-level BPE merges within, as the pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// would cut it, scanning left to right and taking the first alternative that matches. Implemented
// by hand over code points; the Unicode classes are range tables (gpt2_pretokenizer.cpp) that cover
// Latin, Greek, Cyrillic, Armenian, Hebrew, Arabic, Devanagari, Thai, Georgian, Hangul, kana and CJK
// ideographs, not every assigned letter. Whitespace is JavaScript's \s (the reference encoder's).
// Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tw {

// The Unicode classes the pattern uses, for one code point.
bool gpt2_is_letter(char32_t cp);  // \p{L}
bool gpt2_is_number(char32_t cp);  // \p{N}
bool gpt2_is_space(char32_t cp);   // \s

// The pieces of `text` (UTF-8) in order; their concatenation is `text`. A byte that does not start
// a well-formed UTF-8 character counts as one character of the class [^\s\p{L}\p{N}].
std::vector<std::string_view> gpt2_pretokenize(std::string_view text);

}  // namespace tw
