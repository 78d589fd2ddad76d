// The round agreement's hash (Collective::agree): a fast, deterministic 64-bit hash of the state the
// members of a round must now hold identically, taken over the tensors' fp32 bytes as they sit in
// memory (bit-exact: -0.0 and +0.0, or two NaN payloads, hash differently — which is the point, the
// members must hold the same bits). Not cryptographic: it catches drift and a member that averaged
// something else, not a forger who can choose colliding states; the payloads themselves are
// authenticated by the transport (CURVE keys, run token).
//
// Units: tensors of any shape and dtype; each is hashed as its contiguous fp32 values (a non-fp32
// tensor is converted first), preceded by its element count, so the split of the state into tensors
// is part of what is compared. Little-endian hosts only (every target of this project).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace at { class Tensor; }

namespace tw {

// 64-bit word-wise hash of `bytes` bytes at `data`, continuing from `seed` (chainable). Four
// independent lanes of multiply–rotate mixing (about a word per cycle per lane), then a finaliser.
uint64_t hash_words(const void* data, size_t bytes, uint64_t seed = 0);

// The state hash of `tensors`, in order.
uint64_t state_hash(const std::vector<at::Tensor>& tensors, uint64_t seed = 0);

}  // namespace tw
