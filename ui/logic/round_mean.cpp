// Training curves as one point per round; see round_mean.h.
#include "ui/logic/round_mean.h"

#include <cmath>
#include <limits>

namespace tw::ui {
namespace {

// Calls emit(first, last) for each run [first, last) of equal x.
template <class F>
void each_run(const std::vector<double>& x, F emit) {
    for (size_t i = 0; i < x.size();) {
        size_t j = i + 1;
        while (j < x.size() && x[j] == x[i]) ++j;
        emit(i, j);
        i = j;
    }
}

double mean_of(const std::vector<double>& y, size_t first, size_t last) {
    double sum = 0;
    size_t n = 0;
    for (size_t k = first; k < last; ++k)
        if (!std::isnan(y[k])) sum += y[k], ++n;
    return n ? sum / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

std::vector<double> round_end_bytes(const std::vector<double>& before, const std::vector<double>& at) {
    std::vector<double> out(before.size());
    double before_next = NAN, end = NAN;
    for (size_t k = before.size(); k-- > 0;) {
        double b = before[k];
        if (std::isnan(b) && k + 1 < before.size()) b = before_next;
        if (k + 1 == before.size() || b != before_next) end = at[k];
        out[k] = end;
        before_next = b;
    }
    return out;
}

Series round_means(const Series& s) {
    Series out;
    each_run(s.x, [&](size_t i, size_t j) {
        out.x.push_back(s.x[i]);
        out.y.push_back(mean_of(s.y, i, j));
    });
    return out;
}

MemberCurve round_means(const MemberCurve& m) {
    MemberCurve out;
    each_run(m.x, [&](size_t i, size_t j) {
        out.step.push_back(m.step[i]);
        out.x.push_back(m.x[i]);
        out.y.push_back(mean_of(m.y, i, j));
    });
    return out;
}

}  // namespace tw::ui
