// Human-readable quantities; see units.h.
#include "ui/logic/units.h"

#include <cmath>
#include <cstdio>

namespace tw::ui {
namespace {

// `v` in the largest of `units` (each 1000× the previous) that leaves it ≥ 1, with `digits`
// significant digits ("%.*g"); unit 0 below 1.
std::string scaled(double v, const char* const* units, int n, int digits) {
    int u = 0;
    while (std::fabs(v) >= 1000 && u < n - 1) v /= 1000, ++u;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g %s", digits, v, units[u]);
    return buf;
}

}  // namespace

std::string rate_text(double flops_per_s) {
    static const char* const kUnits[] = {"FLOP/s", "kFLOP/s", "MFLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s"};
    return scaled(flops_per_s, kUnits, 6, 4);
}

std::string bytes_text(double bytes) {
    static const char* const kUnits[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    return scaled(bytes, kUnits, 6, bytes < 1000 ? 4 : 3);
}

std::string seconds_text(double s) {
    char buf[80];
    if (s >= 2 * 86400) std::snprintf(buf, sizeof buf, "%.4g s (%.3g days)", s, s / 86400);
    else if (s >= 2 * 3600) std::snprintf(buf, sizeof buf, "%.4g s (%.3g h)", s, s / 3600);
    else std::snprintf(buf, sizeof buf, "%.4g s", s);
    return buf;
}

}  // namespace tw::ui
