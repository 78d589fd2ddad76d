// Data: Brown detagging, tokenizer round trip, shard format and its errors, split and loader,
// the data fingerprint nodes compare before a run.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "engine/data/corpus.h"
#include "core/hash.h"
#include "engine/data/dataset.h"
#include "engine/data/loader.h"
#include "engine/data/shard.h"
#include "engine/data/sentencepiece_tokenizer.h"

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
    Status trained = SentencePieceTokenizer::train(synthetic_texts(), 60, path, 1);
    ASSERT_TRUE(trained.is_ok()) << trained.message();
    auto tok = SentencePieceTokenizer::load(path);
    ASSERT_TRUE(tok) << tok.message();
    EXPECT_EQ((*tok)->vocab_size(), 60);
    const std::string text = "the cat sat on a mat while dogs barked loudly at night.";
    auto ids = (*tok)->encode(text);
    EXPECT_LT(ids.size(), text.size() / 2);  // merges happened
    EXPECT_EQ((*tok)->decode(ids), text);
    EXPECT_FALSE(SentencePieceTokenizer::load(temp_path("nope.model")));
    Status too_big = SentencePieceTokenizer::train(synthetic_texts(), 5000, temp_path("big.model"), 1);
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

// The baseline of a genre-filtered run counts only its genres' documents. Vocabulary 3; train
// documents: genre a = [0 0], genre b = [1 1 2 2]; validation: a = [0], b = [2]. With genres {a}:
// counts (add-one) 0:3, 1:1, 2:1 of 5, scored on [0] -> -log(3/5). Every document: 0:3, 1:3, 2:3 of 9,
// scored on [0 2] -> -log(3/9).
TEST(Unigram, AGenreFilteredRunScoresItsOwnDocuments) {
    PreparedData d;
    d.vocab_size = 3;
    d.train = std::make_shared<const std::vector<uint16_t>>(std::vector<uint16_t>{0, 0, 1, 1, 2, 2});
    d.val = std::make_shared<const std::vector<uint16_t>>(std::vector<uint16_t>{0, 2});
    d.docs = {{"a1", 'a', false, 0, 2}, {"b1", 'b', false, 2, 4}, {"a2", 'a', true, 0, 1}, {"b2", 'b', true, 1, 1}};
    EXPECT_NEAR(unigram_loss_of(d, {"a"}, 3), -std::log(3.0 / 5.0), 1e-12);
    EXPECT_NEAR(unigram_loss_of(d, {}, 3), -std::log(3.0 / 9.0), 1e-12);
    EXPECT_DOUBLE_EQ(unigram_loss_of(d, {}, 3), unigram_loss(*d.train, *d.val, 3));
}

// A protobuf length-delimited field: tag (field << 3 | 2), one-byte length, bytes.
std::string pb_field(int field, const std::string& bytes) {
    return std::string(1, static_cast<char>(field << 3 | 2)) + static_cast<char>(bytes.size()) + bytes;
}
void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(Fingerprint, TokenizerHashLeavesOutOnlyTheTrainingRecord) {
    const auto model = temp_path("fields.model");
    // pieces (1), trainer_spec (2, the machine's paths), normalizer_spec (3), a varint field (6).
    const std::string piece = pb_field(1, "ab"), norm = pb_field(3, "cd"), flag = "\x30\x01";
    write_file(model, piece + pb_field(2, "/home/a/cache") + norm + flag);
    auto h = SentencePieceTokenizer::model_hash(model);
    ASSERT_TRUE(h) << h.message();
    EXPECT_EQ(*h, seeded_hash64(piece + norm + flag));
    EXPECT_EQ(*h, 0x72d1b10155b31cf4ull);  // seeded_hash64 (core/hash.h) of 0a 02 61 62 1a 02 63 64 30 01
    write_file(model, piece + pb_field(2, "/srv/b/data/cache") + norm + flag);
    EXPECT_EQ(SentencePieceTokenizer::model_hash(model).value(), *h);  // another machine's paths: same model
    write_file(model, pb_field(1, "ac") + pb_field(2, "/home/a/cache") + norm + flag);
    EXPECT_NE(SentencePieceTokenizer::model_hash(model).value(), *h);  // another piece: another model
    write_file(model, piece + "\x12\x7f");               // a length past the end
    EXPECT_NE(SentencePieceTokenizer::model_hash(model).message().find("is not a SentencePiece model"), std::string::npos);
    EXPECT_NE(SentencePieceTokenizer::model_hash(temp_path("no-such.model")).message().find("no-such.model"), std::string::npos);

    // Real models trained on the same texts in two folders differ as files (each records its own
    // paths) and hash the same.
    const auto a = temp_path("fp-a/tok.model"), b = temp_path("fp-bb/tok.model");
    fs::create_directories(fs::path(a).parent_path());
    fs::create_directories(fs::path(b).parent_path());
    ASSERT_TRUE(SentencePieceTokenizer::train(synthetic_texts(), 60, a, 1));
    ASSERT_TRUE(SentencePieceTokenizer::train(synthetic_texts(), 60, b, 1));
    std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
    const std::string ba{std::istreambuf_iterator<char>(fa), {}}, bb{std::istreambuf_iterator<char>(fb), {}};
    EXPECT_NE(ba, bb);
    auto ha = SentencePieceTokenizer::model_hash(a), hb = SentencePieceTokenizer::model_hash(b);
    ASSERT_TRUE(ha && hb);
    EXPECT_EQ(*ha, *hb);
    EXPECT_NE(*ha, seeded_hash64(ba));
}

