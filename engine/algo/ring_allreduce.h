// The ring all-reduce of the dense outer rounds (outer.topology = "ring", core/topology.h) over the
// data plane: every member ends with the mean of every member's vector, having sent ≈ 2·(R−1)/R of
// it in 2·(R−1) hops instead of the mesh's (R−1) whole copies in one.
//
// A round is an opening and a message phase:
//  * Opening: one all-gather among the members (Collective::exchange over them in ascending rank
//    order; one round of the mesh, as the mesh topology's all-gather is, so a pipeline's stage
//    rounds stay aligned whichever topology they use). It carries every member's simulated clock
//    (framing, as in the mesh) and a payload of 0 bytes, or with the aggregation guard on
//    (RingGuard::ratio > 0) 8: the member's own L2 norm of its guarded part (fp64, a sequential
//    double sum of its fp32 values). A member with nothing to send (NaN or Inf in its values) sends
//    1 byte instead, and every member fails at once naming it.
//  * Message phase: core/ring_schedule.h's reduce-scatter then all-gather over `members` in their
//    given (ring) order, point to point (Collective::send / recv, counted on the link like every
//    byte). Chunk c of the vector is sent as its pieces (ring_chunk_pieces: the chunk cut at the
//    segments' boundaries, so a codec's per-tensor scale never spans two tensors), each encoded
//    with the codec one after another.
//    - Reduce-scatter: a member decodes the incoming partial sum, adds its own fp32 values to it
//      (an fp32 sum), and re-encodes the result for the next hop. So quantised payloads (bf16,
//      int8, fp4) are rounded again at every hop: chunk c reaches its owner as
//      x_{c−1} + dec(enc(x_{c−2} + dec(enc(… + dec(enc(x_c)))))), with positions mod R.
//    - The owner divides its fp32 sum by R and encodes that mean once; the all-gather passes these
//      bytes on unchanged, and every member — the owner included — takes dec(enc(mean)), so all
//      hold the same bits.
//  Relative to the mesh (every payload decoded, summed in fp32 in rank order, divided by R): with
//  fp32 on the wire only the summation order differs (chunk c is summed from position c around the
//  ring); quantised wires add one rounding per hop and one of the mean.
//
// The guard, in a ring: no member sees another's whole contribution, so the norms are the members'
// own word (the opening's 8 bytes). Every member computes the same scales from them
// (norm_clip_scales, lower median of the others) and scales only its own contribution before the
// message phase. It bounds an honest outlier (a diverging replica) exactly as the mesh does; a
// member that lies about its norm is not caught. The mesh (outer.topology = "mesh") measures every
// contribution itself.
//
// Bytes this member sends: (R−1)·opening bytes + ring_sent_bytes over the chunks' wire bytes
// (ring_payload_bytes), exactly what the transport counts. Received: the same for its predecessor.
//
// Threading: call from the one thread that uses the collective; tensors are modified in place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "core/collective.h"
#include "core/status.h"

namespace tw {

class Codec;

struct RingSpec {
    std::vector<int> members;       // collective ranks in ring order, each once, this member included
    std::vector<int64_t> segments;  // element counts of the tensors laid end to end in the vector (Σ = its length)
    const Codec* codec = nullptr;   // the wire codec (engine/codec/codec.h); not owned, outlives the call
    LinkClass link = LinkClass::kOuterSync;
    std::string tag;                // first words of every error, e.g. "diloco", "streaming_diloco: fragment 1"
};

// The aggregation guard (engine/algo/aggregation_guard.h) as the ring applies it: over elements
// [offset, offset + length) of the vector (length −1 = to the end).
struct RingGuard {
    double ratio = 0;  // outer.guard_ratio; 0 = off (and the opening carries no bytes)
    int64_t offset = 0;
    int64_t length = -1;
};

struct RingReport {
    uint64_t bytes_sent = 0;     // payload bytes this member sent: opening + chunks
    int64_t hops = 0;            // sequential transfers: 2·(R−1)
    std::vector<double> clocks;  // every member's simulated clock at the opening, members in ascending rank order
    int guard_clipped = 0;       // contributions the guard scaled down
};

// Chunk bytes `spec`'s member at ring position `position` sends in the message phase.
uint64_t ring_payload_bytes(const RingSpec& spec, int position);
// Opening bytes one member sends to each other member.
inline uint64_t ring_opening_bytes(const RingGuard& guard) { return guard.ratio > 0 ? 8 : 0; }

// Replaces `x` (1-D, contiguous fp32, length Σ spec.segments) by the mean over the members of their
// `x`, as above. `sim_clock_s` is this member's clock (it travels with the opening). Errors name the
// member at fault by its collective rank ("replica r"): a refusal, a wrong size, a payload the codec
// rejects or that decodes to NaN or Inf. A member that fails in the message phase leaves its ring
// neighbours waiting for the transport's own failure (a lost or finished peer), not a hang.
Result<RingReport> ring_allreduce_mean(Collective& c, const RingSpec& spec, torch::Tensor& x, double sim_clock_s,
                                       const RingGuard& guard = {});

// This member's opening when it has nothing to send: its peers' ring_allreduce_mean fails at once,
// naming it. The round's message phase does not run.
void ring_refuse(Collective& c, const RingSpec& spec, double sim_clock_s);

}  // namespace tw
