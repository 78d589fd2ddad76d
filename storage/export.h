// Export of one stored run: metrics as CSV, or the whole run (summary, resolved config, metrics,
// events) as JSON. A standalone SQLite copy is RunStore::copy_run_to.
#pragma once

#include <cstdint>
#include <ostream>

#include "core/status.h"
#include "storage/run_store.h"

namespace tw {

// Header `run_id,node,step,outer_step,wall_s,sim_s,name,value`, rows grouped by metric name,
// then step. Values are printed with 17 significant digits so they read back exactly.
Status write_run_csv(RunStore& store, int64_t run_id, std::ostream& out);

// {"run": {...summary..., "config_toml": "..."}, "metrics": {name: [{node, step, outer_step,
// wall_s, sim_s, value}, ...]}, "events": [...]}. NaN values are written as null.
Status write_run_json(RunStore& store, int64_t run_id, std::ostream& out);

}  // namespace tw
