// OuterState (engine/algo/outer.h) as bytes: what a donor sends a joining replica over the outer
// link (docs/faults.md) and what a checkpoint can hold. Untrusted on the way in: every length,
// dtype and shape is checked before a byte is read, and an error names what is wrong.
//
// Layout, little-endian: "TWOS" | u32 count | count × (u16 name length | name | u8 dtype (0 fp32,
// 1 int64) | u8 ndim ≤ 8 | ndim × i64 dims ≥ 0 | numel × element bytes). Tensors are CPU and
// written contiguous.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "engine/algo/outer.h"

namespace tw {

std::vector<uint8_t> encode_outer_state(const OuterState& s);
// Every claimed length is checked against the bytes left; trailing bytes are an error.
Result<OuterState> decode_outer_state(const uint8_t* data, size_t n);

}  // namespace tw
