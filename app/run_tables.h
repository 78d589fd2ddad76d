// The tables `thinwire run` prints: one per run (every node's final figures; SkipPipe's iteration
// times and partial models) and, for several variants or [report] networks, the comparison with
// every run re-timed from the store on each network (storage/run_traces.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "coordinator/run_session.h"
#include "core/config_io.h"
#include "storage/run_store.h"

namespace tw::cli {

void print_nodes(const SessionResult& r);
void print_skippipe(const SessionResult& r);
void print_comparison(RunStore& store, const RunPlan& plan, const std::vector<SessionResult>& results);

// The runs of a launch that failed, one row each (name, reason; a reason of several lines on one
// line, its lines joined by "; "), under `title`, on stderr: what `run` and `plan` print last.
void print_failures(const std::string& title, const std::vector<std::pair<std::string, std::string>>& failed);

}  // namespace tw::cli
