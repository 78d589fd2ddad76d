// The run layout: from a resolved config and the nodes at hand to one role per node.
//
// Endpoint convention: a node listening for control on tcp://HOST:P publishes metrics on P+1,
// binds its data-plane PULL socket on P+2 and, when it is rank 0 of a gradient group, hosts the
// c10d store on P+3. inproc:// and ipc:// endpoints get ".pub" / ".data" suffixes, and their
// store port is chosen by the caller (these nodes share the coordinator's machine).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/role.h"
#include "core/status.h"

namespace tw {

struct NodeEndpoints {
    std::string control;     // ROUTER, as given
    std::string metrics;     // PUB
    std::string data;        // data-plane PULL
    std::string store_host;  // c10d store host, "" when the caller picks (inproc/ipc)
    int store_port = 0;
};

// Derives the other endpoints from a control endpoint; errors name the endpoint.
Result<NodeEndpoints> derive_endpoints(const std::string& control);

// Nodes the layout needs: replicas × nodes_per_replica, where a pipeline replica has cluster.stages;
// with an [hdee] section, one expert per ensemble and domain (core/hdee_plan.h).
int64_t nodes_needed(const RunConfig& cfg);

// In a run with pipeline replicas every node is a member of one data-plane mesh, in node order:
// replica 0's nodes, then replica 1's, ...; a full replica has one node (its `stage` is ignored),
// a pipeline replica one per stage. Every node computes its peers' mesh ranks from the config.
int pipeline_mesh_rank(const RunConfig& cfg, int replica, int stage);

// Rank of the subspace the residual writers of `stage` of `replica` are kept in; 0 = free. A
// compressed pipeline replica keeps stage s in the smallest rank of the boundaries at or after it
// (U's are nested, so every later boundary then decodes exactly); its last stage stays free.
// A full replica is free unless AD5 holds, then it takes run_constraint_rank.
int64_t constraint_rank(const RunConfig& cfg, int64_t replica, int64_t stage);

// The smallest constraint rank any compressed replica uses for `stage` (0 when none is compressed):
// the subspace AD2 and AD5 use on every holder of the stage, so all holders stay identical.
int64_t run_constraint_rank(const RunConfig& cfg, int64_t stage);

// True when some boundary of the run is compressed: then every node builds T_fixed.
bool run_has_compression(const RunConfig& cfg);

// Whether a run with pipeline replicas goes on when a replica is lost (docs/faults.md "A pipeline
// replica that loses a node"): outer rounds, fixed routing (a pipeline's activations stay inside
// it; with random routing they cross pipelines), compressed boundaries included (T_fixed is compared
// by stage 0's holders in its round and by each pipeline's nodes with their stage 0), at most
// kMaxSurvivorStages stages (each stage's round attempts take their own range of transport epochs,
// and a holder a synced round ahead must stay inside the transport's window of early frames: 64
// attempts of 16 rounds, (S + 2) · 6 ≤ 64), at most kMaxSurvivorReplicas replicas (the holders
// compare the replicas they count present as a bit mask in a double's exact integers).
inline constexpr int64_t kMaxSurvivorStages = 8;
inline constexpr int64_t kMaxSurvivorReplicas = 52;
bool pipeline_survives_loss(const RunConfig& cfg);

// Checks the layout against the nodes and assigns roles, node i → roles[i]. Every problem at once:
// too few nodes, more stages than layers, an unknown algorithm. With [hdee], node ensemble·D + domain
// is that expert (kind "expert", named "ENSEMBLE.DOMAIN"), with the steps plan_hdee matched to the
// homogeneous budget; cfg.model.vocab_size must then be the run's (the FLOPs count the head). `free_port` is asked for a
// store port when a group's rank-0 node has no TCP host of its own.
Result<std::vector<NodeRole>> assign_roles(const RunConfig& cfg, const std::vector<std::string>& control_endpoints,
                                           const std::function<int()>& free_port);

}  // namespace tw
