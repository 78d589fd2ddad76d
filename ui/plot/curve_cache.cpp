// The plot widget's curves between frames; see curve_cache.h.
#include "ui/plot/curve_cache.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include <imgui.h>

#include "core/assert.h"
#include "ui/logic/plot_fit.h"

namespace tw::ui {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kCacheKeepFrames = 120;      // a cached series unused this long is dropped
constexpr size_t kLodBlock = 16;           // points per block of the finest level of detail (each keeps ≤ 3)
constexpr size_t kLodMinBlocks = 512;      // a level is made once the curve has this many of its blocks
constexpr double kLodBlocksPerBucket = 4;  // a level is used when a bucket spans at least this many blocks
constexpr size_t kLodPieces = 8;           // the x-range is cut into this many pieces, each picking its level

bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

}  // namespace

void LodLevel::extend(const Series& s) {
    const size_t n = s.x.size();
    pts.x.resize(out_done);
    pts.y.resize(out_done);
    pts.x.reserve(out_done + 2 * (n - src_done) / block + 3);
    pts.y.reserve(out_done + 2 * (n - src_done) / block + 3);
    for (size_t b = src_done; b < n; b += block) {
        const size_t e = std::min(n, b + block);
        size_t lo = e, hi = e, nan = e;  // e = none
        double y_lo = 0, y_hi = 0;
        for (size_t i = b; i < e; ++i) {
            const double y = s.y[i];
            if (std::isnan(y)) {
                nan = std::min(nan, i);
                continue;
            }
            if (lo == e || y < y_lo) lo = i, y_lo = y;
            if (hi == e || y > y_hi) hi = i, y_hi = y;
        }
        // The three in x order (e sorts last and is skipped), each once.
        if (lo > hi) std::swap(lo, hi);
        if (hi > nan) std::swap(hi, nan);
        if (lo > hi) std::swap(lo, hi);
        const size_t keep[3] = {lo, hi, nan};
        for (int k = 0; k < 3; ++k) {
            if (keep[k] == e || (k > 0 && keep[k] == keep[k - 1])) continue;
            pts.x.push_back(s.x[keep[k]]);
            pts.y.push_back(s.y[keep[k]]);
        }
        if (e - b == block) src_done = e, out_done = pts.x.size();
    }
}

void Lod::extend(const Series& s) {
    for (LodLevel& l : levels) l.extend(s);
    for (size_t block = levels.empty() ? kLodBlock : levels.back().block * 8; s.x.size() >= block * kLodMinBlocks;
         block *= 8) {
        levels.push_back(LodLevel{block});
        levels.back().extend(s);
    }
}

// Min/max decimation of `s` to [x_lo, x_hi]. The range is cut into up to kLodPieces pieces, and
// each piece is decimated from the coarsest level of detail that still has kLodBlocksPerBucket
// blocks per bucket there, so density that varies along x (a log x axis, irregular steps) gets
// the full curve where it is sparse. Each piece keeps only its own points (decimate_minmax adds a
// neighbour on each side), except the outer neighbours of the whole range.
Series decimate(const Series& s, const Lod& lod, double x_lo, double x_hi, size_t buckets) {
    buckets = std::max<size_t>(buckets, 1);
    if (lod.levels.empty()) return decimate_minmax(s, x_lo, x_hi, buckets);
    const size_t pieces = std::clamp<size_t>(buckets / 64, 1, kLodPieces);
    Series out;
    for (size_t p = 0; p < pieces; ++p) {
        const double lo = x_lo + (x_hi - x_lo) * double(p) / double(pieces);
        const double hi = p + 1 == pieces ? x_hi : x_lo + (x_hi - x_lo) * double(p + 1) / double(pieces);
        const size_t b = buckets * (p + 1) / pieces - buckets * p / pieces;
        const size_t i0 = std::lower_bound(s.x.begin(), s.x.end(), lo) - s.x.begin();
        const size_t i1 = std::upper_bound(s.x.begin(), s.x.end(), hi) - s.x.begin();
        const double per_bucket = double(i1 - i0) / double(std::max<size_t>(b, 1));
        const Series* src = &s;
        for (const LodLevel& l : lod.levels)
            if (double(l.block) * kLodBlocksPerBucket <= per_bucket) src = &l.pts;
        const Series d = decimate_minmax(*src, lo, hi, b);
        for (size_t i = 0; i < d.x.size(); ++i) {
            if ((d.x[i] < lo && p > 0) || (d.x[i] >= hi && p + 1 < pieces)) continue;
            out.x.push_back(d.x[i]);
            out.y.push_back(d.y[i]);
        }
    }
    return out;
}

