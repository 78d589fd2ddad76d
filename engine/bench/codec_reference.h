// The PyTorch reference of the SparseLoCo codec (tests/bench/reference_sparseloco.py), run as a
// child process with one thread for `thinwire bench codec`'s "x pytorch" column. Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace tw {

struct CodecReferenceCell {
    double encode_s = 0, decode_s = 0, total_s = 0;  // medians, seconds
};
using CodecReferenceKey = std::tuple<int64_t, int64_t, int64_t>;  // rows, cols, k

struct CodecReferenceRun {
    std::string script = "tests/bench/reference_sparseloco.py";
    std::string python = "/usr/bin/python3";
    std::vector<std::pair<int64_t, int64_t>> shapes;  // rows × cols
    std::vector<int64_t> ks;
    int64_t reps = 3, warmup = 1;
    double min_time_s = 0.25;
};

// Runs the reference once for all cells (one interpreter start) and parses its JSON lines. An
// empty map and a note on stderr when it cannot run (no script, no interpreter, a failed run).
std::map<CodecReferenceKey, CodecReferenceCell> run_codec_reference(const CodecReferenceRun& run);

}  // namespace tw
