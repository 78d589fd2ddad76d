// Data: Brown detagging, tokenizer round trip, shard format and its errors, split and loader.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "engine/data/corpus.h"
#include "engine/data/dataset.h"
#include "engine/data/loader.h"
#include "engine/data/shard.h"
#include "engine/data/tokenizer.h"

namespace tw {
namespace {
namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
    auto dir = fs::path(::testing::TempDir()) / "tw_data_tests";
    fs::create_directories(dir);
    return (dir / name).string();
}

TEST(Brown, DetaggingRestoresPlainTextWithQuotesAndPunctuation) {
    const std::string tagged =
        "\n\n\tThe/at jury/nn said/vbd ``/`` it's/pps+bez fine/jj ''/'' ,/, and/cc left/vbd ./.\n"
        "\n\n\tA/at second/od paragraph/nn (/( short/jj )/) ;/. ok/uh ?/.\n";
    EXPECT_EQ(detag_brown(tagged), "The jury said \"it's fine\", and left.\nA second paragraph (short); ok?\n");
}

TEST(Brown, ReadsGenreFromTheFileName) {
    auto dir = temp_path("brown");
    fs::create_directories(dir);
    for (const char* n : {"cb02", "ca01", "README", "cr09"}) std::ofstream(dir + "/" + n) << "Word/nn ./.\n";
    for (int i = 0; i < 20; ++i) std::ofstream(dir + "/cf" + std::to_string(10 + i)) << "x/nn\n";
    auto docs = read_brown(dir);
    ASSERT_TRUE(docs) << docs.message();
    ASSERT_EQ(docs->size(), 23u);  // README skipped
    EXPECT_EQ((*docs)[0].name, "ca01");
    EXPECT_EQ((*docs)[0].genre, 'a');
    EXPECT_EQ((*docs)[0].text, "Word.\n");
    EXPECT_EQ(docs->back().genre, 'r');
    EXPECT_FALSE(read_brown(temp_path("missing")));
}

std::vector<std::string> synthetic_texts() {
    std::vector<std::string> texts;
    const char* words[] = {"the", "cat", "sat", "on", "a", "mat", "while", "dogs", "barked", "loudly", "at", "night"};
    for (int d = 0; d < 40; ++d) {
        std::string t;
        for (int i = 0; i < 200; ++i) t += std::string(words[(i * 7 + d * 3) % 12]) + (i % 15 == 14 ? ".\n" : " ");
        texts.push_back(t);
    }
    return texts;
}

TEST(Tokenizer, TrainsAndRoundTripsText) {
    const auto path = temp_path("tok.model");
    Status trained = Tokenizer::train(synthetic_texts(), 60, path, 1);
    ASSERT_TRUE(trained.is_ok()) << trained.message();
    auto tok = Tokenizer::load(path);
    ASSERT_TRUE(tok) << tok.message();
    EXPECT_EQ(tok->vocab_size(), 60);
    const std::string text = "the cat sat on a mat while dogs barked loudly at night.";
    auto ids = tok->encode(text);
    EXPECT_LT(ids.size(), text.size() / 2);  // merges happened
    EXPECT_EQ(tok->decode(ids), text);
    EXPECT_FALSE(Tokenizer::load(temp_path("nope.model")));
    Status too_big = Tokenizer::train(synthetic_texts(), 5000, temp_path("big.model"), 1);
    EXPECT_NE(too_big.message().find("Vocabulary size too high (5000)"), std::string::npos) << too_big.message();
}

TEST(Shard, RoundTripsTokensInTheLlmcLayout) {
    const auto path = temp_path("a.bin");
    std::vector<uint16_t> tokens = {0, 1, 65535, 4095, 7};
    ASSERT_TRUE(write_shard(path, tokens).is_ok());
    EXPECT_EQ(fs::file_size(path), 256u * 4 + 2 * tokens.size());
    std::ifstream in(path, std::ios::binary);
    int32_t h[3];
    in.read(reinterpret_cast<char*>(h), sizeof h);
    EXPECT_EQ(h[0], 20240520);
    EXPECT_EQ(h[1], 1);
    EXPECT_EQ(h[2], 5);
    auto back = read_shard(path);
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(*back, tokens);
}

void write_raw(const std::string& path, std::vector<int32_t> header, size_t body_bytes) {
    header.resize(256, 0);
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(header.data()), 1024);
    std::string body(body_bytes, '\0');
    out.write(body.data(), static_cast<std::streamsize>(body.size()));
}

TEST(Shard, BadHeadersAreClearErrors) {
    const auto p = temp_path("bad.bin");
    write_raw(p, {12345, 1, 2}, 4);
    EXPECT_NE(read_shard(p).message().find("bad magic 12345"), std::string::npos);
    write_raw(p, {20240520, 2, 2}, 4);
    EXPECT_NE(read_shard(p).message().find("unsupported version 2"), std::string::npos);
    write_raw(p, {20240520, 1, 10}, 6);
    EXPECT_NE(read_shard(p).message().find("header says 10 tokens (20 bytes) but the body has 6 bytes (truncated)"),
              std::string::npos)
        << read_shard(p).message();
    std::ofstream(p, std::ios::binary) << "short";
    EXPECT_NE(read_shard(p).message().find("less than the 1024-byte header"), std::string::npos);
}

