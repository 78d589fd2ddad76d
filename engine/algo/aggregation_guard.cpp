// Median-relative norm bounds; see aggregation_guard.h.
#include "engine/algo/aggregation_guard.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tw {
namespace {

double median_of_all(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double lower_median_of_others(const std::vector<double>& norms, size_t r) {
    std::vector<double> v;
    for (size_t k = 0; k < norms.size(); ++k)
        if (k != r) v.push_back(norms[k]);
    std::sort(v.begin(), v.end());
    return v[(v.size() - 1) / 2];
}

}  // namespace

std::vector<float> norm_clip_scales(const std::vector<double>& norms_in, double ratio, NormReference ref,
                                    int* clipped) {
    // NaN would break the sort's ordering; the callers refuse non-finite payloads anyway.
    std::vector<double> norms = norms_in;
    for (double& n : norms)
        if (std::isnan(n)) n = std::numeric_limits<double>::infinity();
    std::vector<float> scale(norms.size(), 1.0f);
    int n_clipped = 0;
    if (ratio > 0 && !norms.empty() && !(ref == NormReference::kLowerMedianOfOthers && norms.size() < 2)) {
        const double all = ref == NormReference::kMedianOfAll ? median_of_all(norms) : 0.0;
        for (size_t r = 0; r < norms.size(); ++r) {
            const double bound =
                ratio * (ref == NormReference::kMedianOfAll ? all : lower_median_of_others(norms, r));
            if (norms[r] > bound) {
                scale[r] = static_cast<float>(bound / norms[r]);
                ++n_clipped;
            }
        }
    }
    if (clipped) *clipped = n_clipped;
    return scale;
}

}  // namespace tw
