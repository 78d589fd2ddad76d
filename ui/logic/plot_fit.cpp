// How a plot fits its data by default; see plot_fit.h.
#include "ui/logic/plot_fit.h"

#include <algorithm>
#include <cmath>

namespace tw::ui {

bool padded_range(double lo, double hi, double pad, double& out_lo, double& out_hi) {
    if (!(lo <= hi) || !std::isfinite(lo) || !std::isfinite(hi)) return false;
    if (hi - lo < 1e-12 * std::max(1.0, std::abs(lo))) {
        out_lo = lo - 0.5;
        out_hi = hi + 0.5;
    } else {
        out_lo = lo - pad * (hi - lo);
        out_hi = hi + pad * (hi - lo);
    }
    return true;
}

bool bands_shown(size_t runs, int asked) { return asked > 0 || (asked < 0 && runs <= kBandRunsMax); }

}  // namespace tw::ui
