// A C interface to SentencePiece, built as its own shared library and loaded with
// dlopen(RTLD_LOCAL | RTLD_DEEPBIND) by sentencepiece_tokenizer.cpp. (Training runs spm_train in a child process.)
//
// Why: Debian's libsentencepiece 0.1.97 embeds and exports its own copy of protobuf-lite, while
// LibTorch pulls in the system libprotobuf 3.21. Linked into one process the two copies interpose
// each other's symbols and the process crashes in a static initialiser. Loaded locally and
// deep-bound, SentencePiece sees only its own protobuf and LibTorch never sees it.
#include <sentencepiece_processor.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {
void set_error(char* err, size_t len, const std::string& msg) {
    if (err && len > 0) {
        std::strncpy(err, msg.c_str(), len - 1);
        err[len - 1] = '\0';
    }
}
}  // namespace

extern "C" {

// Returns a processor handle, or null with the message in err.
void* tw_spm_load(const char* path, char* err, size_t err_len) {
    auto* sp = new sentencepiece::SentencePieceProcessor();
    auto st = sp->Load(path);
    if (st.ok()) return sp;
    set_error(err, err_len, st.ToString());
    delete sp;
    return nullptr;
}

void tw_spm_free(void* handle) { delete static_cast<sentencepiece::SentencePieceProcessor*>(handle); }

int tw_spm_vocab_size(void* handle) {
    return static_cast<sentencepiece::SentencePieceProcessor*>(handle)->GetPieceSize();
}

// Encodes text; *ids is malloc'd (caller frees with free()).
size_t tw_spm_encode(void* handle, const char* text, size_t len, int** ids) {
    std::vector<int> out;
    static_cast<sentencepiece::SentencePieceProcessor*>(handle)->Encode(std::string(text, len), &out);
    *ids = static_cast<int*>(std::malloc(std::max<size_t>(1, out.size()) * sizeof(int)));
    std::memcpy(*ids, out.data(), out.size() * sizeof(int));
    return out.size();
}

// Decodes ids; returns a malloc'd NUL-terminated string (caller frees with free()).
char* tw_spm_decode(void* handle, const int* ids, size_t n) {
    std::string s;
    static_cast<sentencepiece::SentencePieceProcessor*>(handle)->Decode(std::vector<int>(ids, ids + n), &s);
    char* out = static_cast<char*>(std::malloc(s.size() + 1));
    std::memcpy(out, s.c_str(), s.size() + 1);
    return out;
}

}  // extern "C"
