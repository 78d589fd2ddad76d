// The run-kind registry: what the nodes of a run do together. A run of replicas (full ones,
// pipeline replicas, spares: the outer algorithms of core/algorithm.h), a SkipPipe run (stage
// nodes that route micro-batches among themselves, docs/methods.md §8) or an HDEE run (experts
// that train alone and are combined at the end, docs/hdee.md). Everything that differs between
// kinds — how a config selects one, its node count, its roles, its banner, its resume rule,
// whether it survives a lost replica, whether the planner models it, what it adds at the end of
// a run and how its final models are kept — is one row here; no other
// file tests a kind's section (skippipe.enabled(), hdee.enabled()) to decide between kinds.
// Adding a run kind: its row (register_run_kind from its own file), its role builder and its
// worker (engine side, by its node kind).
//
// Pure data, no LibTorch. Rows are registered before main (static initialisers); afterwards the
// table is read-only and every function is thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/layout.h"
#include "core/role.h"
#include "core/network.h"
#include "core/status.h"
#include "core/timeline.h"

namespace tw {

struct ExpertScores;  // core/hdee_mixture.h

// What a kind computes once every node of a finished run has reported (RunKindRow::finish).
struct RunKindFinish {
    std::string metrics_node;                             // the node name its rows are stored under
    std::vector<std::pair<std::string, double>> metrics;  // stored at step 0, name → value
    std::string tables;                                   // printed after the run ("" = nothing)
};

// Built-in kinds keep these values; a kind registered from its own file gets the next free one.
enum class RunKind : int { kReplicas = 0, kSkipPipe = 1, kHdee = 2 };

struct RunKindRow {
    RunKind id{};
    const char* name = "";  // "replicas", "skippipe", "hdee": messages and the run_nodes row's role
    // Whether `cfg` is a run of this kind. The replicas row claims every config no other row does
    // (nullptr); any other row must say.
    bool (*claims)(const RunConfig& cfg) = nullptr;
    // Appends every problem of the kind's own section against the rest of the config, each naming
    // its key. validate_config calls every row's, whatever kind the config asks for (so that a
    // section set for another kind is named); nullptr = none.
    void (*check)(const RunConfig& cfg, std::vector<std::string>& problems) = nullptr;
    int64_t (*nodes_needed)(const RunConfig& cfg) = nullptr;
    // The "too few nodes" problem for `need` nodes, what they are made of included, ending before
    // ", the cluster has N": "SkipPipe needs 4 (skippipe.stages 2 × skippipe.replicas 2)".
    std::string (*too_few_nodes)(const RunConfig& cfg, int64_t need) = nullptr;
    // The nodes' roles, node i → roles[i], on endpoints already checked (at least nodes_needed of
    // them). `free_port` as in assign_roles (core/layout.h).
    Result<std::vector<NodeRole>> (*roles)(const RunConfig& cfg, const std::vector<NodeEndpoints>& eps,
                                           const std::function<int()>& free_port) = nullptr;
    // The banner's description of the run before " on MODE": "hdee, 3 ensembles × 2 domains, one
    // expert node each," — and what its step count counts (" per homogeneous expert", or "").
    std::string (*banner)(const RunConfig& cfg) = nullptr;
    const char* steps_are = "";
    // The resume rule: true = each node resumes from its own latest checkpoint (nodes that train
    // step counts of their own and exchange nothing); false = every node from one common step.
    bool resumes_each_node = false;
    // Whether the run goes on when one of its replicas is lost (survivors; docs/faults.md).
    bool (*survives_loss)(const RunConfig& cfg) = nullptr;
    // The replay of a stored run (runs retime, the workbench's what-if) on `net`: besides the
    // nodes' traces, the first stored value of each metric named in `replay_metrics`, in that
    // order. nullptr = core/timeline.h retime, the replay of outer rounds.
    std::vector<const char*> replay_metrics;
    Result<Timeline> (*replay)(const RunConfig& cfg, const std::vector<TraceNode>& nodes,
                               const std::vector<double>& metrics, const NetworkProfile& net) = nullptr;
    // Why `thinwire plan` does not model runs of this kind ("" = it does).
    const char* not_planned = "";
    // Why its nodes take no spares and are not restarted ("" = they are, as replicas).
    const char* not_replaced = "";
    // The kind's end of a finished run, which the coordinator's session asks of every kind after
    // every node has reported: from what the nodes sent beside their rows (MetricSink::scores, by
    // node), the rows and the text it adds; an error fails the run with its message. nullptr =
    // nothing to add (HDEE: its ensembles combined from the experts' scores, docs/hdee.md).
    Result<RunKindFinish> (*finish)(const RunConfig& cfg, const std::map<std::string, ExpertScores>& scores) = nullptr;
    // Whether each node that sends a final model sends a model of its own (kept as
    // model-NODE.safetensors), rather than its part of the run's one model (the lowest replica
    // that sent all of it: one node, or a pipeline's stages).
    bool model_per_node = false;
};

// Adds a row; aborts naming the clash when its name or id is taken, or when a row of a kind
// other than kReplicas has no `claims`. Returns its id. Call from a static initialiser.
RunKind register_run_kind(RunKindRow row);
// The id a kind registered from its own file should take: the first one no row holds.
RunKind next_run_kind_id();

// Every row: the built-in kinds in enum order, then the registered ones in registration order.
const std::vector<RunKindRow>& run_kind_table();
// The row of the kind `cfg` asks for: the first row other than replicas that claims it, else replicas.
const RunKindRow& run_kind_of(const RunConfig& cfg);
// The row's replay, or core/timeline.h retime for a row without one.
Result<Timeline> replay_run(const RunConfig& cfg, const std::vector<TraceNode>& nodes, const std::vector<double>& metrics,
                            const NetworkProfile& net);
// Every row's not_replaced in table order, for messages: "SkipPipe stage nodes or HDEE experts"
// ("" when every kind's nodes are replaced).
std::string not_replaced_kinds();
inline bool is_run_kind(const RunConfig& cfg, RunKind k) { return run_kind_of(cfg).id == k; }

}  // namespace tw
