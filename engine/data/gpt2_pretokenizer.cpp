// GPT-2's pre-tokenizer by hand; see gpt2_pretokenizer.h.
#include "engine/data/gpt2_pretokenizer.h"

#include <algorithm>
#include <iterator>

namespace tw {
namespace {

struct Range {
    char32_t lo, hi;  // inclusive
};

// Sorted, disjoint. Letters (categories Lu, Ll, Lt, Lm, Lo) of the scripts named in the header;
// combining marks (Mn, Mc) are not letters, as in Unicode.
constexpr Range kLetters[] = {
    {0x41, 0x5A},       {0x61, 0x7A},       {0xAA, 0xAA},       {0xB5, 0xB5},       {0xBA, 0xBA},
    {0xC0, 0xD6},       {0xD8, 0xF6},       {0xF8, 0x2C1},      {0x2C6, 0x2D1},     {0x2E0, 0x2E4},
    {0x2EC, 0x2EC},     {0x2EE, 0x2EE},     {0x370, 0x374},     {0x376, 0x377},     {0x37A, 0x37D},
    {0x37F, 0x37F},     {0x386, 0x386},     {0x388, 0x38A},     {0x38C, 0x38C},     {0x38E, 0x3A1},
    {0x3A3, 0x3F5},     {0x3F7, 0x481},     {0x48A, 0x52F},     {0x531, 0x556},     {0x559, 0x559},
    {0x560, 0x588},     {0x5D0, 0x5EA},     {0x5EF, 0x5F2},     {0x620, 0x64A},     {0x66E, 0x66F},
    {0x671, 0x6D3},     {0x6D5, 0x6D5},     {0x6E5, 0x6E6},     {0x6EE, 0x6EF},     {0x6FA, 0x6FC},
    {0x6FF, 0x6FF},     {0x904, 0x939},     {0x93D, 0x93D},     {0x950, 0x950},     {0x958, 0x961},
    {0x971, 0x980},     {0xE01, 0xE30},     {0xE32, 0xE33},     {0xE40, 0xE46},     {0x10A0, 0x10C5},
    {0x10D0, 0x10FA},   {0x10FC, 0x10FF},   {0x1100, 0x1248},   {0x1E00, 0x1F15},   {0x1F18, 0x1F1D},
    {0x1F20, 0x1F45},   {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},   {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},   {0x1FBE, 0x1FBE},
    {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},   {0x1FD6, 0x1FDB},   {0x1FE0, 0x1FEC},
    {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},   {0x2071, 0x2071},   {0x207F, 0x207F},   {0x2090, 0x209C},
    {0x2102, 0x2102},   {0x2107, 0x2107},   {0x210A, 0x2113},   {0x2115, 0x2115},   {0x2119, 0x211D},
    {0x2124, 0x2124},   {0x2126, 0x2126},   {0x2128, 0x2128},   {0x212A, 0x212D},   {0x212F, 0x2139},
    {0x2C00, 0x2CE4},   {0x2D00, 0x2D25},   {0x3005, 0x3006},   {0x3031, 0x3035},   {0x303B, 0x303C},
    {0x3041, 0x3096},   {0x309D, 0x309F},   {0x30A1, 0x30FA},   {0x30FC, 0x30FF},   {0x3105, 0x312F},
    {0x3131, 0x318E},   {0x31A0, 0x31BF},   {0x31F0, 0x31FF},   {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},
    {0xA000, 0xA48C},   {0xAC00, 0xD7A3},   {0xF900, 0xFA6D},   {0xFA70, 0xFAD9},   {0xFF21, 0xFF3A},
    {0xFF41, 0xFF5A},   {0xFF66, 0xFFBE},   {0x20000, 0x2A6DF}, {0x2A700, 0x2EBE0}, {0x30000, 0x3134A},
};

// Numbers (Nd, Nl, No) of the same scripts, with the common superscripts, fractions and circled digits.
constexpr Range kNumbers[] = {
    {0x30, 0x39},     {0xB2, 0xB3},     {0xB9, 0xB9},     {0xBC, 0xBE},     {0x660, 0x669},   {0x6F0, 0x6F9},
    {0x966, 0x96F},   {0xE50, 0xE59},   {0x2070, 0x2070}, {0x2074, 0x2079}, {0x2080, 0x2089}, {0x2150, 0x2182},
    {0x2185, 0x2189}, {0x2460, 0x249B}, {0x24EA, 0x24FF}, {0x2776, 0x2793}, {0x3007, 0x3007}, {0x3021, 0x3029},
    {0x3038, 0x303A}, {0x3192, 0x3195}, {0x3220, 0x3229}, {0x3248, 0x324F}, {0x3251, 0x325F}, {0x3280, 0x3289},
    {0x32B1, 0x32BF}, {0xFF10, 0xFF19},
};

// JavaScript's \s: WhiteSpace (tab, VT, FF, space, NBSP, ZWNBSP, category Zs) and LineTerminator.
constexpr Range kSpaces[] = {
    {0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
    {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF},
};

template <size_t N>
bool in_table(const Range (&table)[N], char32_t cp) {
    const Range* it = std::upper_bound(std::begin(table), std::end(table), cp,
                                       [](char32_t c, const Range& r) { return c < r.lo; });
    return it != std::begin(table) && cp <= (it - 1)->hi;
}

enum class Cls : uint8_t { kLetter, kNumber, kSpace, kOther };

struct Char {
    char32_t cp;
    uint32_t at, len;  // byte offset and length in the text
    Cls cls;
};

// Decodes one character at text[at]; a byte that does not start a well-formed sequence (a stray
// continuation, an overlong or out-of-range lead, a cut sequence, a surrogate) is one character of
// its own with code point U+FFFD, class kOther.
Char decode_at(std::string_view text, size_t at) {
    const auto b = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char c = b(at);
    size_t len = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    bool ok = len > 0 && at + len <= text.size();
    for (size_t k = 1; ok && k < len; ++k) {
        if ((b(at + k) & 0xC0) != 0x80) ok = false;
        cp = cp << 6 | (b(at + k) & 0x3F);
    }
    if (ok && len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ok = false;
    if (ok && len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ok = false;
    if (!ok) return {0xFFFD, static_cast<uint32_t>(at), 1, Cls::kOther};
    const Cls cls = gpt2_is_letter(cp)   ? Cls::kLetter
                    : gpt2_is_number(cp) ? Cls::kNumber
                    : gpt2_is_space(cp)  ? Cls::kSpace
                                         : Cls::kOther;
    return {cp, static_cast<uint32_t>(at), static_cast<uint32_t>(len), cls};
}

// Length in characters of the contraction 's 't 're 've 'm 'll 'd at chars[i], 0 if none.
size_t contraction_at(const std::vector<Char>& chars, size_t i) {
    if (chars[i].cp != U'\'' || i + 1 >= chars.size()) return 0;
    const char32_t a = chars[i + 1].cp, b = i + 2 < chars.size() ? chars[i + 2].cp : 0;
    if (a == U's' || a == U't' || a == U'm' || a == U'd') return 2;
    if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l')) return 3;
    return 0;
}

// Length in characters of the match at chars[i] (always at least 1).
size_t match_at(const std::vector<Char>& chars, size_t i) {
    const size_t n = chars.size();
    if (size_t c = contraction_at(chars, i)) return c;
    const auto run_of = [&](size_t from, Cls cls) {
        size_t j = from;
        while (j < n && chars[j].cls == cls) ++j;
        return j - from;
    };
    // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional U+0020, then a run of one class.
    const size_t lead = chars[i].cp == U' ' && i + 1 < n ? 1 : 0;
    for (Cls cls : {Cls::kLetter, Cls::kNumber, Cls::kOther}) {
        if (chars[i].cls == cls) return run_of(i, cls);
        if (lead && chars[i + 1].cls == cls) return 1 + run_of(i + 1, cls);
    }
    // `\s+(?!\S)`: a run of whitespace that ends the text, or the run less its last character when
    // something else follows (that character then leads the next piece); `\s+` when the run is one
    // character followed by something else.
    const size_t run = run_of(i, Cls::kSpace);
    if (i + run == n || run == 1) return run;
    return run - 1;
}

}  // namespace

bool gpt2_is_letter(char32_t cp) { return in_table(kLetters, cp); }
bool gpt2_is_number(char32_t cp) { return in_table(kNumbers, cp); }
bool gpt2_is_space(char32_t cp) { return in_table(kSpaces, cp); }

std::vector<std::string_view> gpt2_pretokenize(std::string_view text) {
    std::vector<Char> chars;
    for (size_t at = 0; at < text.size();) {
        chars.push_back(decode_at(text, at));
        at += chars.back().len;
    }
    std::vector<std::string_view> pieces;
    for (size_t i = 0; i < chars.size();) {
        const size_t k = match_at(chars, i);
        const size_t from = chars[i].at, to = i + k < chars.size() ? chars[i + k].at : text.size();
        pieces.push_back(text.substr(from, to - from));
        i += k;
    }
    return pieces;
}

}  // namespace tw
