// Min/max decimation and debiased EMA for live plots; see series.h.
#include "ui/logic/series.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/assert.h"

namespace tw::ui {
namespace {

void push_point(const Series& s, size_t i, Series& out) {
    out.x.push_back(s.x[i]);
    out.y.push_back(s.y[i]);
}

Series slice(const Series& s, size_t a, size_t b) {
    Series out;
    out.x.assign(s.x.begin() + a, s.x.begin() + b);
    out.y.assign(s.y.begin() + a, s.y.begin() + b);
    return out;
}

// The min and max point of one bucket, indices into the series.
struct Bucket {
    size_t lo = SIZE_MAX, hi = SIZE_MAX;  // finite minimum / maximum; SIZE_MAX = none yet
    size_t first_nan = SIZE_MAX;          // kept only when the bucket has no finite point
};

// Emits one bucket's points in x order: min and max, or a single NaN for an all-gap bucket so a
// gap at least a bucket wide still breaks the line.
void emit(const Series& s, const Bucket& b, Series& out) {
    if (b.lo == SIZE_MAX) {
        if (b.first_nan != SIZE_MAX) push_point(s, b.first_nan, out);
        return;
    }
    push_point(s, std::min(b.lo, b.hi), out);
    if (b.lo != b.hi) push_point(s, std::max(b.lo, b.hi), out);
}

}  // namespace

Series decimate_minmax(const Series& s, double x_lo, double x_hi, size_t buckets) {
    const size_t n = std::min(s.x.size(), s.y.size());
    if (x_hi < x_lo) std::swap(x_lo, x_hi);
    buckets = std::max<size_t>(buckets, 1);
    // Visible points [i0, i1), widened by one neighbour each side [a, b) so lines reach the edges.
    const size_t i0 = std::lower_bound(s.x.begin(), s.x.begin() + n, x_lo) - s.x.begin();
    const size_t i1 = std::upper_bound(s.x.begin(), s.x.begin() + n, x_hi) - s.x.begin();
    const size_t a = i0 > 0 ? i0 - 1 : 0, b = i1 < n ? i1 + 1 : n;
    if (i1 - i0 <= 2 * buckets) return slice(s, a, b);

    const double width = (x_hi - x_lo) / static_cast<double>(buckets);
    auto bucket_of = [&](double x) -> size_t {
        if (!(width > 0) || !std::isfinite(width)) return 0;
        const double j = std::floor((x - x_lo) / width);
        return static_cast<size_t>(std::clamp(j, 0.0, static_cast<double>(buckets - 1)));
    };
    Series out;
    out.x.reserve(2 * buckets + 2);
    out.y.reserve(2 * buckets + 2);
    if (a < i0) push_point(s, a, out);
    Bucket cur;
    size_t cur_j = bucket_of(s.x[i0]);
    for (size_t i = i0; i < i1; ++i) {
        const size_t j = bucket_of(s.x[i]);
        if (j != cur_j) emit(s, cur, out), cur = Bucket{}, cur_j = j;
        const double y = s.y[i];
        if (std::isnan(y)) {
            if (cur.first_nan == SIZE_MAX) cur.first_nan = i;
            continue;
        }
        if (cur.lo == SIZE_MAX || y < s.y[cur.lo]) cur.lo = i;
        if (cur.hi == SIZE_MAX || y > s.y[cur.hi]) cur.hi = i;
    }
    emit(s, cur, out);
    if (b > i1) push_point(s, b - 1, out);
    return out;
}

std::vector<double> debiased_ema(const std::vector<double>& y, double alpha) {
    // alpha = 1 would never move and divide by zero; the limit of heavy smoothing is kept finite.
    alpha = std::clamp(alpha, 0.0, 0.999999);
    std::vector<double> out(y.size());
    double ema = 0, alpha_t = 1;  // alpha^t over the non-NaN points seen so far
    for (size_t i = 0; i < y.size(); ++i) {
        if (std::isnan(y[i])) {
            out[i] = y[i];
            continue;
        }
        ema = alpha * ema + (1 - alpha) * y[i];
        alpha_t *= alpha;
        out[i] = ema / (1 - alpha_t);
    }
    return out;
}

size_t nearest_index(const Series& s, double x) {
    TW_ASSERT(!s.x.empty());
    const size_t i = std::lower_bound(s.x.begin(), s.x.end(), x) - s.x.begin();
    if (i == 0) return 0;
    if (i == s.x.size()) return i - 1;
    return x - s.x[i - 1] <= s.x[i] - x ? i - 1 : i;  // ties go left, to the earlier step
}

}  // namespace tw::ui