TEST(Split, HoldsOutEveryNthDocumentPerGenreDeterministically) {
    std::vector<char> genres = {'a', 'a', 'a', 'a', 'b', 'b', 'b', 'b', 'b', 'b', 'b', 'b'};
    auto v = split_documents(genres, 0.25);
    EXPECT_EQ(v, (std::vector<bool>{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}));
    EXPECT_EQ(split_documents(genres, 0.25), v);
}

std::shared_ptr<std::vector<uint16_t>> counting_stream(int n) {
    auto t = std::make_shared<std::vector<uint16_t>>(n);
    for (int i = 0; i < n; ++i) (*t)[i] = static_cast<uint16_t>(i);
    return t;
}

TEST(Loader, SameSeedSameBatchesAndBatchIsAFunctionOfStep) {
    auto t = counting_stream(5000);
    WindowLoader a(t, {{0, 5000}}, 16, 4, 42), b(t, {{0, 5000}}, 16, 4, 42), c(t, {{0, 5000}}, 16, 4, 43);
    auto a5 = a.batch(5);
    EXPECT_EQ(a5.sizes(), (std::vector<int64_t>{4, 17}));
    for (int s = 0; s < 5; ++s) (void)b.batch(s);
    EXPECT_TRUE(torch::equal(a5, b.batch(5)));           // after other calls
    EXPECT_TRUE(torch::equal(a.batch(400), b.batch(400)));  // later epochs too
    EXPECT_FALSE(torch::equal(a5, c.batch(5)));
    // Windows are contiguous runs of T+1 tokens.
    auto d = a5.select(0, 0);
    EXPECT_EQ((d.slice(0, 1) - d.slice(0, 0, 16)).min().item<int64_t>(), 1);
}

TEST(Loader, ReplicaStreamsAreDisjointAndCoverTheData) {
    auto t = counting_stream(6000);
    const int R = 3;
    std::vector<std::set<int64_t>> seen(R);
    for (int r = 0; r < R; ++r) {
        WindowLoader l(t, {{0, 6000}}, 16, 8, 1, r, R);
        for (int s = 0; s < 40; ++s) {
            auto b = l.batch(s);
            auto* p = b.data_ptr<int64_t>();
            for (int64_t i = 0; i < b.numel(); ++i) seen[r].insert(p[i]);
        }
        EXPECT_GE(*seen[r].begin(), r * 2000);
        EXPECT_LT(*seen[r].rbegin(), (r + 1) * 2000);
    }
    for (int r = 0; r < R; ++r)
        for (int q = r + 1; q < R; ++q)
            for (auto v : seen[r]) EXPECT_EQ(seen[q].count(v), 0u);
}

TEST(Loader, GenreFilterSelectsOnlyThoseDocuments) {
    PreparedData d;
    d.train = counting_stream(3000);
    d.val = counting_stream(10);
    d.docs = {{"ca01", 'a', false, 0, 1000}, {"cb01", 'b', false, 1000, 1000}, {"ca02", 'a', false, 2000, 1000}};
    auto spans = select_spans(d, false, {"b"});
    ASSERT_EQ(spans.size(), 1u);
    WindowLoader l(d.train, spans, 10, 4, 1);
    for (int s = 0; s < 30; ++s) {
        auto b = l.batch(s);
        EXPECT_GE(b.min().item<int64_t>(), 1000);
        EXPECT_LT(b.max().item<int64_t>(), 2000);
    }
}

TEST(Dataset, PlainTextFolderIsPreparedAndCached) {
    auto dir = temp_path("textcorpus");
    fs::remove_all(dir);
    fs::create_directories(dir);
    auto texts = synthetic_texts();
    for (size_t i = 0; i < texts.size(); ++i) std::ofstream(dir + "/doc" + std::to_string(100 + i) + ".txt") << texts[i];
    DataConfig c;
    c.corpus = dir;
    c.cache_dir = temp_path("cache");
    fs::remove_all(c.cache_dir);
    c.vocab_size = 60;
    auto d = prepare_data(c);
    ASSERT_TRUE(d) << d.message();
    EXPECT_EQ(d->vocab_size, 60);
    EXPECT_EQ(d->docs.size(), 40u);
    int n_val = 0;
    for (auto& s : d->docs) n_val += s.is_val;
    EXPECT_EQ(n_val, 4);
    auto again = prepare_data(c);  // from the cache
    ASSERT_TRUE(again) << again.message();
    EXPECT_EQ(*again->train, *d->train);
    EXPECT_LT(unigram_loss(*d->train, *d->val, 60), std::log(60.0));
}

}  // namespace
}  // namespace tw
