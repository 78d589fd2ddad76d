// ui/logic/mean_band.h.
#include "ui/logic/mean_band.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace tw::ui {

MeanBand mean_band(const std::vector<MemberCurve>& members, BandKind kind) {
    struct Acc {
        double sx = 0, sy = 0, syy = 0, lo = INFINITY, hi = -INFINITY;
        size_t n = 0;
    };
    std::map<double, Acc> by_step;
    for (const MemberCurve& m : members) {
        const size_t n = std::min({m.step.size(), m.x.size(), m.y.size()});
        for (size_t i = 0; i < n; ++i) {
            const double y = m.y[i];
            if (std::isnan(y) || std::isnan(m.x[i])) continue;
            Acc& a = by_step[m.step[i]];
            a.sx += m.x[i], a.sy += y, a.syy += y * y;
            a.lo = std::min(a.lo, y), a.hi = std::max(a.hi, y);
            ++a.n;
        }
    }
    MeanBand out;
    for (const auto& [step, a] : by_step) {
        const double x = a.sx / double(a.n), mean = a.sy / double(a.n);
        if (!out.mean.x.empty() && x < out.mean.x.back()) continue;
        double lo = a.lo, hi = a.hi;
        if (kind == BandKind::kStdDev) {
            const double var = std::max(0.0, a.syy / double(a.n) - mean * mean);
            lo = mean - std::sqrt(var), hi = mean + std::sqrt(var);
        }
        out.mean.x.push_back(x), out.mean.y.push_back(mean);
        out.lo.x.push_back(x), out.lo.y.push_back(lo);
        out.hi.x.push_back(x), out.hi.y.push_back(hi);
        out.step.push_back(step);
        out.count.push_back(a.n);
    }
    return out;
}

}  // namespace tw::ui
