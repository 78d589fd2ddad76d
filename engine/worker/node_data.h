// A node's data as every worker starts with it: prepared (or found cached) under the node's data
// root, its fingerprint stored as an event and checked against the coordinator's reference before
// any step, and the run's vocabulary fixed — model.vocab_size taken from the data when 0, refused
// when smaller than the data's. One function, so no worker drifts from the others; with the network
// profile and the compute model beside it, what every training worker's setup begins with.
#pragma once

#include <memory>

#include "core/compute_model.h"
#include "core/config.h"
#include "core/network.h"
#include "core/role.h"
#include "core/status.h"
#include "core/worker.h"
#include "engine/data/dataset.h"

namespace tw {

// `cfg` is the worker's own copy (its model.vocab_size may be set); `wall_s` stamps the event.
Result<std::shared_ptr<PreparedData>> prepare_node_data(RunConfig& cfg, const NodeRole& role, MetricSink& sink,
                                                        double wall_s);

// What a training worker starts from, made in this order: the run's network profile, the node's
// data (prepare_node_data) and its compute-time model, which needs the vocabulary the data settles.
struct NodeInputs {
    NetworkProfile net;
    std::shared_ptr<PreparedData> data;
    ComputeTime compute;
};

// `replica` and `stage` name the compute model's node (ComputeTime::create); its error names the role.
Result<NodeInputs> prepare_node_inputs(RunConfig& cfg, const NodeRole& role, MetricSink& sink, double wall_s,
                                       int64_t replica, int64_t stage = -1);

}  // namespace tw
