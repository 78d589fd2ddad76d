// NoLoCo micro-batch routing; see routing.h.
#include "core/routing.h"

#include <numeric>
#include <utility>

#include "core/assert.h"

namespace tw {

uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t uniform_below(uint64_t& state, uint64_t bound) {
    TW_ASSERT(bound >= 1);
    // Accept only draws below the largest multiple of `bound`, so every residue is equally likely.
    const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t x = splitmix64(state);
    while (x >= limit) x = splitmix64(state);
    return x % bound;
}

namespace {

// One stream per (seed, step, micro_batch, stage): the seed is stirred first (otherwise seed ^ step
// would make seed 1, step 0 and seed 0, step 1 collide), then each key is folded in and stirred by a
// splitmix64 step, so nearby keys (step 7 vs 8) give unrelated streams.
uint64_t routing_state(uint64_t seed, int64_t step, int micro_batch, int stage) {
    uint64_t h = splitmix64(seed);
    const uint64_t keys[3] = {static_cast<uint64_t>(step), static_cast<uint64_t>(static_cast<int64_t>(micro_batch)),
                              static_cast<uint64_t>(static_cast<int64_t>(stage))};
    for (uint64_t k : keys) {
        uint64_t s = h ^ k;
        h = splitmix64(s);
    }
    return h;
}

}  // namespace

std::vector<int> routing_permutation(uint64_t seed, int64_t step, int micro_batch, int stage, int replicas) {
    TW_ASSERT(replicas >= 1);
    std::vector<int> perm(static_cast<size_t>(replicas));
    std::iota(perm.begin(), perm.end(), 0);
    uint64_t state = routing_state(seed, step, micro_batch, stage);
    for (int i = replicas - 1; i >= 1; --i) {
        const int j = static_cast<int>(uniform_below(state, static_cast<uint64_t>(i) + 1));
        std::swap(perm[i], perm[j]);
    }
    return perm;
}

int routing_source(uint64_t seed, int64_t step, int micro_batch, int stage, int replicas, int to) {
    TW_ASSERT(to >= 0 && to < replicas);
    const std::vector<int> perm = routing_permutation(seed, step, micro_batch, stage, replicas);
    for (int r = 0; r < replicas; ++r)
        if (perm[r] == to) return r;
    TW_ASSERT(false && "a permutation covers every replica");
    return -1;
}

}  // namespace tw