namespace {

struct CacheKey {
    const Series* data;
    bool log_x;
    bool operator==(const CacheKey& o) const { return data == o.data && log_x == o.log_x; }
};
struct CacheKeyHash {
    size_t operator()(const CacheKey& k) const { return std::hash<const void*>()(k.data) ^ size_t(k.log_x); }
};

struct Cache {
    std::unordered_map<CacheKey, Prepared, CacheKeyHash> entries;
    int last_evict_frame = -1;
};

Cache& cache() {
    static Cache c;
    return c;
}

// Covers points [p.size, n) of `s`: appends to the x-scaled copy and the bounds.
void extend_raw(Prepared& p, const Series& s, bool log_x) {
    const size_t from = p.size, n = s.x.size();
    if (log_x) {
        p.axis_raw.x.reserve(n), p.axis_raw.y.reserve(n);
        for (size_t i = from; i < n; ++i) {
            // x <= 0 maps to −inf, so x stays non-decreasing and the point is drawn as a gap.
            p.axis_raw.x.push_back(s.x[i] > 0 ? std::log10(s.x[i]) : -kInf);
            p.axis_raw.y.push_back(s.y[i]);
        }
    }
    const Series& ax = log_x ? p.axis_raw : s;
    for (size_t i = from; i < n; ++i) {
        if (std::isfinite(ax.x[i])) p.x_lo = std::min(p.x_lo, ax.x[i]), p.x_hi = std::max(p.x_hi, ax.x[i]);
        const double y = s.y[i];
        if (!std::isfinite(y)) continue;
        p.y_lo = std::min(p.y_lo, y), p.y_hi = std::max(p.y_hi, y);
        if (y > 0) p.y_pos = std::min(p.y_pos, y);
    }
    p.lod_raw.extend(ax);
    p.size = n;
    p.x_first = n ? s.x.front() : kNaN;
    p.x_last = n ? s.x.back() : kNaN;
    p.y_last = n ? s.y.back() : kNaN;
}

// Brings the smoothed copy up to the size of `ax` (the series with x in axis space).
void extend_smoothed(Smoothed& sm, const Series& ax) {
    const size_t from = sm.pts.x.size(), n = ax.x.size();
    const double alpha = sm.alpha;
    sm.pts.x.insert(sm.pts.x.end(), ax.x.begin() + long(from), ax.x.end());
    if (from == 0) {
        sm.pts.y = debiased_ema(ax.y, alpha);
        // Recover the recurrence's state to continue it on the next append.
        for (double y : ax.y)
            if (!std::isnan(y)) sm.alpha_t *= alpha;
        for (size_t i = n; i-- > 0;)
            if (!std::isnan(ax.y[i])) {
                sm.ema = sm.pts.y[i] * (1 - sm.alpha_t);
                break;
            }
    } else {  // debiased_ema's recurrence (series.h), continued from the stored state
        for (size_t i = from; i < n; ++i) {
            const double y = ax.y[i];
            if (std::isnan(y)) {
                sm.pts.y.push_back(y);
                continue;
            }
            sm.ema = alpha * sm.ema + (1 - alpha) * y;
            sm.alpha_t *= alpha;
            sm.pts.y.push_back(sm.ema / (1 - sm.alpha_t));
        }
    }
    sm.lod.extend(sm.pts);
}

}  // namespace


// The prepared copies of `s` for this x scale and smoothing: extended when points were appended
// since the last call (same first point, same old last point), rebuilt when anything else changed.
// A new smoothing weight replaces the weights no plot used this frame (a dragged slider must not
// pile up copies); a new x scale drops the other scale's copy if it was not used this frame.
Curve prepare(const Series* s, double alpha, bool log_x) {
    TW_ASSERT(s->x.size() == s->y.size());
    Cache& c = cache();
    const int frame = ImGui::GetFrameCount();
    if (frame != c.last_evict_frame) {
        c.last_evict_frame = frame;
        for (auto it = c.entries.begin(); it != c.entries.end();)
            it = frame - it->second.last_frame > kCacheKeepFrames ? c.entries.erase(it) : std::next(it);
    }
    auto found = c.entries.find(CacheKey{s, log_x});
    if (found == c.entries.end()) {
        auto other = c.entries.find(CacheKey{s, !log_x});
        if (other != c.entries.end() && other->second.last_frame < frame) c.entries.erase(other);
        found = c.entries.emplace(CacheKey{s, log_x}, Prepared{}).first;
    }
    Prepared& p = found->second;
    p.last_frame = frame;

    const size_t n = s->x.size();
    const bool unchanged =
        n == p.size &&
        (n == 0 || (same(p.x_first, s->x.front()) && same(p.x_last, s->x.back()) && same(p.y_last, s->y.back())));
    if (!unchanged) {
        const bool appended = p.size > 0 && n > p.size && same(p.x_first, s->x.front()) &&
                              same(p.x_last, s->x[p.size - 1]) && same(p.y_last, s->y[p.size - 1]);
        if (!appended) p = Prepared{};
        p.last_frame = frame;
        extend_raw(p, *s, log_x);
    }
    const Series& ax = log_x ? p.axis_raw : *s;
    Curve curve{&ax, &p.lod_raw, nullptr, nullptr, &p};
    if (alpha <= 0) return curve;

    auto sm = std::find_if(p.smoothed.begin(), p.smoothed.end(), [&](const Smoothed& m) { return m.alpha == alpha; });
    if (sm == p.smoothed.end()) {
        p.smoothed.erase(std::remove_if(p.smoothed.begin(), p.smoothed.end(),
                                        [&](const Smoothed& m) { return m.last_frame < frame; }),
                         p.smoothed.end());
        p.smoothed.push_back(Smoothed{alpha});
        sm = p.smoothed.end() - 1;
    }
    sm->last_frame = frame;
    if (sm->pts.x.size() != ax.x.size()) extend_smoothed(*sm, ax);
    curve.smooth = &sm->pts;
    curve.lod_smooth = &sm->lod;
    return curve;
}

void curve_cache_clear() { cache().entries.clear(); }

}  // namespace tw::ui
