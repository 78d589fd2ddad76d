// The schedule of a ring all-reduce (outer.topology = "ring", and DDP's byte model): which chunk
// every member sends and receives at every step, and the exact bytes that makes. Torch-free, so the
// engine's ring (engine/algo/ring_allreduce.h), DDP's modelled counters and a planner share one
// copy of the arithmetic.
//
// Members stand in ring order at positions 0..R−1; position i sends to (i + 1) mod R and receives
// from (i − 1) mod R. A vector of n elements is cut into R contiguous chunks in element order, the
// first n mod R of them one element longer: chunk c holds ⌊n/R⌋ + 1 elements when c < n mod R,
// ⌊n/R⌋ otherwise (so with n < R the last R − n chunks are empty). Then 2·(R − 1) steps:
//   reduce-scatter, s = 0..R−2: position i sends chunk (i − s) mod R and receives chunk
//     (i − s − 1) mod R, to which it adds its own values; after step R−2 it holds the reduced
//     chunk (i + 1) mod R (chunk c is reduced at position (c − 1) mod R, its owner);
//   all-gather, s = 0..R−2: position i sends chunk (i + 1 − s) mod R (its own reduced chunk at
//     s = 0, then what it received the step before) and receives chunk (i − s) mod R.
// So position i sends every chunk twice except chunk (i + 1) mod R and chunk (i + 2) mod R once
// each: with w_c the wire bytes of chunk c, bytes_i = 2·Σ_c w_c − w_(i+1) − w_(i+2) (R ≥ 2; 0 for
// R = 1). For a dense dtype of b bytes per element, w_c = b·|c|, and when R divides n this is
// 2·(R − 1)/R·n·b exactly; otherwise members differ by at most a few elements' bytes.
//
// A chunk's wire bytes may depend on how it splits into segments (a codec with one scale per
// tensor sends a scale per piece of a tensor, never one across two): ring_chunk_pieces cuts chunk
// c at the segment boundaries.
//
// Units: elements and bytes. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace tw {

// R + 1 offsets: chunk c is [bounds[c], bounds[c + 1]). Requires n ≥ 0, members ≥ 1.
std::vector<int64_t> ring_chunk_bounds(int64_t n, int members);

// Chunk indices of the schedule above (position, step in 0..R−2).
int ring_reduce_send_chunk(int position, int step, int members);
int ring_reduce_recv_chunk(int position, int step, int members);
int ring_gather_send_chunk(int position, int step, int members);
int ring_gather_recv_chunk(int position, int step, int members);
// The position that holds chunk c fully reduced after the reduce-scatter.
int ring_chunk_owner(int chunk, int members);

// Sequential transfers of one ring all-reduce: 2·(R − 1) (0 for one member).
inline int64_t ring_hops(int members) { return 2 * static_cast<int64_t>(members - 1); }

// One piece of a chunk inside one segment: [offset, offset + length) of the whole vector.
struct RingPiece {
    int64_t offset = 0;
    int64_t length = 0;
};

// Chunk c of `bounds` cut at the boundaries of `segments` (element counts laid end to end, summing
// to the vector's length), in element order, empty pieces left out.
std::vector<RingPiece> ring_chunk_pieces(const std::vector<int64_t>& bounds, const std::vector<int64_t>& segments,
                                         int chunk);

// Wire bytes of every chunk: Σ over its pieces of piece_bytes(piece length).
std::vector<uint64_t> ring_chunk_wire_bytes(const std::vector<int64_t>& segments, int members,
                                            const std::function<uint64_t(int64_t)>& piece_bytes);

// Payload bytes position `position` sends in one ring all-reduce, given every chunk's wire bytes
// (what it receives is what its predecessor sends).
uint64_t ring_sent_bytes(const std::vector<uint64_t>& chunk_bytes, int position);

// The same for a dense vector of n elements of `elem_bytes` each.
uint64_t ring_sent_bytes_dense(int64_t n, uint64_t elem_bytes, int members, int position);

}  // namespace tw
