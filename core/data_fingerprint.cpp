// Text and wire forms of a data fingerprint; see data_fingerprint.h.
#include "core/data_fingerprint.h"

#include <cstdio>

namespace tw {
namespace {

std::string hex16(uint64_t v) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    return buf;
}
std::string hex16(const std::optional<uint64_t>& v) { return v ? hex16(*v) : "none"; }

std::optional<uint64_t> parse_hex16(std::string_view s) {
    if (s.size() != 16) return std::nullopt;
    uint64_t v = 0;
    for (char c : s) {
        int d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else return std::nullopt;
        v = v << 4 | static_cast<uint64_t>(d);
    }
    return v;
}

}  // namespace

std::string to_text(const DataFingerprint& f) {
    return "tokenizer " + hex16(f.tokenizer) + ", train " + hex16(f.train) + ", val " + hex16(f.val);
}

std::string to_wire(const DataFingerprint& f) { return hex16(f.tokenizer) + ":" + hex16(f.train) + ":" + hex16(f.val); }

Result<DataFingerprint> parse_data_fingerprint(std::string_view wire) {
    using R = Result<DataFingerprint>;
    const auto bad = [] {
        return R::error("expected TOKENIZER:TRAIN:VAL, 16 lower-case hex digits each (TOKENIZER may be \"none\")");
    };
    if (wire.size() > kMaxFingerprintChars) return bad();
    const size_t a = wire.find(':');
    const size_t b = a == std::string_view::npos ? a : wire.find(':', a + 1);
    if (b == std::string_view::npos) return bad();
    DataFingerprint f;
    const std::string_view tok = wire.substr(0, a);
    if (tok != "none") {
        f.tokenizer = parse_hex16(tok);
        if (!f.tokenizer) return bad();
    }
    const auto train = parse_hex16(wire.substr(a + 1, b - a - 1));
    const auto val = parse_hex16(wire.substr(b + 1));
    if (!train || !val) return bad();
    f.train = *train;
    f.val = *val;
    return f;
}

std::string fingerprint_difference(const DataFingerprint& mine, const DataFingerprint& theirs, const std::string& here,
                                   const std::string& there) {
    std::string out;
    const auto part = [&](const char* what, const std::string& a, const std::string& b) {
        if (a == b) return;
        out += (out.empty() ? "" : "; ") + std::string(what) + " " + a + " " + here + ", " + b + " " + there;
    };
    part("tokenizer", hex16(mine.tokenizer), hex16(theirs.tokenizer));
    part("train shard", hex16(mine.train), hex16(theirs.train));
    part("val shard", hex16(mine.val), hex16(theirs.val));
    return out;
}

Status check_data_fingerprint(const DataFingerprint& mine, const std::string& coordinator_wire) {
    if (coordinator_wire.empty()) return Status::ok();
    auto theirs = parse_data_fingerprint(coordinator_wire);
    if (!theirs) return Status::error("the coordinator's data fingerprint: " + theirs.message());
    if (mine == *theirs) return Status::ok();
    return Status::error("its data differ from the coordinator's: " +
                         fingerprint_difference(mine, *theirs, "here", "at the coordinator") +
                         " (same corpus, tokenizer and data settings on every machine?)");
}

}  // namespace tw
