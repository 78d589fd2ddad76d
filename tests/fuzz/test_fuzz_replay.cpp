// Replays every committed fuzz seed (tests/fuzz/corpus/) through the same per-input checks the
// libFuzzer targets run, in the normal build: no invariant may break, accept-* seeds must be
// accepted and refuse-* seeds refused, and the reproductions must be refused for their reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <vector>

#include "tests/fuzz/fuzz_checks.h"

namespace tw::fuzz {
namespace {

namespace fs = std::filesystem;

struct Seed {
    std::string name;  // file stem
    std::vector<uint8_t> bytes;
};

std::vector<Seed> seeds(const std::string& corpus) {
    std::vector<Seed> out;
    const fs::path dir = fs::path(TW_FUZZ_CORPUS_DIR) / corpus;
    for (const auto& e : fs::directory_iterator(dir)) {
        std::ifstream f(e.path(), std::ios::binary);
        out.push_back({e.path().stem().string(),
                       std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>())});
    }
    return out;
}

// Replays a corpus; `reasons` maps seeds that must exist to a text their error must contain.
void replay(const std::string& corpus, Outcome (*check)(const uint8_t*, size_t), size_t min_seeds,
            const std::map<std::string, std::string>& reasons) {
    const auto all = seeds(corpus);
    EXPECT_GE(all.size(), min_seeds) << "corpus " << corpus << " lost seeds; regenerate with make_corpus.py";
    std::map<std::string, bool> seen;
    for (const auto& s : all) {
        SCOPED_TRACE(corpus + "/" + s.name);
        EXPECT_LT(s.bytes.size(), 64u * 1024) << "seeds stay small";
        const Outcome o = check(s.bytes.data(), s.bytes.size());
        EXPECT_EQ(o.violation, "");
        if (s.name.rfind("accept-", 0) == 0) {
            EXPECT_EQ(o.error, "");
        } else if (s.name.rfind("refuse-", 0) == 0) {
            EXPECT_NE(o.error, "");
        } else {
            ADD_FAILURE() << "seed names start with accept- or refuse-";
        }
        if (auto r = reasons.find(s.name); r != reasons.end()) {
            seen[s.name] = true;
            EXPECT_NE(o.error.find(r->second), std::string::npos) << o.error;
        }
    }
    for (const auto& [name, reason] : reasons) EXPECT_TRUE(seen[name]) << corpus << "/" << name << " is missing";
}

TEST(FuzzReplay, ControlSeeds) {
    replay("control", check_control, 30,
           {{"refuse-deep-id", "malformed header: nested deeper than 32 levels"},
            {"refuse-role-double-replica", "role: \"replica\" must be an integer"},
            {"refuse-role-huge-port", "\"grad_group.port\""},
            {"refuse-metrics-huge-step", "step is not a 64-bit integer"},
            {"accept-configure-heartbeat-abc", ""},
            {"accept-configure-heartbeat-null", ""},
            {"accept-scores", ""},
            {"refuse-scores-short-frame", "scores: a frame of 12 bytes"},
            {"refuse-scores-no-frame", "scores: expected one binary frame of log-probabilities, got 0"},
            {"refuse-scores-huge-set", "scores: \"sets[0]"}});
}

TEST(FuzzReplay, FrameSeeds) {
    replay("frame", check_frame, 19,
           {{"refuse-4-bytes", "header frame of 4 bytes"},
            {"refuse-wrong-magic", "without the TWAG magic"},
            {"refuse-version-3", "header frame of 24 bytes"},
            {"refuse-version-3-padded", "frame version 3"},
            {"refuse-version-4", "frame version 4"},
            {"refuse-version-5", "frame version 5"},
            {"refuse-version-6", "frame version 6"},
            {"refuse-kind-8", "unknown frame kind 8"}});
}

// The checks themselves can fail: a broken round trip is reported, not swallowed.
TEST(FuzzReplay, ChecksReportWhatTheyRefuse) {
    const uint8_t none[] = {0};
    EXPECT_NE(check_control(none, 1).error, "");  // one empty header frame
    EXPECT_NE(check_frame(none, 0).error, "");
    // Frame splitting: 2 frames, the first of length 3 ("abc"), then a valid header.
    const std::string two = std::string("\x01\x03\x00", 3) + "abc" + R"({"v":1,"kind":"hello"})";
    const auto o = check_control(reinterpret_cast<const uint8_t*>(two.data()), two.size());
    EXPECT_NE(o.error.find("not valid JSON"), std::string::npos) << o.error;  // "abc" is the header
}

}  // namespace
}  // namespace tw::fuzz
