// Token shards in llm.c's .bin layout, so FineWeb-style shards can be used directly.
//
// Layout (little-endian):
//   header: 256 × int32 — [0] magic 20240520, [1] version 1, [2] token count N, rest 0
//   body:   N × uint16 token ids
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace tw {

constexpr int32_t kShardMagic = 20240520;
constexpr int32_t kShardVersion = 1;
constexpr size_t kShardHeaderInts = 256;

// Writes atomically (temporary file, then rename).
Status write_shard(const std::string& path, const std::vector<uint16_t>& tokens);

// Reads and validates: short header, wrong magic, unknown version, and a body shorter or longer
// than the header's count are errors naming the file and the numbers involved.
Result<std::vector<uint16_t>> read_shard(const std::string& path);

}  // namespace tw