PreparedData data_of(std::vector<uint16_t> train, std::vector<uint16_t> val, const std::string& tokenizer_path) {
    PreparedData d;
    if (!tokenizer_path.empty()) {
        d.tokenizer_kind = "bpe";
        d.tokenizer_files = {tokenizer_path};
    }
    d.train = std::make_shared<std::vector<uint16_t>>(std::move(train));
    d.val = std::make_shared<std::vector<uint16_t>>(std::move(val));
    return d;
}

TEST(Fingerprint, HashesTheTokenizerAndBothStreams) {
    // seeded_hash64 (core/hash.h) of the bytes 01 00 02 01: tokens 1 and 258, little-endian.
    EXPECT_EQ(token_stream_hash({1, 258}), 0x9152cf983066b003ull);
    EXPECT_EQ(token_stream_hash({}), kHashSeed);
    const auto model = temp_path("fingerprint.model");
    write_file(model, pb_field(1, "ab"));
    auto a = data_fingerprint(data_of({1, 258, 7}, {7}, model));
    ASSERT_TRUE(a) << a.message();
    ASSERT_TRUE(a->tokenizer.has_value());
    EXPECT_EQ(*a->tokenizer, SentencePieceTokenizer::model_hash(model).value());
    EXPECT_EQ(a->val, 0x9a6c7900c54b9c24ull);  // of 07 00
    EXPECT_EQ(a->train, token_stream_hash({1, 258, 7}));
    // Same data, same fingerprint; one train token changed: only the train hash moves.
    auto same = data_fingerprint(data_of({1, 258, 7}, {7}, model));
    ASSERT_TRUE(same);
    EXPECT_EQ(*same, *a);
    auto changed = data_fingerprint(data_of({1, 259, 7}, {7}, model));
    ASSERT_TRUE(changed);
    EXPECT_NE(changed->train, a->train);
    EXPECT_EQ(changed->tokenizer, a->tokenizer);
    EXPECT_EQ(changed->val, a->val);
    EXPECT_EQ(fingerprint_difference(*changed, *a, "here", "there"),
              "train shard " + to_wire(*changed).substr(17, 16) + " here, " + to_wire(*a).substr(17, 16) + " there");
    // A token's two bytes are not interchangeable: 258 = 02 01 is not 513 = 01 02.
    EXPECT_NE(token_stream_hash({258}), token_stream_hash({513}));
    // Another tokenizer model: only the tokenizer hash moves.
    write_file(model, pb_field(1, "ac"));
    auto other = data_fingerprint(data_of({1, 258, 7}, {7}, model));
    ASSERT_TRUE(other);
    EXPECT_NE(other->tokenizer, a->tokenizer);
    EXPECT_EQ(other->train, a->train);
    // User shards have no tokenizer; an unreadable model is an error naming it.
    auto shards = data_fingerprint(data_of({1, 258}, {}, ""));
    ASSERT_TRUE(shards);
    EXPECT_FALSE(shards->tokenizer.has_value());
    auto missing = data_fingerprint(data_of({1}, {1}, temp_path("no-such.model")));
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.message().find("no-such.model"), std::string::npos) << missing.message();
}

TEST(Fingerprint, TextAndWireFormsAndTheNodeCheck) {
    DataFingerprint f;
    f.tokenizer = 0x0123456789abcdefull;
    f.train = 0xfedcba9876543210ull;
    f.val = 0xdeadbeefull;
    EXPECT_EQ(to_text(f), "tokenizer 0123456789abcdef, train fedcba9876543210, val 00000000deadbeef");
    EXPECT_EQ(to_wire(f), "0123456789abcdef:fedcba9876543210:00000000deadbeef");
    auto back = parse_data_fingerprint(to_wire(f));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(*back, f);
    DataFingerprint none = f;
    none.tokenizer.reset();
    EXPECT_EQ(to_wire(none), "none:fedcba9876543210:00000000deadbeef");
    back = parse_data_fingerprint(to_wire(none));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(*back, none);
    for (const char* bad : {"", "none", "none:fedcba9876543210", "none:fedcba9876543210:00000000deadbeef:",
                            "NONE:fedcba9876543210:00000000deadbeef", "none:fedcba987654321:00000000deadbeef0",
                            "none:FEDCBA9876543210:00000000deadbeef", "none:fedcba9876543210:00000000deadbeeg"})
        EXPECT_FALSE(parse_data_fingerprint(bad)) << bad;

    EXPECT_TRUE(check_data_fingerprint(f, ""));  // no reference: no check
    EXPECT_TRUE(check_data_fingerprint(f, to_wire(f)));
    DataFingerprint other = f;
    other.val = 1;
    const Status st = check_data_fingerprint(other, to_wire(f));
    ASSERT_FALSE(st);
    EXPECT_EQ(st.message(),
              "its data differ from the coordinator's: val shard 0000000000000001 here, 00000000deadbeef at the "
              "coordinator (same corpus, tokenizer and data settings on every machine?)");
    EXPECT_NE(check_data_fingerprint(none, to_wire(f)).message().find("tokenizer none here, 0123456789abcdef at the"),
              std::string::npos);
    EXPECT_NE(check_data_fingerprint(f, "garbage").message().find("the coordinator's data fingerprint"),
              std::string::npos);
}

}  // namespace
}  // namespace tw
