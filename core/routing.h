// NoLoCo's random routing of micro-batches between pipeline replicas (Kolehmainen et al., arXiv
// 2506.10911), docs/methods.md §5: instead of a fixed pipeline per replica, every micro-batch leaving a
// stage-s node goes to the stage-(s+1) node of a random replica, and its gradient returns the same
// way. Every node computes the same permutation from shared integers, so routing needs no message.
#pragma once

#include <cstdint>
#include <vector>

namespace tw {

// ---- deterministic randomness -----------------------------------------------------------------------
// Our own generator and index draw rather than std::mt19937 + std::uniform_int_distribution /
// std::shuffle: the standard distributions are implementation-defined, so libstdc++ and libc++ nodes
// would route the same micro-batch to different replicas.

// Next value of Vigna's splitmix64 stream; advances `state` by the golden-ratio increment.
uint64_t splitmix64(uint64_t& state);
// Uniform integer in [0, bound) from the stream (bound ≥ 1), unbiased (rejection of the top remainder).
uint64_t uniform_below(uint64_t& state, uint64_t bound);

// ---- routing ----------------------------------------------------------------------------------------

// The permutation of replica indices [replicas] that routes micro-batch `micro_batch` of step `step`
// from stage `stage` to stage+1: the micro-batch held by replica r's stage-s node goes to replica
// perm[r]'s stage-(s+1) node; its gradient returns from perm[r] to r. Seeded by (seed, step,
// micro_batch, stage) only: the seed, then each of the three keys in turn, is stirred through
// splitmix64 (so swapping two keys changes the result), then a Fisher–Yates shuffle of
// 0..replicas−1 draws from that stream (i = replicas−1 … 1 swaps i with uniform_below(i+1)). Tests
// pin the algorithm with hard-coded permutations: changing it changes every run's routing.
// replicas ≥ 1 (TW_ASSERT).
std::vector<int> routing_permutation(uint64_t seed, int64_t step, int micro_batch, int stage, int replicas);

// Inverse lookup: which replica's stage-`stage` node sends micro-batch `micro_batch` to replica `to`'s
// stage-(stage+1) node (the r with perm[r] == to), i.e. where `to` returns the gradient. 0 ≤ to < replicas.
int routing_source(uint64_t seed, int64_t step, int micro_batch, int stage, int replicas, int to);

}  // namespace tw
