// Axis ticks: "nice numbers" (1, 2, 5 × 10^k) for linear axes, decades for log axes; see ticks.h.
#include "ui/logic/ticks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace tw::ui {
namespace {

// Outside [1e-4, 1e6) labels switch to exponent form, as printf's %g does, so an axis of token
// counts reads "2e+06" rather than "2000000" and a tiny learning rate "5e-05" rather than "0.00005".
bool exponent_form(double magnitude) { return magnitude >= 1e6 || (magnitude > 0 && magnitude < 1e-4); }

// 10^k as the nearest double: for k < 0 one division rounds once, where pow(10, k) may not.
double pow10(int k) { return k >= 0 ? std::pow(10.0, k) : 1.0 / std::pow(10.0, -k); }

// m · 10^k computed so that decimal ticks land on the double nearest the decimal (0.6, not 0.6000000000000001).
double scaled(double m, int k) { return k >= 0 ? m * pow10(k) : m / pow10(-k); }

// e with 10^e ≤ a < 10^(e+1) for a > 0; log10 alone can be off by one next to powers of ten.
int dec_exponent(double a) {
    int e = static_cast<int>(std::floor(std::log10(a)));
    if (pow10(e + 1) <= a) ++e;
    if (pow10(e) > a) --e;
    return e;
}

// "0.200" → "0.2", "1.50e+06" → "1.5e+06", "-0" → "0".
std::string strip_zeros(const std::string& s) {
    const size_t e = s.find('e');
    std::string mant = s.substr(0, e);
    const std::string exp = e == std::string::npos ? "" : s.substr(e);
    if (mant.find('.') != std::string::npos) {
        while (mant.back() == '0') mant.pop_back();
        if (mant.back() == '.') mant.pop_back();
    }
    if (mant == "-0") mant = "0";
    return mant + exp;
}

// `v` printed down to the digit of weight 10^k (the step's), in fixed or exponent form.
std::string label_at(double v, int k, bool expo) {
    if (v == 0) return "0";
    char buf[64];
    if (expo)
        std::snprintf(buf, sizeof buf, "%.*e", std::max(0, dec_exponent(std::fabs(v)) - k), v);
    else
        std::snprintf(buf, sizeof buf, "%.*f", std::max(0, -k), v);
    return strip_zeros(buf);
}

// Ticks n·step (n integer) inside [lo, hi]; `tol` absorbs rounding at the ends.
int64_t tick_count(double lo, double hi, double step, double tol) {
    return static_cast<int64_t>(std::floor(hi / step + tol) - std::ceil(lo / step - tol)) + 1;
}

// The {1, 2, 5} × 10^k step whose tick count over [lo, hi] is closest to `target`; ties take the
// larger step (fewer labels). Returns m and k.
void nice_step(double lo, double hi, int target, int& m_out, int& k_out) {
    const double raw = hi / target - lo / target;  // per-term division: no overflow near DBL_MAX
    const int e = dec_exponent(raw);
    int64_t best = -1;
    for (int k = e + 1; k >= e - 1; --k)
        for (int m : {5, 2, 1}) {
            const int64_t dist = std::llabs(tick_count(lo, hi, scaled(m, k), 1e-9) - target);
            if (best < 0 || dist < best) best = dist, m_out = m, k_out = k;
        }
}

}  // namespace

std::string format_value(double v, int digits) {
    if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
    if (v == 0) return "0";
    const double a = std::fabs(v);
    return label_at(v, dec_exponent(a) - std::max(1, digits) + 1, exponent_form(a));
}

std::vector<Tick> linear_ticks(double lo, double hi, int target) {
    if (!std::isfinite(lo) || !std::isfinite(hi)) return {};
    if (hi < lo) std::swap(lo, hi);
    if (hi == lo) return {{lo, true, format_value(lo)}};
    target = std::max(target, 1);
    int m = 1, k = 0;
    nice_step(lo, hi, target, m, k);
    const double step = scaled(m, k);
    // Rounding of n·step near the ends: a few ulps of the values or a sliver of the step.
    const double tol = std::max(step * 1e-9, 8e-16 * std::max(std::fabs(lo), std::fabs(hi)));
    std::vector<Tick> out;
    const double n0 = std::ceil(lo / step - 1e-9), n1 = std::floor(hi / step + 1e-9);
    for (double n = n0; n <= n1 && out.size() < 4 * static_cast<size_t>(target) + 4; ++n) {
        const double v = scaled(n * m, k);
        if (v < lo - tol || v > hi + tol) continue;
        out.push_back({std::clamp(v, lo, hi), true, ""});
    }
    double amax = 0;
    for (auto& t : out) amax = std::max(amax, std::fabs(t.value));
    for (auto& t : out) t.label = label_at(t.value, k, exponent_form(amax));
    return out;
}

