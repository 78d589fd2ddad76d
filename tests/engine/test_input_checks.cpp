// Bad inputs as named errors: corpus bytes that are not text, token streams too short for a window
// or a batch or with ids beyond the vocabulary, the window loader's split agreeing with the part
// check, shards and corpora read through prepare_data, and exceptions stopped at the node boundary.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "engine/data/corpus.h"
#include "engine/data/dataset.h"
#include "engine/data/loader.h"
#include "engine/data/shard.h"
#include "engine/data/stream_check.h"
#include "engine/data/text_check.h"
#include "engine/worker/guarded_worker.h"

namespace tw {
namespace {
namespace fs = std::filesystem;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string temp_dir(const std::string& name) {
    auto dir = fs::path(::testing::TempDir()) / "tw_input_checks" / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir.string();
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
}

TEST(TextCheck, PlainAndMultiByteUtf8AreText) {
    EXPECT_TRUE(check_text_bytes("a.txt", "The quick brown fox.\nA second line\ttabbed.\r\n"));
    EXPECT_TRUE(check_text_bytes("a.txt", "caf\xC3\xA9 na\xC3\xAFve \xE2\x80\x94 \xF0\x9F\x98\x80 end"));
    EXPECT_TRUE(check_text_bytes("a.txt", ""));
}

TEST(TextCheck, NulByteIsNamedWithFileAndOffset) {
    std::string bytes = "seventeen bytes!!";
    bytes += '\0';
    bytes += "more";
    const Status st = check_text_bytes("/x/a.dat", bytes);
    ASSERT_FALSE(st);
    EXPECT_TRUE(has(st.message(), "data.corpus /x/a.dat: not text: at byte 17, a NUL byte")) << st.message();
}

TEST(TextCheck, InvalidUtf8IsNamed) {
    const Status lead = check_text_bytes("b.bin", "abc\xFFxyz");
    ASSERT_FALSE(lead);
    EXPECT_TRUE(has(lead.message(), "at byte 3, byte 0xff, invalid in UTF-8")) << lead.message();
    const Status cont = check_text_bytes("c.bin", "ab\xC3" "A");
    ASSERT_FALSE(cont);
    EXPECT_TRUE(has(cont.message(), "at byte 2, byte 0xc3 starts a 2-byte UTF-8 character that byte 0x41 does not continue"))
        << cont.message();
    EXPECT_FALSE(check_text_bytes("d.bin", "a\x80"));  // a continuation byte cannot start a character
}

TEST(TextCheck, OnlyTheFirstBytesAreInspected) {
    // A character cut by the sniff window is fine; what lies beyond the window is not looked at.
    std::string bytes(kTextSniffBytes - 1, 'a');
    bytes += "\xC3\xA9";
    EXPECT_TRUE(check_text_bytes("e.txt", bytes));
    std::string late(kTextSniffBytes, 'a');
    late += '\0';
    EXPECT_TRUE(check_text_bytes("f.txt", late));
    std::string early(kTextSniffBytes - 1, 'a');
    early += '\0';
    EXPECT_FALSE(check_text_bytes("g.txt", early));
}

TEST(TextCheck, TrainingTextMustHoldAsManyBytesAsPieces) {
    const Status st = check_training_text("/x/tiny.txt", 100, 200);
    ASSERT_FALSE(st);
    EXPECT_TRUE(has(st.message(), "data.corpus /x/tiny.txt: 100 bytes of training text")) << st.message();
    EXPECT_TRUE(has(st.message(), "data.vocab_size 200")) << st.message();
    EXPECT_TRUE(check_training_text("/x/tiny.txt", 200, 200));
}

TEST(StreamCheck, TooFewTokensForAWindowNameTheSourceAndTheNeed) {
    const StreamNeeds needs{128, 4, 0};
    EXPECT_EQ(check_stream_size("data.train_shard /x/a.bin", 10, true, needs).message(),
              "data.train_shard /x/a.bin: 10 tokens, a training window needs 129 (model.seq_len + 1)");
    EXPECT_EQ(check_stream_size("data.val_shard /x/v.bin", 0, false, needs).message(),
              "data.val_shard /x/v.bin: 0 tokens (empty), a validation window needs 129 (model.seq_len + 1)");
    EXPECT_TRUE(check_stream_size("v", 129, false, needs));
}

TEST(StreamCheck, ATrainingStreamNeedsOneBatchOfDistinctWindows) {
    const StreamNeeds needs{128, 4, 0};
    const Status st = check_stream_size("data.train_shard /x/a.bin", 512, true, needs);
    ASSERT_FALSE(st);
    EXPECT_TRUE(has(st.message(), "512 tokens hold 3 training windows of model.seq_len 128, one batch needs 4 "
                                  "(train.batch_size): 513 tokens"))
        << st.message();
    EXPECT_TRUE(check_stream_size("t", 513, true, needs));
    EXPECT_TRUE(check_stream_size("v", 512, false, needs));  // validation batches may repeat windows
}

TEST(StreamCheck, TokenIdsMustBeBelowTheVocabulary) {
    std::vector<uint16_t> tokens = {0, 5, 199, 3, 9, 200, 7};
    const Status st = check_token_ids("data.train_shard /x/a.bin", tokens, {16, 1, 200});
    ASSERT_FALSE(st);
    EXPECT_TRUE(has(st.message(), "data.train_shard /x/a.bin: token id 200 at position 5 is not below model.vocab_size 200"))
        << st.message();
    EXPECT_TRUE(check_token_ids("t", tokens, {16, 1, 201}));
    EXPECT_TRUE(check_token_ids("t", tokens, {16, 1, 0}));  // vocabulary not known: not checked
}

TEST(StreamCheck, PartCheckAgreesWithTheWindowLoadersSplit) {
    // For each stream length and split, the check passes exactly when every part's loader has a window.
    auto tokens = std::make_shared<std::vector<uint16_t>>(200, 1);
    const int64_t T = 8;
    for (int64_t n : {0, 8, 9, 17, 18, 19, 26, 27, 28, 40, 100}) {
        for (int64_t parts : {1, 2, 3}) {
            for (int64_t part = 0; part < parts; ++part) {
                const bool ok = check_stream_part("s", n, part, parts, T).is_ok();
                bool loads = true;
                try {
                    WindowLoader l(tokens, {{0, n}}, T, 1, 1, part, parts);
                    loads = l.num_windows() > 0;
                } catch (const std::exception&) {
                    loads = false;
                }
                EXPECT_EQ(ok, loads) << "n " << n << " part " << part << " of " << parts;
            }
        }
    }
    const Status st = check_stream_part("data.train_shard /x/a.bin", 40, 1, 2, 32);
    EXPECT_TRUE(has(st.message(), "part 1 of 2 gets 20 of its 40 tokens, a training window needs 33")) << st.message();
}

TEST(StreamCheck, RunDataNamesTheKeyAndFileOfTheShortStream) {
    RunConfig cfg;
    cfg.model.seq_len = 16;
    cfg.model.vocab_size = 50;
    cfg.train.batch_size = 2;
    cfg.data.train_shard = "/x/train.bin";
    cfg.data.val_shard = "/x/val.bin";
    PreparedData d;
    d.train = std::make_shared<std::vector<uint16_t>>(10, 3);
    d.val = std::make_shared<std::vector<uint16_t>>(100, 3);
    EXPECT_EQ(check_run_data(cfg, d).message(),
              "data.train_shard /x/train.bin: 10 tokens, a training window needs 17 (model.seq_len + 1)");
    d.train = std::make_shared<std::vector<uint16_t>>(33, 3);
    EXPECT_TRUE(check_run_data(cfg, d));
    d.val = std::make_shared<std::vector<uint16_t>>(16, 3);
    EXPECT_TRUE(has(check_run_data(cfg, d).message(), "data.val_shard /x/val.bin: 16 tokens")) << check_run_data(cfg, d).message();
    d.val = std::make_shared<std::vector<uint16_t>>(17, 60);
    EXPECT_TRUE(has(check_run_data(cfg, d).message(), "data.val_shard /x/val.bin: token id 60 at position 0"));

    // A corpus's split: named by the corpus and its cache file; the selected genres count, not the whole stream.
    RunConfig c2;
    c2.model.seq_len = 4;
    c2.train.batch_size = 1;
    c2.data.corpus = "/x/texts";
    c2.data.genres = {"k"};
    PreparedData p;
    p.dir = "/c/data/text-1";
    p.vocab_size = 10;
    p.train = std::make_shared<std::vector<uint16_t>>(100, 2);
    p.val = std::make_shared<std::vector<uint16_t>>(100, 2);
    p.docs = {{"a", 'a', false, 0, 96}, {"k", 'k', false, 96, 4}, {"av", 'a', true, 0, 50}, {"kv", 'k', true, 50, 50}};
    EXPECT_EQ(check_run_data(c2, p).message(),
              "data.corpus /x/texts: its training split of genres k (/c/data/text-1/train.bin): 4 tokens, a training "
              "window needs 5 (model.seq_len + 1)");
    c2.model.vocab_size = 8;
    EXPECT_EQ(check_run_data(c2, p).message(), "model.vocab_size 8 is smaller than the data's 10");
}

TEST(CorpusRead, BinaryFilesAndEmptyInputsAreNamed) {
    const std::string dir = temp_dir("corpus");
    write_file(dir + "/random.dat", std::string("PK\x03\x04\x14\0\0\0", 8) + "zip-ish");
    auto bin = read_text_corpus(dir + "/random.dat");
    ASSERT_FALSE(bin);
    EXPECT_TRUE(has(bin.message(), "data.corpus " + dir + "/random.dat: not text: at byte 5, a NUL byte")) << bin.message();

    fs::create_directories(dir + "/mixed/sub");
    write_file(dir + "/mixed/a.txt", "Plain text, as it should be.\n");
    write_file(dir + "/mixed/sub/b.png", std::string("\x89PNG\r\n\x1a\n", 8));
    auto mixed = read_text_corpus(dir + "/mixed");
    ASSERT_FALSE(mixed);
    EXPECT_TRUE(has(mixed.message(), "data.corpus " + dir + "/mixed/sub/b.png: not text: at byte 0, byte 0x89"))
        << mixed.message();

    fs::create_directories(dir + "/empty-folder");
    EXPECT_TRUE(has(read_text_corpus(dir + "/empty-folder").message(), "the folder holds no files"));
    fs::create_directories(dir + "/blank-files");
    write_file(dir + "/blank-files/a.txt", "");
    EXPECT_TRUE(has(read_text_corpus(dir + "/blank-files").message(), "the folder's 1 files are all empty"));
    write_file(dir + "/empty.txt", "");
    EXPECT_TRUE(has(read_text_corpus(dir + "/empty.txt").message(), "data.corpus " + dir + "/empty.txt: the file is empty"));
    EXPECT_TRUE(has(read_text_corpus(dir + "/nothing-here").message(), "data.corpus " + dir + "/nothing-here: no such file or folder"));
    auto ok = read_text_corpus(dir + "/mixed/a.txt");
    ASSERT_TRUE(ok) << ok.message();
}

TEST(PrepareData, TextTooShortForTheTokenizerIsNamedBeforeTraining) {
    const std::string dir = temp_dir("short");
    write_file(dir + "/tiny.txt", "Too short.\n");
    DataConfig c;
    c.corpus = dir + "/tiny.txt";
    c.cache_dir = dir + "/cache";
    c.vocab_size = 200;
    auto d = prepare_data(c);
    ASSERT_FALSE(d);
    EXPECT_TRUE(has(d.message(), "data.corpus " + dir + "/tiny.txt: 11 bytes of training text")) << d.message();
}

TEST(PrepareData, UserShardErrorsNameTheKeyAndFile) {
    const std::string dir = temp_dir("shards");
    ASSERT_TRUE(write_shard(dir + "/ok.bin", std::vector<uint16_t>(100, 1)));
    write_file(dir + "/short.bin", std::string(10, 'x'));
    DataConfig c;
    c.train_shard = dir + "/missing.bin";
    c.val_shard = dir + "/ok.bin";
    EXPECT_EQ(prepare_data(c).message(), "data.train_shard: shard " + dir + "/missing.bin: no such file");
    c.train_shard = dir;
    EXPECT_EQ(prepare_data(c).message(), "data.train_shard: shard " + dir + ": is a folder, not a .bin file");
    c.train_shard = dir + "/ok.bin";
    c.val_shard = dir + "/short.bin";
    EXPECT_TRUE(has(prepare_data(c).message(), "data.val_shard: shard " + dir + "/short.bin: file has 10 bytes, less than"))
        << prepare_data(c).message();
}

struct NullSink : MetricSink {
    void metrics(std::vector<MetricRecord>) override {}
    void event(EventRecord) override {}
};

template <class F>
struct ThrowingWorker : Worker {
    explicit ThrowingWorker(F f) : f(std::move(f)) {}
    Result<WorkerSummary> run(WorkerControl&, MetricSink&) override {
        f();
        return WorkerSummary{};
    }
    F f;
};

template <class F>
Result<WorkerSummary> run_guarded(F f) {
    WorkerControl ctl;
    NullSink sink;
    return guard_worker(std::make_unique<ThrowingWorker<F>>(std::move(f)))->run(ctl, sink);
}

TEST(GuardedWorker, LibTorchErrorsLoseTheirBacktrace) {
    auto r = run_guarded([] { TORCH_CHECK(false, "data: replica 0 gets 10 tokens"); });
    ASSERT_FALSE(r);
    EXPECT_EQ(r.message(), "worker: data: replica 0 gets 10 tokens");
    // The same error through a real LibTorch call: an out-of-range embedding index.
    auto idx = run_guarded([] { (void)torch::embedding(torch::zeros({4, 2}), torch::tensor({7}, torch::kLong)); });
    ASSERT_FALSE(idx);
    EXPECT_FALSE(has(idx.message(), "frame #")) << idx.message();
    EXPECT_FALSE(has(idx.message(), "Exception raised from")) << idx.message();
}

TEST(GuardedWorker, AnyExceptionBecomesAnError) {
    EXPECT_EQ(run_guarded([] { throw std::runtime_error("std says no"); }).message(), "worker: std says no");
    EXPECT_EQ(run_guarded([] { throw 42; }).message(), "worker: an exception that is not a std::exception");
    EXPECT_TRUE(run_guarded([] {}));
}

TEST(GuardedWorker, FactoriesAndPreparersReturnTheirExceptionsAsErrors) {
    WorkerFactory f = guard_worker_factory([](const RunConfig&, const NodeRole&, const NodeSite&) -> Result<std::unique_ptr<Worker>> {
        throw std::runtime_error("cannot bind");
    });
    EXPECT_EQ(f(RunConfig{}, NodeRole{}, NodeSite{}).message(), "cannot bind");
    DataPreparer p = guard_data_preparer([](const RunConfig&, const NodeSite&) -> Result<DataReport> {
        TORCH_CHECK(false, "bad tensor");
    });
    EXPECT_EQ(p(RunConfig{}, NodeSite{}).message(), "bad tensor");
}

}  // namespace
}  // namespace tw
