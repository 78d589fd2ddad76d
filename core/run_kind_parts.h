// The parts of each built-in run kind that its row (core/run_kind.h) points at: its section's
// checks, how many nodes it needs, how a shortfall is named, and its roles. assign_roles
// (core/layout.h) checks the node count and the endpoints before it calls a kind's `roles`;
// validate_config calls every row's checks.
//
// Pure functions of the config; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/layout.h"
#include "core/role.h"
#include "core/network.h"
#include "core/status.h"
#include "core/timeline.h"

namespace tw {

// [pipeline] against the rest of the config (core/config_validate.cpp).
void validate_pipeline(const RunConfig& c, std::vector<std::string>& problems);
// Replicas: (replicas − pipelines) × nodes_per_replica + pipelines × stages + spares.
int64_t replica_nodes_needed(const RunConfig& cfg);
std::string replica_too_few_nodes(const RunConfig& cfg, int64_t need);
// Full replicas (with their Gloo groups and spares), or, with cluster.stages > 1, full and
// pipeline replicas in one mesh.
Result<std::vector<NodeRole>> replica_run_roles(const RunConfig& cfg, const std::vector<NodeEndpoints>& eps,
                                                const std::function<int()>& free_port);

// SkipPipe: skippipe.stages × skippipe.replicas stage nodes in one mesh.
std::string skippipe_too_few_nodes(const RunConfig& cfg, int64_t need);
Result<std::vector<NodeRole>> skippipe_run_roles(const RunConfig& cfg, const std::vector<NodeEndpoints>& eps,
                                                 const std::function<int()>& free_port);

// [hdee] against the rest of the config (core/config_validate.cpp).
void validate_hdee(const RunConfig& c, std::vector<std::string>& problems);
// A SkipPipe run's replay: every node's clock is its schedules' (core/skippipe.h skippipe_clocks)
// on the block and head times it scheduled with, `metrics` = {block fwd, block bwd, head fwd, head
// bwd} seconds as node (0, 0) recorded them at step 0 (core/skippipe_run.cpp).
Result<Timeline> skippipe_replay(const RunConfig& cfg, const std::vector<TraceNode>& nodes,
                                 const std::vector<double>& metrics, const NetworkProfile& net);

// HDEE: one expert node per ensemble and domain (core/hdee_plan.h), no mesh.
std::string hdee_too_few_nodes(const RunConfig& cfg, int64_t need);
Result<std::vector<NodeRole>> hdee_run_roles(const RunConfig& cfg, const std::vector<NodeEndpoints>& eps,
                                             const std::function<int()>& free_port);

}  // namespace tw