std::vector<Tick> log_ticks(double lo, double hi, int target) {
    if (!(lo > 0) || !(hi > lo) || !std::isfinite(hi)) return {};
    target = std::max(target, 1);
    const int e_lo = dec_exponent(lo), e_hi = dec_exponent(hi);
    const int d0 = pow10(e_lo) == lo ? e_lo : e_lo + 1;  // first power of ten ≥ lo
    const int d1 = e_hi;                                 // last power of ten ≤ hi
    const int decades = d1 - d0 + 1;
    // Thinned majors sit on multiples of `every`, so panning does not make them jump.
    const int every = decades > target ? (decades + target - 1) / target : 1;
    std::vector<Tick> out;
    for (int d = d0; d <= d1; ++d) {
        const bool major = ((d % every) + every) % every == 0;
        out.push_back({pow10(d), major, major ? format_value(pow10(d)) : ""});
    }
    if (decades <= 0) {
        out.push_back({lo, true, format_value(lo)});
        out.push_back({hi, true, format_value(hi)});
    }
    if (std::log10(hi / lo) <= 3 + 1e-9)  // few decades: 2..9 minors help reading values
        for (int e = e_lo; e <= e_hi; ++e)
            for (int m = 2; m <= 9; ++m) {
                const double v = scaled(m, e);
                const bool end_major = decades <= 0 && (v == lo || v == hi);
                if (v >= lo && v <= hi && !end_major) out.push_back({v, false, ""});
            }
    std::sort(out.begin(), out.end(), [](const Tick& a, const Tick& b) { return a.value < b.value; });
    return out;
}

namespace {

struct UnitScale {
    double factor = 1;  // value / factor is printed
    const char* suffix = "";
};

// The unit for a magnitude `m` (the largest absolute value to label).
UnitScale scale_for(AxisUnit unit, double m) {
    switch (unit) {
        case AxisUnit::kBytes: {
            static const char* const names[] = {" B", " kB", " MB", " GB", " TB", " PB"};
            int k = 0;
            double f = 1;
            while (k < 5 && m >= f * 1000) f *= 1000, ++k;
            return {f, names[k]};
        }
        case AxisUnit::kSeconds:
            if (m < 120) return {1, " s"};
            if (m < 7200) return {60, " min"};
            if (m < 2 * 86400) return {3600, " h"};
            return {86400, " d"};
        case AxisUnit::kCount:
            if (m >= 1e9) return {1e9, "G"};
            if (m >= 1e6) return {1e6, "M"};
            if (m >= 1e4) return {1e3, "k"};
            return {1, ""};
        case AxisUnit::kNumber:
            break;
    }
    return {1, ""};
}

// "12345" → "12,345" (an integer's digits; anything else is returned as it is).
std::string with_separators(const std::string& s) {
    const bool neg = !s.empty() && s[0] == '-';
    const std::string digits = neg ? s.substr(1) : s;
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return s;
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return neg ? "-" + out : out;
}

std::string scaled_label(double v, const UnitScale& u, int digits) {
    if (v == 0) return "0";
    std::string n = format_value(v / u.factor, digits);
    if (u.factor == 1 && std::fabs(v) < 1e6) n = with_separators(n);
    return n + u.suffix;
}

}  // namespace

std::vector<Tick> unit_linear_ticks(double lo, double hi, int target, AxisUnit unit) {
    if (unit == AxisUnit::kNumber) return linear_ticks(lo, hi, target);
    const UnitScale u = scale_for(unit, std::max(std::fabs(lo), std::fabs(hi)));
    std::vector<Tick> ticks = linear_ticks(lo / u.factor, hi / u.factor, target);
    for (Tick& t : ticks) {
        if (t.major && !t.label.empty()) {
            t.label = t.value == 0 ? "0" : (u.factor == 1 ? with_separators(t.label) : t.label) + u.suffix;
        }
        t.value *= u.factor;
    }
    return ticks;
}

void label_log_ticks(std::vector<Tick>& ticks, AxisUnit unit) {
    if (unit == AxisUnit::kNumber) return;
    for (Tick& t : ticks)
        if (t.major) t.label = scaled_label(t.value, scale_for(unit, std::fabs(t.value)), 4);
}

std::string unit_text(double v, AxisUnit unit, int digits) {
    if (unit == AxisUnit::kNumber || !std::isfinite(v)) return format_value(v, digits);
    return scaled_label(v, scale_for(unit, std::fabs(v)), digits);
}

}  // namespace tw::ui
