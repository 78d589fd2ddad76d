// FNV-1a 64-bit: the one non-cryptographic hash used for config hashes, cache keys, checkpoint
// checksums and per-parameter seeds. Stable across platforms and releases (it is stored).
#pragma once

#include <cstdint>
#include <string_view>

namespace tw {

constexpr uint64_t kFnvOffset = 1469598103934665603ull;

inline uint64_t fnv1a64(std::string_view s, uint64_t h = kFnvOffset) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
}

}  // namespace tw
