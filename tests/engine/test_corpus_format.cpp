// Corpus formats: what "auto" chooses and why, one document per line, JSON Lines and its errors,
// the refusal of Parquet/Arrow/shards, the clear error of a corpus with no validation document,
// the data fingerprint's reading settings, and the data warnings.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/config.h"
#include "engine/data/corpus.h"
#include "engine/data/corpus_format.h"
#include "engine/data/data_warnings.h"
#include "engine/data/dataset.h"
#include "engine/data/tokenizer.h"

namespace tw {
namespace {
namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
    auto dir = fs::path(::testing::TempDir()) / "tw_format_tests";
    fs::create_directories(dir);
    return (dir / name).string();
}

std::string write_file(const std::string& name, const std::string& bytes) {
    const auto path = temp_path(name);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    return path;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// `n` lines "line K: ..." with no blank line between them.
std::string numbered_lines(int n, const std::string& extra = "") {
    std::string s;
    for (int k = 1; k <= n; ++k)
        s += "line " + std::to_string(k) + ": the cat sat on the mat while " + std::to_string(k % 7) + " dogs barked" + extra + "\n";
    return s;
}

TEST(CorpusFormat, AutoChoosesByNameFirstLineAndBlankLinesAndAnExplicitSettingWins) {
    const std::string lines12 = numbered_lines(12);
    FormatChoice c = choose_format("/d/a.txt", lines12, "auto", true);
    EXPECT_EQ(c.format, CorpusFormat::kLines);
    EXPECT_EQ(c.why, "its 12 lines hold no blank line");
    EXPECT_EQ(choose_format("/d/a.txt", numbered_lines(9), "auto", true).why, "it has fewer than 10 lines");
    EXPECT_EQ(choose_format("/d/a.txt", "para one\n\npara two\n" + lines12, "auto", true).format, CorpusFormat::kText);
    // In a folder every text file is one document, whatever its lines.
    EXPECT_EQ(choose_format("/d/a.txt", lines12, "auto", false).format, CorpusFormat::kText);
    c = choose_format("/d/a.JSONL", "whatever", "auto", true);
    EXPECT_EQ(c.format, CorpusFormat::kJsonl);
    EXPECT_EQ(c.why, "its name ends in .jsonl");
    c = choose_format("/d/a.txt", "\n  {\"text\": \"x\"}\n", "auto", false);
    EXPECT_EQ(c.format, CorpusFormat::kJsonl);
    EXPECT_EQ(c.why, "its first line is a JSON object");
    EXPECT_EQ(choose_format("/d/a.txt", "{not json}\n", "auto", true).format, CorpusFormat::kText);
    EXPECT_EQ(choose_format("/d/a.jsonl", lines12, "text", true).format, CorpusFormat::kText);
    EXPECT_EQ(choose_format("/d/a.txt", "a\n\nb\n", "lines", true).format, CorpusFormat::kLines);
    EXPECT_EQ(choose_format("/d/a.txt", "a\n", "jsonl", true).why, "data.format = \"jsonl\"");
}

TEST(CorpusFormat, OneDocumentPerLineFileIsReadLineByLineAndSaysSo) {
    std::string crlf;  // Windows line endings: the "\r" is no part of a document
    for (char ch : numbered_lines(12)) crlf += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
    const auto path = write_file("per-line.txt", crlf);
    std::string reading;
    auto docs = read_text_corpus(path, {"auto", "text"}, &reading);
    ASSERT_TRUE(docs) << docs.message();
    ASSERT_EQ(docs->size(), 12u);
    EXPECT_EQ((*docs)[0].name, path + ":1");
    EXPECT_EQ((*docs)[11].text, "line 12: the cat sat on the mat while 5 dogs barked\n");
    EXPECT_EQ(reading, "data.corpus " + path +
                           ": read as one document per line (data.format \"auto\": its 12 lines hold no blank line), "
                           "12 documents");
    // The same file as text is one document.
    auto text = read_text_corpus(path, {"text", "text"}, &reading);
    ASSERT_TRUE(text) << text.message();
    EXPECT_EQ(text->size(), 1u);
}

TEST(CorpusFormat, JsonLinesTakeTheTextFieldAndDecodeEscapes) {
    const std::string jsonl =
        "{\"id\": 1, \"text\": \"first\\ndoc \\u00e9\", \"body\": \"B1\"}\n"
        "\n"
        "{\"text\": \"\", \"body\": \"B2\"}\n"
        "{\"text\": \"third \\\"quoted\\\"\", \"body\": \"B3\"}\n";
    auto docs = read_jsonl("/d/c.jsonl", jsonl, "text");
    ASSERT_TRUE(docs) << docs.message();
    ASSERT_EQ(docs->size(), 2u);  // the blank line and the empty text are skipped
    EXPECT_EQ((*docs)[0].line, 1u);
    EXPECT_EQ((*docs)[0].text, "first\ndoc \xc3\xa9");
    EXPECT_EQ((*docs)[1].line, 4u);
    EXPECT_EQ((*docs)[1].text, "third \"quoted\"");
    auto bodies = read_jsonl("/d/c.jsonl", jsonl, "body");
    ASSERT_TRUE(bodies) << bodies.message();
    EXPECT_EQ(bodies->size(), 3u);

    // Through read_text_corpus: documents named FILE:LINE.
    const auto path = write_file("c.jsonl", jsonl);
    std::string reading;
    auto read = read_text_corpus(path, {"auto", "body"}, &reading);
    ASSERT_TRUE(read) << read.message();
    ASSERT_EQ(read->size(), 3u);
    EXPECT_EQ((*read)[2].name, path + ":4");
    EXPECT_EQ((*read)[2].text, "B3");
    EXPECT_TRUE(has(reading, "read as JSON Lines (data.format \"auto\": its name ends in .jsonl), 3 documents")) << reading;
}

TEST(CorpusFormat, BadJsonLinesNameTheFileAndTheLine) {
    const std::string good = "{\"text\": \"ok\"}\n";
    auto err = [](const std::string& bytes, const std::string& field = "text") {
        auto r = read_jsonl("/d/c.jsonl", bytes, field);
        return r ? std::string("read") : r.message();
    };
    std::string e = err(good + good + "{\"text\": \"unterminated}\n");
    EXPECT_TRUE(has(e, "data.corpus /d/c.jsonl:3: not valid JSON (")) << e;
    EXPECT_TRUE(has(e, "parse error")) << e;
    e = err(good + "[1, 2]\n");
    EXPECT_TRUE(has(e, "data.corpus /d/c.jsonl:2: an array, not an object")) << e;
    e = err(good + "{\"id\": 3, \"body\": \"x\"}\n");
    EXPECT_TRUE(has(e, "data.corpus /d/c.jsonl:2: no \"text\" field (data.text_field; its fields: body, id)")) << e;
    e = err("{\"text\": 42}\n");
    EXPECT_TRUE(has(e, "data.corpus /d/c.jsonl:1: field \"text\" is a number, not a string")) << e;
    e = err("{\"text\": \"\xff\"}\n");  // not UTF-8 inside a string
    EXPECT_TRUE(has(e, "data.corpus /d/c.jsonl:1: not valid JSON")) << e;
    // Deep nesting is an error, not a crash.
    e = err(std::string(100000, '[') + "\n");
    EXPECT_TRUE(has(e, "data.corpus /d/c.jsonl:1: not valid JSON")) << e;
    EXPECT_EQ(err(good + "{\"text\": \"x\", \"t\": [[[[{}]]]]}\n"), "read");
}

TEST(CorpusFormat, ParquetArrowAndShardsAreRefusedWithHowToConvert) {
    Status st = refuse_binary_format("/d/a.parquet", "PAR1\x15\x04");
    ASSERT_FALSE(st);
    EXPECT_TRUE(has(st.message(), "data.corpus /d/a.parquet: a Parquet file")) << st.message();
    EXPECT_TRUE(has(st.message(), "pd.read_parquet('/d/a.parquet').to_json('/d/a.parquet.jsonl', orient='records', "
                                  "lines=True")) << st.message();
    st = refuse_binary_format("/d/data.bin", std::string("PAR1", 4));  // by its bytes, whatever its name
    EXPECT_TRUE(has(st.message(), "a Parquet file")) << st.message();
    st = refuse_binary_format("/d/a.dat", std::string("ARROW1\0\0", 8));
    EXPECT_TRUE(has(st.message(), "an Arrow/Feather file")) << st.message();
    EXPECT_TRUE(has(st.message(), "pd.read_feather")) << st.message();
    const char shard[] = {'\x88', '\xd8', '\x34', '\x01'};  // 20240520 = 0x0134d888, little-endian
    st = refuse_binary_format("/d/train.bin", std::string(shard, 4));
    EXPECT_TRUE(has(st.message(), "an llm.c token shard, not text: give it as data.train_shard")) << st.message();
    EXPECT_TRUE(refuse_binary_format("/d/a.txt", "plain text"));

    // In a folder, the file is named.
    const auto dir = temp_path("with-parquet");
    fs::create_directories(dir);
    std::ofstream(dir + "/a.txt") << "some text\n";
    std::ofstream(dir + "/b.parquet") << "PAR1xxxx";
    auto r = read_text_corpus(dir, {"auto", "text"});
    ASSERT_FALSE(r);
    EXPECT_TRUE(has(r.message(), "data.corpus " + dir + "/b.parquet: a Parquet file")) << r.message();
}

DataConfig config_for(const std::string& corpus, const std::string& format, const std::string& field) {
    DataConfig c;
    c.corpus = corpus;
    c.cache_dir = temp_path("cache");
    c.vocab_size = 60;
    c.format = format;
    c.text_field = field;
    return c;
}

TEST(CorpusFormat, ACorpusWithoutAValidationDocumentSaysHowItWasRead) {
    // Three paragraphs of text: three documents at most, no tenth to hold out.
    const auto path = write_file("short.txt", "The first paragraph has a few words.\n\nThe second one has a few more "
                                              "words.\n\nThe third is the last.\n");
    auto d = prepare_data(config_for(path, "auto", "text"));
    ASSERT_FALSE(d);
    EXPECT_TRUE(has(d.message(), "data.corpus " + path + ": 1 document, none held out for validation (every 10th "
                                 "document is, data.val_fraction 0.1); read as text")) << d.message();
    EXPECT_TRUE(has(d.message(), "read as text, documents cut at blank lines (data.format \"auto\": blank lines separate "
                                 "its paragraphs)")) << d.message();
    EXPECT_TRUE(has(d.message(), "data.format = \"lines\"")) << d.message();
}

TEST(CorpusFormat, PreparedLinesAndJsonlCorporaAndTheFingerprintCoversTheReadingSettings) {
    std::string lines, jsonl;
    const std::string body = numbered_lines(40, " and then it rained");
    for (size_t at = 0, k = 0; at < body.size(); ++k) {
        const size_t end = body.find('\n', at);
        const std::string line = body.substr(at, end - at);
        lines += line + "\n";
        jsonl += "{\"text\": \"" + line + "\\n\", \"copy\": \"" + line + "\\n\"}\n";
        at = end + 1;
    }
    const auto lines_path = write_file("forty.txt", lines), jsonl_path = write_file("forty.jsonl", jsonl);
    fs::remove_all(temp_path("cache"));
    std::vector<std::string> log;
    auto a = prepare_data(config_for(lines_path, "auto", "text"), [&](const std::string& s) { log.push_back(s); });
    ASSERT_TRUE(a) << a.message();
    EXPECT_EQ(a->docs.size(), 40u);
    EXPECT_EQ(a->tokenizer_kind, "bpe");
    ASSERT_EQ(a->tokenizer_files.size(), 1u);
    EXPECT_EQ(a->tokenizer_files[0], a->dir + "/tokenizer.model");
    EXPECT_EQ(a->tokenizer->files(), a->tokenizer_files);
    EXPECT_NE(std::find(log.begin(), log.end(), a->reading_note), log.end());
    EXPECT_TRUE(has(a->reading_note, "read as one document per line")) << a->reading_note;
    // From the cache: the same note is said again.
    log.clear();
    auto cached = prepare_data(config_for(lines_path, "auto", "text"), [&](const std::string& s) { log.push_back(s); });
    ASSERT_TRUE(cached) << cached.message();
    EXPECT_EQ(log, std::vector<std::string>{a->reading_note});

    // The same documents as JSONL, through either field: the same tokens; the fingerprints differ
    // by their reading settings only.
    auto j1 = prepare_data(config_for(jsonl_path, "auto", "text"));
    auto j2 = prepare_data(config_for(jsonl_path, "auto", "copy"));
    auto l2 = prepare_data(config_for(lines_path, "lines", "text"));
    ASSERT_TRUE(j1 && j2 && l2) << j1.message() << j2.message() << l2.message();
    EXPECT_NE(j1->dir, j2->dir);
    EXPECT_EQ(*j1->train, *a->train);
    EXPECT_EQ(*j2->train, *a->train);
    EXPECT_EQ(*l2->train, *a->train);
    auto fa = data_fingerprint(*a), f1 = data_fingerprint(*j1), f2 = data_fingerprint(*j2), fl = data_fingerprint(*l2);
    ASSERT_TRUE(fa && f1 && f2 && fl);
    EXPECT_EQ(f1->train, f2->train);
    EXPECT_NE(f1->tokenizer, f2->tokenizer);
    EXPECT_NE(fa->tokenizer, fl->tokenizer);
    EXPECT_EQ(fa->train, fl->train);

    // A bad line of a JSONL corpus fails the preparation naming the file and the line.
    const auto bad = write_file("bad.jsonl", jsonl + "{\"text\": 7}\n");
    auto b = prepare_data(config_for(bad, "auto", "text"));
    ASSERT_FALSE(b);
    EXPECT_TRUE(has(b.message(), "data.corpus " + bad + ":41: field \"text\" is a number")) << b.message();
}

TEST(DataWarnings, SmallTokenizerCorpusAndManyEpochsAreNamedWithTheirFigures) {
    PreparedData d;
    d.tokenizer_kind = "bpe";
    d.vocab_size = 100;
    d.train = std::make_shared<std::vector<uint16_t>>(1999, 5);
    d.val = std::make_shared<std::vector<uint16_t>>(10, 5);
    RunConfig run;
    run.train.steps = 1;
    run.train.batch_size = 4;
    run.model.seq_len = 100;  // 400 tokens: 0.2 epochs
    auto w = data_warnings(run, d);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].rfind("warning: the BPE tokenizer of 100 pieces was trained on 1999 tokens, fewer than 20 x its "
                         "vocabulary (2000)", 0), 0u) << w[0];
    d.train = std::make_shared<std::vector<uint16_t>>(2000, 5);
    EXPECT_TRUE(data_warnings(run, d).empty());
    run.train.steps = 21;  // 8400 tokens over 2000: 4.2 epochs
    w = data_warnings(run, d);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_TRUE(has(w[0], "the budget of 0.0084M tokens (21 steps) is 4.2 epochs over the 2000 training tokens, more than 4"))
        << w[0];
    run.train.steps = 20;  // exactly 4 epochs: no warning
    EXPECT_TRUE(data_warnings(run, d).empty());
    d.tokenizer_kind = "gpt2";  // a fixed tokenizer is not trained on the corpus
    d.train = std::make_shared<std::vector<uint16_t>>(10, 5);
    run.train.steps = 0;
    EXPECT_TRUE(data_warnings(run, d).empty());
}

}  // namespace
}  // namespace tw
