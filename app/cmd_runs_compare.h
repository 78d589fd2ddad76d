// `thinwire runs compare RUN RUN...`: runs side by side — status, final losses, and every resolved
// config key whose value differs between them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "storage/run_store.h"

namespace tw::cli {

// A loss for a table cell: 4 decimals, "-" when the run has none.
std::string fmt_opt(const std::optional<double>& v);

int run_compare(RunStore& store, const std::vector<int64_t>& ids);

}  // namespace tw::cli
