// The built-in run kinds and the registry; see run_kind.h.
#include "core/run_kind.h"

#include <cstdio>
#include <cstdlib>
#include <algorithm>

#include "core/algorithm.h"
#include "core/hdee_plan.h"
#include "core/hdee_results.h"
#include "core/metric_names.h"
#include "core/run_kind_parts.h"
#include "core/skippipe.h"

namespace tw {
namespace {

const char* plural(int64_t n) { return n == 1 ? "" : "s"; }

std::string replicas_banner(const RunConfig& cfg) {
    const Algorithm a = algorithm_of(cfg);
    return std::string(a == Algorithm::kNone ? "one node" : to_string(a)) + ", " + std::to_string(cfg.outer.replicas) +
           " replica" + plural(cfg.outer.replicas) + " × " + std::to_string(cfg.cluster.nodes_per_replica) + " node" +
           plural(cfg.cluster.nodes_per_replica);
}

// Rounds of an outer algorithm go on among the replicas present: replicas of full nodes, or
// pipeline replicas where core/layout.h pipeline_survives_loss says so.
bool replicas_survive_loss(const RunConfig& cfg) {
    return (algorithm_traits(cfg).outer_rounds && cfg.cluster.stages == 1) || pipeline_survives_loss(cfg);
}

RunKindRow replicas_row() {
    RunKindRow r;
    r.id = RunKind::kReplicas;
    r.name = "replicas";
    r.check = validate_pipeline;
    r.nodes_needed = replica_nodes_needed;
    r.too_few_nodes = replica_too_few_nodes;
    r.roles = replica_run_roles;
    r.banner = replicas_banner;
    r.survives_loss = replicas_survive_loss;
    return r;
}

RunKindRow skippipe_row() {
    RunKindRow r;
    r.id = RunKind::kSkipPipe;
    r.name = "skippipe";
    r.claims = [](const RunConfig& c) { return c.skippipe.enabled(); };
    r.check = validate_skippipe;
    r.nodes_needed = [](const RunConfig& c) { return c.skippipe.stages * c.skippipe.replicas; };
    r.too_few_nodes = skippipe_too_few_nodes;
    r.roles = skippipe_run_roles;
    r.banner = [](const RunConfig& c) {
        return "skippipe, " + std::to_string(c.skippipe.stages) + " stages × " + std::to_string(c.skippipe.replicas) +
               " replicas, paths of " + std::to_string(c.skippipe.path_stages) + " stages,";
    };
    r.survives_loss = [](const RunConfig&) { return false; };
    r.replay_metrics = {metric::kSkipPipeBlockFwdS, metric::kSkipPipeBlockBwdS, metric::kSkipPipeHeadFwdS,
                        metric::kSkipPipeHeadBwdS};
    r.replay = skippipe_replay;
    r.not_planned = "SkipPipe's schedule needs measured stage times";
    r.not_replaced = "SkipPipe stage nodes";
    return r;
}

// Every expert has finished and sent its scores: the ensembles are plain arithmetic here.
Result<RunKindFinish> hdee_finish(const RunConfig& cfg, const std::map<std::string, ExpertScores>& scores) {
    auto res = combine_hdee(cfg, scores);
    if (!res) return res.status();
    RunKindFinish end;
    end.metrics_node = kHdeeMetricNode;
    end.metrics = hdee_metrics(cfg, *res);
    end.tables = hdee_tables(cfg, *res);
    return end;
}

RunKindRow hdee_row() {
    RunKindRow r;
    r.id = RunKind::kHdee;
    r.name = "hdee";
    r.claims = [](const RunConfig& c) { return c.hdee.enabled(); };
    r.check = validate_hdee;
    r.nodes_needed = [](const RunConfig& c) { return static_cast<int64_t>(hdee_experts(c)); };
    r.too_few_nodes = hdee_too_few_nodes;
    r.roles = hdee_run_roles;
    r.banner = [](const RunConfig& c) {
        return "hdee, " + std::to_string(kHdeeEnsembles) + " ensembles × " + std::to_string(c.hdee.domains.size()) +
               " domains, one expert node each,";
    };
    r.steps_are = " per homogeneous expert";
    // Experts exchange nothing and train step counts of their own.
    r.resumes_each_node = true;
    r.survives_loss = [](const RunConfig&) { return false; };
    r.not_planned = "HDEE experts train without communication";
    r.not_replaced = "HDEE experts";
    r.finish = hdee_finish;
    r.model_per_node = true;  // each expert is a model of its own
    return r;
}

std::vector<RunKindRow>& table() {
    static std::vector<RunKindRow> rows{replicas_row(), skippipe_row(), hdee_row()};
    return rows;
}

[[noreturn]] void refuse(const std::string& why) {
    std::fprintf(stderr, "thinwire: run kind registry: %s\n", why.c_str());
    std::abort();
}

}  // namespace

RunKind next_run_kind_id() {
    int id = 0;
    for (const RunKindRow& r : table()) id = std::max(id, static_cast<int>(r.id) + 1);
    return static_cast<RunKind>(id);
}

RunKind register_run_kind(RunKindRow row) {
    const std::string name = row.name ? row.name : "";
    if (name.empty()) refuse("a row without a name");
    for (const RunKindRow& r : table()) {
        if (name == r.name) refuse("two rows named \"" + name + "\"");
        if (r.id == row.id) refuse("\"" + name + "\" takes the id of \"" + r.name + "\"");
    }
    if (!row.claims || !row.nodes_needed || !row.too_few_nodes || !row.roles || !row.banner || !row.survives_loss)
        refuse("\"" + name + "\" lacks claims, nodes_needed, too_few_nodes, roles, banner or survives_loss");
    table().push_back(row);
    return row.id;
}

const std::vector<RunKindRow>& run_kind_table() { return table(); }

Result<Timeline> replay_run(const RunConfig& cfg, const std::vector<TraceNode>& nodes, const std::vector<double>& metrics,
                            const NetworkProfile& net) {
    const RunKindRow& kind = run_kind_of(cfg);
    if (!kind.replay) return retime(cfg, nodes, net);
    if (metrics.size() != kind.replay_metrics.size())
        return Status::error(std::string("the replay of a ") + kind.name + " run takes " +
                             std::to_string(kind.replay_metrics.size()) + " stored metrics, not " +
                             std::to_string(metrics.size()));
    return kind.replay(cfg, nodes, metrics, net);
}

std::string not_replaced_kinds() {
    std::vector<std::string> who;
    for (const RunKindRow& r : table())
        if (*r.not_replaced) who.push_back(r.not_replaced);
    std::string out;
    for (size_t i = 0; i < who.size(); ++i) out += (i == 0 ? "" : i + 1 == who.size() ? " or " : ", ") + who[i];
    return out;
}

const RunKindRow& run_kind_of(const RunConfig& cfg) {
    const auto& rows = table();
    for (const RunKindRow& r : rows)
        if (r.claims && r.claims(cfg)) return r;
    return rows.front();
}

}  // namespace tw
