// An algorithm's id (outer.algorithm, core/algorithm.h): the built-in ones by name, a registered
// one (core/algorithm.h register_algorithm) by the number its registration returned, beyond them.
// Apart from core/algorithm.h so that core/config.h can hold the parsed id without the registry.
#pragma once

namespace tw {

enum class Algorithm : int {
    kNone,             // one node, no synchronisation (`thinwire train`)
    kDdp,              // gradients all-reduced every step (docs/methods.md §1)
    kDiLoCo,           // dense pseudo-gradients every H steps, outer Nesterov (§2)
    kSparseLoCo,       // Top-k + 2-bit pseudo-gradients with error feedback (§3)
    kStreamingDiLoCo,  // fragments synced in turn, overlapped, quantised (§4)
    kNoLoCo,           // random groups average weights, no collective (§5)
    kDeMo,             // momentum, DCT per chunk, Top-k of the transform, sign update (docs/demo.md)
};

// The built-in algorithms; registered ones take the ids from here on, in registration order.
inline constexpr int kBuiltinAlgorithms = static_cast<int>(Algorithm::kDeMo) + 1;

}  // namespace tw
