// A node's data as every worker starts with it: prepared (or found cached) under the node's data
// root, its fingerprint stored as an event and checked against the coordinator's reference before
// any step, and the run's vocabulary fixed — model.vocab_size taken from the data when 0, refused
// when smaller than the data's. One function, so no worker drifts from the others.
#pragma once

#include <memory>

#include "core/config.h"
#include "core/role.h"
#include "core/status.h"
#include "core/worker.h"
#include "engine/data/dataset.h"

namespace tw {

// `cfg` is the worker's own copy (its model.vocab_size may be set); `wall_s` stamps the event.
Result<std::shared_ptr<PreparedData>> prepare_node_data(RunConfig& cfg, const NodeRole& role, MetricSink& sink,
                                                        double wall_s);

}  // namespace tw
