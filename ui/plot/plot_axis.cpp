// One axis of the plot widget; see plot_axis.h.
#include "ui/plot/plot_axis.h"

namespace tw::ui {

Axis make_axis(bool log, double lo, double hi, double fit_lo, double fit_hi) {
    Axis a;
    a.log = log;
    a.lo = a.to_axis(lo);
    a.hi = a.to_axis(hi);
    if (std::isfinite(a.lo) && std::isfinite(a.hi) && a.lo < a.hi) return a;
    if (std::isfinite(fit_lo) && std::isfinite(fit_hi) && fit_lo < fit_hi) {
        a.lo = fit_lo;
        a.hi = fit_hi;
    } else {
        a.lo = 0;
        a.hi = 1;
    }
    return a;
}

std::vector<Tick> axis_ticks(const Axis& a, int target, AxisUnit unit) {
    if (!a.log) return unit_linear_ticks(a.lo, a.hi, target, unit);
    const double lo = a.to_data(a.lo), hi = a.to_data(a.hi);
    std::vector<Tick> t = log_ticks(lo, hi, target);
    int decades = 0;
    for (const Tick& k : t) {
        const double e = std::log10(k.value);
        if (k.major && std::abs(e - std::round(e)) < 1e-9) ++decades;
    }
    label_log_ticks(t, unit);
    if (decades < 2) {
        // Less than a labelled decade in view (a loss between 2.1 and 9.7): log_ticks would label only
        // the ends, so place nice linear values instead; their spacing shows the log scale.
        t.clear();
        for (Tick& k : unit_linear_ticks(lo, hi, target, unit))
            if (k.value > 0) t.push_back(std::move(k));
    }
    for (Tick& k : t) k.value = std::log10(k.value);
    return t;
}

}  // namespace tw::ui
