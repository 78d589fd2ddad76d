// SentencePiece wrapper; the library's headers stay out of sentencepiece_tokenizer.h.
#include "engine/data/sentencepiece_tokenizer.h"

#include <filesystem>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string_view>

#include "core/hash.h"

namespace tw {
namespace {

// The SentencePiece shim (spm_shim.cpp), loaded once; see that file for why it is not linked.
struct Shim {
    void* (*load)(const char*, char*, size_t) = nullptr;
    void (*free_handle)(void*) = nullptr;
    int (*vocab_size)(void*) = nullptr;
    size_t (*encode)(void*, const char*, size_t, int**) = nullptr;
    char* (*decode)(void*, const int*, size_t) = nullptr;
    std::string error;
};

const Shim& shim() {
    static Shim s;
    static std::once_flag once;
    std::call_once(once, [] {
        const char* env = std::getenv("TW_SPM_SHIM");
        const std::string path = env ? env : TW_SPM_SHIM_PATH;
        void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
        if (!h) {
            s.error = std::string("cannot load the SentencePiece shim: ") + dlerror();
            return;
        }
        s.load = reinterpret_cast<decltype(s.load)>(dlsym(h, "tw_spm_load"));
        s.free_handle = reinterpret_cast<decltype(s.free_handle)>(dlsym(h, "tw_spm_free"));
        s.vocab_size = reinterpret_cast<decltype(s.vocab_size)>(dlsym(h, "tw_spm_vocab_size"));
        s.encode = reinterpret_cast<decltype(s.encode)>(dlsym(h, "tw_spm_encode"));
        s.decode = reinterpret_cast<decltype(s.decode)>(dlsym(h, "tw_spm_decode"));
        if (!s.load || !s.free_handle || !s.vocab_size || !s.encode || !s.decode)
            s.error = "the SentencePiece shim at " + path + " lacks a symbol";
    });
    return s;
}

// Runs argv[0] from PATH with stdout and stderr sent to log_path; returns its exit status (127: not found).
int run_quietly(const std::vector<std::string>& argv, const std::string& log_path) {
    std::vector<char*> cargs;
    for (auto& a : argv) cargs.push_back(const_cast<char*>(a.c_str()));
    cargs.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execvp(cargs[0], cargs.data());
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

SentencePieceTokenizer::~SentencePieceTokenizer() {
    if (handle_) shim().free_handle(handle_);
}

Status SentencePieceTokenizer::train(const std::vector<std::string>& texts, int vocab_size, const std::string& model_path,
                        int threads) {
    namespace fs = std::filesystem;
    if (!shim().error.empty()) return Status::error(shim().error);
    // SentencePiece reads sentences from a file, one per line; paragraphs are our lines.
    const std::string input = model_path + ".train.txt";
    {
        std::ofstream out(input, std::ios::binary);
        if (!out) return Status::error("cannot write " + input);
        for (auto& t : texts) out << t << (t.empty() || t.back() == '\n' ? "" : "\n");
    }
    const bool has_ext = model_path.size() > 6 && model_path.compare(model_path.size() - 6, 6, ".model") == 0;
    const std::string prefix = has_ext ? model_path.substr(0, model_path.size() - 6) : model_path;
    // Training runs Debian's spm_train in a child process: inside this process SentencePiece's
    // trainer logs to std::cerr through its deep-bound libstdc++ view, whose stream objects are not
    // the initialised ones (the executable holds copy-relocated std::cerr).
    const std::vector<std::string> args = {
        "spm_train", "--input=" + input, "--model_prefix=" + prefix, "--model_type=bpe",
        "--vocab_size=" + std::to_string(vocab_size), "--character_coverage=1.0", "--unk_id=0", "--eos_id=1",
        "--bos_id=-1", "--pad_id=-1", "--max_sentence_length=65536", "--num_threads=" + std::to_string(threads),
        "--minloglevel=2", "--shuffle_input_sentence=false"};
    const std::string log_path = prefix + ".train.log";
    const int rc = run_quietly(args, log_path);
    std::error_code ec;
    fs::remove(input, ec);
    if (rc != 0) {
        std::ifstream log(log_path);
        std::string line, last;
        while (std::getline(log, line))
            if (!line.empty() && line.rfind("Program terminated", 0) != 0) last = line.substr(line.find(' ') + 1);
        return Status::error("tokenizer training failed (spm_train exit " + std::to_string(rc) + "): " + last);
    }
    fs::remove(log_path, ec);
    if (!has_ext) fs::rename(prefix + ".model", model_path, ec);
    return Status::ok();
}

Result<uint64_t> SentencePieceTokenizer::model_hash(const std::string& model_path) {
    using R = Result<uint64_t>;
    std::ifstream in(model_path, std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (!in.is_open() || in.bad()) return R::error("cannot read the tokenizer model " + model_path);
    // Walks the top-level protobuf fields (tag varint, then a varint, 8 bytes, a length-prefixed
    // run or 4 bytes) and hashes each whole field except trainer_spec.
    const auto bad = [&] { return R::error("the tokenizer model " + model_path + " is not a SentencePiece model"); };
    size_t at = 0;
    const auto varint = [&](uint64_t& v) {
        v = 0;
        for (int shift = 0; shift < 64 && at < bytes.size(); shift += 7) {
            const auto b = static_cast<unsigned char>(bytes[at++]);
            v |= static_cast<uint64_t>(b & 0x7f) << shift;
            if (!(b & 0x80)) return true;
        }
        return false;
    };
    uint64_t h = kHashSeed;
    while (at < bytes.size()) {
        const size_t start = at;
        uint64_t tag = 0, n = 0;
        if (!varint(tag)) return bad();
        const uint64_t type = tag & 7;
        if (type == 0 || type == 2) {
            if (!varint(n)) return bad();
        } else if (type == 1 || type == 5) {
            n = type == 1 ? 8 : 4;
        } else {
            return bad();  // groups (3, 4) are not in ModelProto
        }
        if (type != 0) {
            if (n > bytes.size() - at) return bad();
            at += n;
        }
        if (tag >> 3 != 2) h = seeded_hash64(std::string_view(bytes).substr(start, at - start), h);
    }
    return h;
}

Result<std::unique_ptr<SentencePieceTokenizer>> SentencePieceTokenizer::load(const std::string& model_path) {
    using R = Result<std::unique_ptr<SentencePieceTokenizer>>;
    if (!shim().error.empty()) return R::error(shim().error);
    std::unique_ptr<SentencePieceTokenizer> t(new SentencePieceTokenizer());
    char err[512] = {};
    t->handle_ = shim().load(model_path.c_str(), err, sizeof err);
    if (!t->handle_) return R::error("cannot load tokenizer " + model_path + ": " + err);
    std::error_code ec;
    t->model_path_ = std::filesystem::absolute(model_path, ec).string();
    return R(std::move(t));
}

std::vector<int> SentencePieceTokenizer::encode(const std::string& text) const {
    int* ids = nullptr;
    const size_t n = shim().encode(handle_, text.data(), text.size(), &ids);
    std::vector<int> out(ids, ids + n);
    std::free(ids);
    return out;
}

std::string SentencePieceTokenizer::decode(const std::vector<int>& ids) const {
    char* s = shim().decode(handle_, ids.data(), ids.size());
    std::string out(s);
    std::free(s);
    return out;
}

int SentencePieceTokenizer::vocab_size() const { return shim().vocab_size(handle_); }

}  // namespace tw
