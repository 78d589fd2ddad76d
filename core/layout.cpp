// Role assignment; see layout.h for the endpoint convention.
#include "core/layout.h"

#include <algorithm>

#include "core/algorithm.h"
#include "core/hdee_plan.h"
#include "core/run_kind_parts.h"
#include "core/run_kind.h"

namespace tw {

Result<NodeEndpoints> derive_endpoints(const std::string& control) {
    NodeEndpoints e;
    e.control = control;
    if (control.rfind("inproc://", 0) == 0 || control.rfind("ipc://", 0) == 0) {
        e.metrics = control + ".pub";
        e.data = control + ".data";
        return e;
    }
    if (control.rfind("tcp://", 0) == 0) {
        const auto colon = control.rfind(':');
        const std::string host = control.substr(6, colon == std::string::npos ? 0 : colon - 6);
        int port = 0;
        try {
            port = std::stoi(control.substr(colon + 1));
        } catch (...) {
            port = 0;
        }
        if (colon == std::string::npos || colon < 6 || host.empty() || port <= 0 || port > 65532)
            return Result<NodeEndpoints>::error("endpoint " + control +
                                                ": expected tcp://HOST:PORT with a port below 65533 (P..P+3 are used)");
        const std::string base = "tcp://" + host + ":";
        e.metrics = base + std::to_string(port + 1);
        e.data = base + std::to_string(port + 2);
        e.store_host = host == "*" || host == "0.0.0.0" ? "127.0.0.1" : host;
        e.store_port = port + 3;
        return e;
    }
    return Result<NodeEndpoints>::error("endpoint " + control + ": expected inproc://, ipc:// or tcp://");
}

int64_t nodes_needed(const RunConfig& cfg) { return run_kind_of(cfg).nodes_needed(cfg); }

int64_t replica_nodes_needed(const RunConfig& cfg) {
    const int64_t pipes = cfg.pipeline_replicas();
    return (cfg.outer.replicas - pipes) * cfg.cluster.nodes_per_replica + pipes * cfg.cluster.stages + cfg.cluster.spares;
}

int pipeline_mesh_rank(const RunConfig& cfg, int replica, int stage) {
    int rank = 0;
    for (int q = 0; q < replica; ++q) rank += cfg.is_pipeline_replica(q) ? static_cast<int>(cfg.cluster.stages) : 1;
    return rank + (cfg.is_pipeline_replica(replica) ? stage : 0);
}

namespace {

// Roles of a run with pipeline replicas: full replicas of one node and pipelines of S nodes, all
// in one mesh (activations hop between stages, stage-wise syncs span replicas).
std::vector<NodeRole> pipeline_roles(const RunConfig& cfg, const std::vector<NodeEndpoints>& eps) {
    const int R = static_cast<int>(cfg.outer.replicas), S = static_cast<int>(cfg.cluster.stages);
    std::vector<NodeRole> roles;
    std::vector<std::string> mesh;
    for (int r = 0; r < R; ++r) {
        const bool pipe = cfg.is_pipeline_replica(r);
        for (int s = 0; s < (pipe ? S : 1); ++s) {
            NodeRole role;
            role.name = "replica-" + std::to_string(r) + (pipe ? "." + std::to_string(s) : "");
            role.kind = pipe ? NodeKind::kPipeline : NodeKind::kFull;
            role.replica = r;
            role.replicas = R;
            role.rank = s;
            role.replica_nodes = pipe ? S : 1;
            role.stage = pipe ? s : -1;
            role.mesh_rank = static_cast<int>(roles.size());
            mesh.push_back(eps[roles.size()].data);
            roles.push_back(role);
        }
    }
    for (auto& role : roles) role.mesh_endpoints = mesh;
    return roles;
}

}  // namespace

// Roles of a SkipPipe run (docs/methods.md §8): S·N nodes, node (s, n) at index n·S + s holds stage s for
// replica n; all of them are one data-plane mesh (micro-batches hop to any replica's next stage, and
// the N holders of a stage average its gradients every step).
Result<std::vector<NodeRole>> skippipe_run_roles(const RunConfig& cfg, const std::vector<NodeEndpoints>& eps,
                                                 const std::function<int()>&) {
    const int S = static_cast<int>(cfg.skippipe.stages), N = static_cast<int>(cfg.skippipe.replicas);
    std::vector<NodeRole> roles;
    std::vector<std::string> mesh;
    for (int n = 0; n < N; ++n)
        for (int s = 0; s < S; ++s) {
            NodeRole role;
            role.name = "replica-" + std::to_string(n) + "." + std::to_string(s);
            role.kind = NodeKind::kSkipPipe;
            role.replica = n;
            role.replicas = N;
            role.rank = s;
            role.replica_nodes = S;
            role.stage = s;
            role.mesh_rank = static_cast<int>(roles.size());
            mesh.push_back(eps[roles.size()].data);
            roles.push_back(role);
        }
    for (auto& role : roles) role.mesh_endpoints = mesh;
    return roles;
}

namespace {

// Roles of an HDEE layout: one expert node per (ensemble, domain), no mesh, no group.
std::vector<NodeRole> expert_roles(const RunConfig& cfg, const std::vector<HdeeEnsemble>& plan) {
    const size_t D = cfg.hdee.domains.size();
    std::vector<NodeRole> roles;
    for (size_t e = 0; e < plan.size(); ++e)
        for (size_t d = 0; d < D; ++d) {
            NodeRole role;
            role.name = hdee_expert_name(cfg, e, d);
            role.kind = NodeKind::kExpert;
            role.replica = static_cast<int>(roles.size());
            role.replicas = static_cast<int>(plan.size() * D);
            role.expert_ensemble = static_cast<int>(e);
            role.expert_domain = static_cast<int>(d);
            role.expert_d_ff = plan[e].d_ff[d];
            role.expert_steps = plan[e].steps[d];
            roles.push_back(role);
        }
    return roles;
}

}  // namespace

Result<std::vector<NodeRole>> assign_roles(const RunConfig& cfg, const std::vector<std::string>& control_endpoints,
                                           const std::function<int()>& free_port) {
    const RunKindRow& kind = run_kind_of(cfg);
    std::vector<std::string> p;
    const int64_t need = kind.nodes_needed(cfg);
    if (static_cast<int64_t>(control_endpoints.size()) < need)
        p.push_back("too few nodes: " + kind.too_few_nodes(cfg, need) + ", the cluster has " +
                    std::to_string(control_endpoints.size()));
    const auto algo = named_algorithm(cfg);
    if (!algo) p.push_back("outer.algorithm \"" + cfg.outer.algorithm + "\" is unknown");
    std::vector<NodeEndpoints> eps;
    for (auto& c : control_endpoints) {
        auto e = derive_endpoints(c);
        if (!e) p.push_back(e.message());
        else eps.push_back(*e);
    }
    if (!p.empty()) {
        std::string msg = "the layout does not fit the cluster: " + p[0];
        for (size_t i = 1; i < p.size(); ++i) msg += "\n  " + p[i];
        return Result<std::vector<NodeRole>>::error(msg);
    }
    return kind.roles(cfg, eps, free_port);
}

namespace {
// The pipelines and spares a "too few nodes" count includes, as ", P of them pipelines of S stages + K spare(s)".
std::string pipelines_and_spares(const RunConfig& cfg) {
    return (cfg.pipeline_replicas() > 0 ? ", " + std::to_string(cfg.pipeline_replicas()) + " of them pipelines of " +
                                              std::to_string(cfg.cluster.stages) + " stages"
                                        : std::string()) +
           (cfg.cluster.spares > 0 ? " + " + std::to_string(cfg.cluster.spares) + " spare(s)" : std::string());
}
}  // namespace

std::string replica_too_few_nodes(const RunConfig& cfg, int64_t need) {
    return "the layout needs " + std::to_string(need) + " (" + std::to_string(cfg.outer.replicas) + " replicas × " +
           std::to_string(cfg.cluster.nodes_per_replica) + " nodes × 1 stages" + pipelines_and_spares(cfg) + ")";
}

std::string skippipe_too_few_nodes(const RunConfig& cfg, int64_t need) {
    return "SkipPipe needs " + std::to_string(need) + " (skippipe.stages " + std::to_string(cfg.skippipe.stages) +
           " × skippipe.replicas " + std::to_string(cfg.skippipe.replicas) + ")";
}

std::string hdee_too_few_nodes(const RunConfig& cfg, int64_t need) {
    return "the layout needs " + std::to_string(need) + " (" + std::to_string(kHdeeEnsembles) + " ensembles × " +
           std::to_string(cfg.hdee.domains.size()) + " domains, one expert node each" + pipelines_and_spares(cfg) + ")";
}

Result<std::vector<NodeRole>> hdee_run_roles(const RunConfig& cfg, const std::vector<NodeEndpoints>&,
                                             const std::function<int()>&) {
    auto plan = plan_hdee(cfg);
    if (!plan) return Result<std::vector<NodeRole>>::error("the layout does not fit the cluster: " + plan.message());
    return expert_roles(cfg, *plan);
}

Result<std::vector<NodeRole>> replica_run_roles(const RunConfig& cfg, const std::vector<NodeEndpoints>& eps,
                                                const std::function<int()>& free_port) {
    if (cfg.cluster.stages > 1) return pipeline_roles(cfg, eps);
    const int R = static_cast<int>(cfg.outer.replicas), n = static_cast<int>(cfg.cluster.nodes_per_replica);
    const auto algo = named_algorithm(cfg);
    auto store_of = [&](int node) {
        GlooGroupSpec g;
        g.host = eps[node].store_host.empty() ? "127.0.0.1" : eps[node].store_host;
        g.port = eps[node].store_host.empty() ? free_port() : eps[node].store_port;
        return g;
    };
    const bool ddp = algo == Algorithm::kDdp;
    // DDP: one gradient group of all nodes; DiLoCo: one per replica of several nodes.
    GlooGroupSpec world_group;
    if (ddp && R * n > 1) world_group = store_of(0);
    const int spares = static_cast<int>(cfg.cluster.spares);
    std::vector<NodeRole> roles(static_cast<size_t>(R * n + spares));
    for (int r = 0; r < R; ++r) {
        GlooGroupSpec replica_group;
        if (!ddp && n > 1) replica_group = store_of(r * n);
        for (int k = 0; k < n; ++k) {
            NodeRole& role = roles[static_cast<size_t>(r * n + k)];
            role.name = "replica-" + std::to_string(r) + (n > 1 ? "." + std::to_string(k) : "");
            role.replica = r;
            role.replicas = R;
            role.rank = k;
            role.replica_nodes = n;
            role.grad_group = ddp ? world_group : replica_group;
            role.grad_group.rank = ddp ? r * n + k : k;
            role.grad_group.size = ddp ? R * n : n;
            if (role.grad_group.host.empty()) role.grad_group.size = 1;
        }
    }
    // The ZeroMQ mesh: every node under DDP (it carries the per-step clock exchange), the replica
    // leaders under DiLoCo (they exchange pseudo-gradients).
    // Spares (cluster.spares, docs/faults.md) stand by as the mesh's last members, ranks R.., each
    // ready to take a lost replica's place; until then they are nobody's replica.
    std::vector<std::string> mesh;
    for (int i = 0; i < R * n; ++i)
        if (ddp || i % n == 0) mesh.push_back(eps[static_cast<size_t>(i)].data);
    for (int k = 0; k < spares; ++k) {
        mesh.push_back(eps[static_cast<size_t>(R * n + k)].data);
        NodeRole& role = roles[static_cast<size_t>(R * n + k)];
        role.name = "spare-" + std::to_string(k);
        role.kind = NodeKind::kSpare;
        role.replicas = R;
    }
    for (int i = 0; i < R * n + spares; ++i) {
        NodeRole& role = roles[static_cast<size_t>(i)];
        if (algo == Algorithm::kNone) continue;
        role.mesh_endpoints = mesh;
        role.mesh_rank = i >= R * n ? R + (i - R * n) : ddp ? i : (i % n == 0 ? i / n : -1);
    }
    return roles;
}

int64_t constraint_rank(const RunConfig& cfg, int64_t replica, int64_t stage) {
    const int64_t S = cfg.cluster.stages;
    if (!cfg.is_pipeline_replica(replica)) return cfg.pipeline.has("ad5") ? run_constraint_rank(cfg, stage) : 0;
    int64_t k = 0;
    for (int64_t b = stage; b < S - 1; ++b) {
        const int64_t kb = cfg.boundary_rank(replica, b);
        if (kb > 0) k = k == 0 ? kb : std::min(k, kb);
    }
    return k;
}

int64_t run_constraint_rank(const RunConfig& cfg, int64_t stage) {
    int64_t k = 0;
    for (int64_t r = 0; r < cfg.outer.replicas; ++r) {
        if (!cfg.is_pipeline_replica(r)) continue;
        const int64_t kr = constraint_rank(cfg, r, stage);
        if (kr > 0) k = k == 0 ? kr : std::min(k, kr);
    }
    return k;
}

bool run_has_compression(const RunConfig& cfg) {
    for (int64_t r = 0; r < cfg.outer.replicas; ++r)
        for (int64_t b = 0; b + 1 < cfg.cluster.stages; ++b)
            if (cfg.boundary_rank(r, b) > 0) return true;
    return false;
}

bool pipeline_survives_loss(const RunConfig& cfg) {
    return cfg.cluster.stages > 1 && cfg.cluster.stages <= kMaxSurvivorStages &&
           cfg.outer.replicas <= kMaxSurvivorReplicas && algorithm_traits(cfg).outer_rounds &&
           cfg.pipeline.routing == "fixed" && is_run_kind(cfg, RunKind::kReplicas);
}

}  // namespace tw
