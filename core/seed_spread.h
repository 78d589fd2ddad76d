// Runs repeated over seeds (run.seeds): which stored runs are the same experiment point,
// and the mean and spread of a figure over them. Torch-free; `runs compare`, `report` and the
// registry's tables quote what these compute.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace tw {

// A figure over n runs: mean, sample standard deviation (n − 1 in the denominator; 0 for one run),
// minimum and maximum. n = 0: every field 0.
struct Spread {
    size_t n = 0;
    double mean = 0, sd = 0, min = 0, max = 0;
};
Spread spread_of(const std::vector<double>& values);

// "6.5123 ± 0.0123" (decimals after the point; the ± part only when n ≥ 2).
std::string format_mean_sd(const Spread& s, int decimals = 4);

// Runs given by their resolved config (dotted key → value text, core/config_io.h
// config_key_values) grouped into experiment points: runs whose settings are equal apart from
// run.seed (and the keys in `ignore`) share a group. Groups in order of their first run; each
// lists its runs' indices in input order.
std::vector<std::vector<size_t>> group_over_seeds(const std::vector<std::map<std::string, std::string>>& configs,
                                                  const std::vector<std::string>& ignore = {});

// Whether two points differ by more than their spread: |mean_a − mean_b| larger than the sum of
// their sample standard deviations (the registry's rule for calling a difference reproduced).
// False when either has fewer than 2 runs (no spread to compare against).
bool differs_beyond_spread(const Spread& a, const Spread& b);

// A point against a reference point, as `runs compare` and `report` print it: "+0.1234, beyond the
// spread", "…, within the spread", or "…, one seed: no spread" when either has a single run; "—"
// when either has none.
std::string against_text(const Spread& point, const Spread& reference);

}  // namespace tw
