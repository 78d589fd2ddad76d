// The ring all-reduce over the data plane; see ring_allreduce.h.
#include "engine/algo/ring_allreduce.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/ring_schedule.h"
#include "engine/algo/aggregation_guard.h"
#include "engine/codec/codec.h"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint8_t kRefusal = 0;  // the 1-byte opening of a member with nothing to send

std::vector<int> ascending(std::vector<int> v) {
    std::sort(v.begin(), v.end());
    return v;
}

Status check_spec(const Collective& c, const RingSpec& spec, const torch::Tensor& x, int* position) {
    const std::string& tag = spec.tag;
    if (!spec.codec) return Status::error(tag + ": ring without a codec");
    if (spec.members.empty()) return Status::error(tag + ": ring without members");
    auto sorted = ascending(spec.members);
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end() || sorted.front() < 0 ||
        sorted.back() >= c.size())
        return Status::error(tag + ": ring members must be distinct ranks below " + std::to_string(c.size()));
    auto it = std::find(spec.members.begin(), spec.members.end(), c.rank());
    if (it == spec.members.end())
        return Status::error(tag + ": rank " + std::to_string(c.rank()) + " is not a member of its ring");
    *position = static_cast<int>(it - spec.members.begin());
    int64_t n = 0;
    for (int64_t s : spec.segments) {
        if (s < 0) return Status::error(tag + ": negative segment length");
        n += s;
    }
    if (!x.defined() || x.dim() != 1 || x.scalar_type() != torch::kFloat32 || !x.is_contiguous() || x.numel() != n)
        return Status::error(tag + ": the ring reduces a contiguous 1-D fp32 vector of " + std::to_string(n) +
                             " elements (the segments' sum)");
    return Status::ok();
}

// The chunk's values of `v` (which holds the chunk from its first element) encoded piece by piece.
Status encode_chunk(const RingSpec& spec, const std::vector<RingPiece>& pieces, int64_t chunk_start,
                    const torch::Tensor& v, std::vector<uint8_t>& out) {
    out.clear();
    for (const RingPiece& p : pieces)
        if (Status s = spec.codec->encode(v.narrow(0, p.offset - chunk_start, p.length), out); !s) return s;
    return Status::ok();
}

// Decodes a chunk's pieces from `in` into `out` (the chunk's slice of a vector), checking that the
// bytes are exactly the pieces' and the values finite.
Status decode_chunk(const RingSpec& spec, const std::vector<RingPiece>& pieces, int64_t chunk_start,
                    const std::vector<uint8_t>& in, torch::Tensor out) {
    size_t off = 0;
    for (const RingPiece& p : pieces) {
        torch::Tensor t;
        if (Status s = spec.codec->decode(in.data(), in.size(), off, {p.length}, t); !s) return s;
        out.narrow(0, p.offset - chunk_start, p.length).copy_(t);
    }
    if (off != in.size())
        return Status::error("sent " + std::to_string(in.size()) + " bytes, expected " + std::to_string(off) +
                             " (different model or codec?)");
    if (out.numel() > 0 && !torch::isfinite(out).all().item<bool>())
        return Status::error("non-finite value in the payload");
    return Status::ok();
}

}  // namespace

uint64_t ring_payload_bytes(const RingSpec& spec, int position) {
    const int R = static_cast<int>(spec.members.size());
    const auto chunk_bytes = ring_chunk_wire_bytes(spec.segments, R, [&](int64_t len) {
        return spec.codec->wire_bytes({len});
    });
    return ring_sent_bytes(chunk_bytes, position);
}

void ring_refuse(Collective& c, const RingSpec& spec, double sim_clock_s) {
    (void)c.exchange(ascending(spec.members), {kRefusal}, spec.link, sim_clock_s, nullptr);
}

