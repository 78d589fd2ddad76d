// Round agreement hash; see state_hash.h.
#include "engine/algo/state_hash.h"

#include <torch/types.h>

#include <cstring>

namespace tw {
namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull;  // odd constants of xxHash64's family
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kP3 = 0x165667B19E3779F9ull;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t round_of(uint64_t acc, uint64_t w) { return rotl(acc + w * kP2, 31) * kP1; }
inline uint64_t load64(const unsigned char* p) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
}
// Murmur3's 64-bit finaliser: every input bit reaches every output bit.
inline uint64_t fmix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 33;
    return h;
}

}  // namespace

uint64_t hash_words(const void* data, size_t bytes, uint64_t seed) {
    const auto* p = static_cast<const unsigned char*>(data);
    // Four lanes, so the multiplies of consecutive words do not wait on one another.
    uint64_t a = seed + kP1 + kP2, b = seed + kP2, c = seed, d = seed - kP1;
    size_t i = 0;
    for (; i + 32 <= bytes; i += 32) {
        a = round_of(a, load64(p + i));
        b = round_of(b, load64(p + i + 8));
        c = round_of(c, load64(p + i + 16));
        d = round_of(d, load64(p + i + 24));
    }
    uint64_t h = rotl(a, 1) + rotl(b, 7) + rotl(c, 12) + rotl(d, 18);
    for (; i + 8 <= bytes; i += 8) h = rotl(h ^ round_of(0, load64(p + i)), 27) * kP1 + kP3;
    if (i < bytes) {  // the last 1..7 bytes, zero-padded
        uint64_t w = 0;
        std::memcpy(&w, p + i, bytes - i);
        h = rotl(h ^ round_of(0, w), 27) * kP1 + kP3;
    }
    return fmix(h ^ static_cast<uint64_t>(bytes));
}

uint64_t state_hash(const std::vector<at::Tensor>& tensors, uint64_t seed) {
    uint64_t h = seed;
    for (const auto& t : tensors) {
        // A view of the values, without a copy for the usual contiguous fp32 parameter.
        const torch::Tensor v = t.detach().to(torch::kFloat32).contiguous();
        const uint64_t n = static_cast<uint64_t>(v.numel());
        h = hash_words(&n, sizeof n, h);
        h = hash_words(v.data_ptr(), static_cast<size_t>(v.numel()) * sizeof(float), h);
    }
    return h;
}

}  // namespace tw
