// The tables `thinwire run` prints: one per run (every node's final figures; SkipPipe's iteration
// times and partial models) and, for several variants or [report] networks, the comparison with
// every run re-timed from the store on each network (storage/run_traces.h).
#pragma once

#include <vector>

#include "coordinator/run_session.h"
#include "core/config_io.h"
#include "storage/run_store.h"

namespace tw::cli {

void print_nodes(const SessionResult& r);
void print_skippipe(const SessionResult& r);
void print_comparison(RunStore& store, const RunPlan& plan, const std::vector<SessionResult>& results);

}  // namespace tw::cli
