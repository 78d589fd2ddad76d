// Seed groups and their spread; see seed_spread.h.
#include "core/seed_spread.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tw {

Spread spread_of(const std::vector<double>& values) {
    Spread s;
    s.n = values.size();
    if (values.empty()) return s;
    s.min = *std::min_element(values.begin(), values.end());
    s.max = *std::max_element(values.begin(), values.end());
    double sum = 0;
    for (double v : values) sum += v;
    s.mean = sum / static_cast<double>(s.n);
    if (s.n >= 2) {
        double ss = 0;
        for (double v : values) ss += (v - s.mean) * (v - s.mean);
        s.sd = std::sqrt(ss / static_cast<double>(s.n - 1));
    }
    return s;
}

std::string format_mean_sd(const Spread& s, int decimals) {
    if (s.n == 0) return "-";
    char buf[64];
    if (s.n >= 2) std::snprintf(buf, sizeof buf, "%.*f ± %.*f", decimals, s.mean, decimals, s.sd);
    else std::snprintf(buf, sizeof buf, "%.*f", decimals, s.mean);
    return buf;
}

std::vector<std::vector<size_t>> group_over_seeds(const std::vector<std::map<std::string, std::string>>& configs,
                                                  const std::vector<std::string>& ignore) {
    // A run's point: its settings without the seed (and the ignored keys), compared as a whole map.
    std::vector<std::map<std::string, std::string>> points;
    std::vector<std::vector<size_t>> groups;
    for (size_t i = 0; i < configs.size(); ++i) {
        std::map<std::string, std::string> p = configs[i];
        p.erase("run.seed");
        for (auto& k : ignore) p.erase(k);
        size_t g = 0;
        while (g < points.size() && points[g] != p) ++g;
        if (g == points.size()) {
            points.push_back(std::move(p));
            groups.emplace_back();
        }
        groups[g].push_back(i);
    }
    return groups;
}

bool differs_beyond_spread(const Spread& a, const Spread& b) {
    if (a.n < 2 || b.n < 2) return false;
    return std::fabs(a.mean - b.mean) > a.sd + b.sd;
}

std::string against_text(const Spread& point, const Spread& reference) {
    if (point.n == 0 || reference.n == 0) return "—";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.4f", point.mean - reference.mean);
    const char* verdict = point.n < 2 || reference.n < 2              ? "one seed: no spread"
                          : differs_beyond_spread(point, reference) ? "beyond the spread"
                                                                    : "within the spread";
    return std::string(buf) + ", " + verdict;
}

}  // namespace tw
