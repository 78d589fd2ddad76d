// The micro corpus of tests/app/micro_corpus.sh, written from C++: 30 small documents
// (doc10.txt … doc39.txt, 40 lines each) that a 200-token tokenizer and a two-layer model train on
// in well under a second per step. Header-only; for tests only.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace tw {

inline void write_micro_corpus(const std::filesystem::path& dir) {
    std::filesystem::create_directories(dir);
    for (int i = 10; i <= 39; ++i) {
        std::ofstream f(dir / ("doc" + std::to_string(i) + ".txt"));
        for (int j = 1; j <= 40; ++j)
            f << "Document " << i << " line " << j << ": the quick brown fox " << (i * j % 7)
              << " jumps over the lazy dog while it rains " << (j % 5) << " times.\n";
    }
}

}  // namespace tw
