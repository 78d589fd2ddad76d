// Human-readable quantities for the workbench's panels (the planner's and the compute model's
// numbers span twelve orders of magnitude): FLOP/s, bytes, seconds. Pure; thread-safe.
#pragma once

#include <string>

namespace tw::ui {

// "69.3 GFLOP/s", "124.8 TFLOP/s", "1.2 PFLOP/s": four significant digits, the largest unit ≥ 1
// (from FLOP/s up to PFLOP/s).
std::string rate_text(double flops_per_s);
// "512 B", "35.2 MB", "7.8 GB": decimal units (1 kB = 1000 B) as `thinwire plan` counts bytes.
std::string bytes_text(double bytes);
// "437.6 s", "4346 s (1.21 h)", "2.7e+05 s (3.16 days)": seconds, with hours from 2 h and days from 2 days.
std::string seconds_text(double s);

}  // namespace tw::ui
