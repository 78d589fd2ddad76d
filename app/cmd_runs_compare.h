// `thinwire runs compare RUN RUN...`: runs side by side — status, final losses, and every resolved
// config key whose value differs between them.
#pragma once

#include <cstdint>
#include <vector>

#include "storage/run_store.h"

namespace tw::cli {

int run_compare(RunStore& store, const std::vector<int64_t>& ids);

}  // namespace tw::cli