Result<RingReport> ring_allreduce_mean(Collective& c, const RingSpec& spec, torch::Tensor& x, double sim_clock_s,
                                       const RingGuard& guard) {
    using R_ = Result<RingReport>;
    torch::NoGradGuard no_grad;
    int pos = 0;
    if (Status st = check_spec(c, spec, x, &pos); !st) return st;
    const std::string& tag = spec.tag;
    const int R = static_cast<int>(spec.members.size());
    const int me = c.rank();
    auto who = [&](int rank) { return tag + ": replica " + std::to_string(rank); };
    const std::vector<int> sorted = ascending(spec.members);
    RingReport rep;
    rep.hops = ring_hops(R);

    // ---- opening: clocks, the guard's norms, or a refusal ----
    if (!torch::isfinite(x).all().item<bool>()) {
        ring_refuse(c, spec, sim_clock_s);
        return R_::error(who(me) + "'s values hold NaN or Inf");
    }
    const int64_t g_off = std::min<int64_t>(guard.offset, x.numel());
    const int64_t g_len = guard.length < 0 ? x.numel() - g_off : std::min(guard.length, x.numel() - g_off);
    std::vector<uint8_t> opening;
    if (guard.ratio > 0) {
        // A sequential double sum: the same bits whatever the thread count, as the mesh's guard.
        const float* v = x.data_ptr<float>() + g_off;
        double sq = 0;
        for (int64_t j = 0; j < g_len; ++j) sq += static_cast<double>(v[j]) * v[j];
        const double norm = std::sqrt(sq);
        opening.resize(8);
        std::memcpy(opening.data(), &norm, 8);
    }
    auto got = c.exchange(sorted, opening, spec.link, sim_clock_s, &rep.clocks);
    if (!got) return got.status();
    rep.bytes_sent += static_cast<uint64_t>(R - 1) * opening.size();
    std::vector<double> norms;
    for (size_t j = 0; j < sorted.size(); ++j) {
        const auto& b = (*got)[j];
        if (b.size() == 1 && b[0] == kRefusal)  // an opening is 0 or 8 bytes otherwise
            return R_::error(who(sorted[j]) + " sent no payload (its values hold NaN or Inf)");
        if (b.size() != opening.size())
            return R_::error(who(sorted[j]) + " opened the ring with " + std::to_string(b.size()) + " bytes, expected " +
                             std::to_string(opening.size()) + " (a different outer.guard_ratio?)");
        if (guard.ratio <= 0) continue;
        double n;
        std::memcpy(&n, b.data(), 8);
        if (!std::isfinite(n) || n < 0) return R_::error(who(sorted[j]) + " reported a norm that is not finite");
        norms.push_back(n);
    }
    if (guard.ratio > 0) {
        const auto scale = norm_clip_scales(norms, guard.ratio, NormReference::kLowerMedianOfOthers, &rep.guard_clipped);
        const size_t mine = static_cast<size_t>(std::find(sorted.begin(), sorted.end(), me) - sorted.begin());
        if (scale[mine] != 1.0f) x.narrow(0, g_off, g_len).mul_(scale[mine]);
    }

    // ---- message phase: reduce-scatter, then all-gather (core/ring_schedule.h) ----
    const auto t0 = Clock::now();
    const auto bounds = ring_chunk_bounds(x.numel(), R);
    std::vector<std::vector<RingPiece>> pieces(static_cast<size_t>(R));
    for (int k = 0; k < R; ++k) pieces[static_cast<size_t>(k)] = ring_chunk_pieces(bounds, spec.segments, k);
    auto chunk = [&](const torch::Tensor& v, int k) {
        return v.narrow(0, bounds[static_cast<size_t>(k)], bounds[static_cast<size_t>(k) + 1] - bounds[static_cast<size_t>(k)]);
    };
    const int succ = spec.members[static_cast<size_t>((pos + 1) % R)];
    const int pred = spec.members[static_cast<size_t>((pos + R - 1) % R)];
    auto send = [&](const std::vector<uint8_t>& bytes) -> Status {
        if (Status st = c.send(succ, bytes, spec.link, sim_clock_s); !st) return st;
        rep.bytes_sent += bytes.size();
        return Status::ok();
    };

    std::vector<uint8_t> out_bytes;
    torch::Tensor partial = chunk(x, pos);  // what goes out next: own chunk first, then partial sums
    for (int s = 0; s + 1 < R; ++s) {
        const int k_out = ring_reduce_send_chunk(pos, s, R), k_in = ring_reduce_recv_chunk(pos, s, R);
        if (Status st = encode_chunk(spec, pieces[static_cast<size_t>(k_out)], bounds[static_cast<size_t>(k_out)],
                                     partial, out_bytes);
            !st)
            return R_::error(who(me) + ", chunk " + std::to_string(k_out) + ": " + st.message());
        if (Status st = send(out_bytes); !st) return st;
        auto in = c.recv(pred);
        if (!in) return in.status();
        torch::Tensor incoming = torch::empty_like(chunk(x, k_in));
        if (Status st = decode_chunk(spec, pieces[static_cast<size_t>(k_in)], bounds[static_cast<size_t>(k_in)], *in,
                                     incoming);
            !st)
            return R_::error(who(pred) + ", chunk " + std::to_string(k_in) + ": " + st.message());
        partial = incoming + chunk(x, k_in);  // the hop's fp32 sum with this member's own values
    }
    // This member owns chunk (pos + 1) mod R, now summed over every member (own values alone for R = 1).
    const int k_own = (pos + 1) % R;
    torch::Tensor mean = R == 1 ? chunk(x, k_own).clone() : partial;
    mean /= static_cast<double>(R);
    std::vector<uint8_t> forward;
    if (Status st = encode_chunk(spec, pieces[static_cast<size_t>(k_own)], bounds[static_cast<size_t>(k_own)], mean,
                                 forward);
        !st)
        return R_::error(who(me) + ", chunk " + std::to_string(k_own) + " (mean): " + st.message());
    // Every chunk of x is read for the last time above; from here x receives the decoded means.
    if (Status st = decode_chunk(spec, pieces[static_cast<size_t>(k_own)], bounds[static_cast<size_t>(k_own)], forward,
                                 chunk(x, k_own));
        !st)
        return R_::error(who(me) + ", chunk " + std::to_string(k_own) + " (mean): " + st.message());
    for (int s = 0; s + 1 < R; ++s) {
        if (Status st = send(forward); !st) return st;  // the owner's encoding, passed on unchanged
        auto in = c.recv(pred);
        if (!in) return in.status();
        const int k_in = ring_gather_recv_chunk(pos, s, R);
        if (Status st = decode_chunk(spec, pieces[static_cast<size_t>(k_in)], bounds[static_cast<size_t>(k_in)], *in,
                                     chunk(x, k_in));
            !st)
            return R_::error(who(pred) + ", chunk " + std::to_string(k_in) + ": " + st.message());
        forward = std::move(*in);
    }
    c.add_real_exchange_s(std::chrono::duration<double>(Clock::now() - t0).count());
    return rep;
}

}  // namespace tw
