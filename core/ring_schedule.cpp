// The ring all-reduce's schedule and bytes; see ring_schedule.h.
#include "core/ring_schedule.h"

#include <algorithm>

#include "core/assert.h"

namespace tw {
namespace {

int mod(int x, int n) { return ((x % n) + n) % n; }

}  // namespace

std::vector<int64_t> ring_chunk_bounds(int64_t n, int members) {
    TW_ASSERT(n >= 0 && members >= 1);
    std::vector<int64_t> b(static_cast<size_t>(members) + 1, 0);
    const int64_t base = n / members, extra = n % members;
    for (int c = 0; c < members; ++c) b[static_cast<size_t>(c) + 1] = b[static_cast<size_t>(c)] + base + (c < extra ? 1 : 0);
    return b;
}

int ring_reduce_send_chunk(int position, int step, int members) { return mod(position - step, members); }
int ring_reduce_recv_chunk(int position, int step, int members) { return mod(position - step - 1, members); }
int ring_gather_send_chunk(int position, int step, int members) { return mod(position + 1 - step, members); }
int ring_gather_recv_chunk(int position, int step, int members) { return mod(position - step, members); }
int ring_chunk_owner(int chunk, int members) { return mod(chunk - 1, members); }

std::vector<RingPiece> ring_chunk_pieces(const std::vector<int64_t>& bounds, const std::vector<int64_t>& segments,
                                         int chunk) {
    TW_ASSERT(chunk >= 0 && static_cast<size_t>(chunk) + 1 < bounds.size());
    const int64_t lo = bounds[static_cast<size_t>(chunk)], hi = bounds[static_cast<size_t>(chunk) + 1];
    std::vector<RingPiece> out;
    int64_t seg_start = 0;
    for (int64_t len : segments) {
        const int64_t a = std::max(lo, seg_start), b = std::min(hi, seg_start + len);
        if (a < b) out.push_back({a, b - a});
        seg_start += len;
        if (seg_start >= hi) break;
    }
    return out;
}

std::vector<uint64_t> ring_chunk_wire_bytes(const std::vector<int64_t>& segments, int members,
                                            const std::function<uint64_t(int64_t)>& piece_bytes) {
    int64_t n = 0;
    for (int64_t s : segments) n += s;
    const auto bounds = ring_chunk_bounds(n, members);
    std::vector<uint64_t> out(static_cast<size_t>(members), 0);
    for (int c = 0; c < members; ++c)
        for (const RingPiece& p : ring_chunk_pieces(bounds, segments, c)) out[static_cast<size_t>(c)] += piece_bytes(p.length);
    return out;
}

uint64_t ring_sent_bytes(const std::vector<uint64_t>& chunk_bytes, int position) {
    const int R = static_cast<int>(chunk_bytes.size());
    TW_ASSERT(R >= 1 && position >= 0 && position < R);
    uint64_t sent = 0;
    // Written as the schedule's sum, not the closed form of ring_schedule.h, so that the two can be
    // tested against each other.
    for (int s = 0; s + 1 < R; ++s)
        sent += chunk_bytes[static_cast<size_t>(ring_reduce_send_chunk(position, s, R))] +
                chunk_bytes[static_cast<size_t>(ring_gather_send_chunk(position, s, R))];
    return sent;
}

uint64_t ring_sent_bytes_dense(int64_t n, uint64_t elem_bytes, int members, int position) {
    return ring_sent_bytes(ring_chunk_wire_bytes({n}, members, [&](int64_t len) { return static_cast<uint64_t>(len) * elem_bytes; }),
                           position);
}

}  // namespace tw
