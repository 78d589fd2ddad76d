// The project's one non-cryptographic hash, for config hashes, cache keys, checkpoint checksums,
// state hashes and the seeds of every initial weight and subspace basis. It is FNV-1a's step
// (xor a byte, multiply by the FNV prime 1099511628211) from a start value of its own,
// 1469598103934665603 — not FNV's offset basis 14695981039346656037 — so it is not FNV-1a and its
// values differ from any FNV-1a library's. Stable across platforms and releases: its values are
// stored and seed the weights, so neither constant may change.
#pragma once

#include <cstdint>
#include <string_view>

namespace tw {

constexpr uint64_t kHashSeed = 1469598103934665603ull;

inline uint64_t seeded_hash64(std::string_view s, uint64_t h = kHashSeed) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
}

}  // namespace tw
