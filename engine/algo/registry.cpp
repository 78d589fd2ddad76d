// The engine's algorithm registry and make_outer_algorithm: one row per algorithm of core/algorithm.h.
#include "engine/algo/registry.h"

#include <cstdio>
#include <cstdlib>

#include "core/assert.h"
#include "engine/algo/ddp.h"
#include "engine/algo/demo.h"
#include "engine/algo/diloco_outer.h"
#include "engine/algo/noloco.h"
#include "engine/algo/sparseloco.h"
#include "engine/algo/streaming_diloco.h"

namespace tw {
namespace {

// Checks every algorithm shares: the replica's place, the names, H, the guard and the topology.
std::vector<std::string> common_problems(const OuterBuild& b) {
    std::vector<std::string> p;
    const OuterConfig& o = b.cfg.outer;
    if (b.replicas < 1 || b.replica < 0 || b.replica >= b.replicas)
        p.push_back("replica " + std::to_string(b.replica) + " of " + std::to_string(b.replicas) + " is out of range");
    if (!b.names.empty() && b.names.size() != b.params.size())
        p.push_back(std::to_string(b.names.size()) + " parameter names for " + std::to_string(b.params.size()) +
                    " parameters");
    if (o.inner_steps < 1) p.push_back("outer.inner_steps must be at least 1");
    if (o.guard_ratio != 0 && !(o.guard_ratio >= 1))
        p.push_back("outer.guard_ratio must be 0 (off) or at least 1 (below 1 it scales healthy replicas down)");
    // A config built in code skips parse_config's checks: a topology the algorithm does not run
    // must not be ignored silently.
    if (std::string t = topology_problem(b.cfg); !t.empty()) p.push_back(t);
    return p;
}

// The table, built on first use (a registration may come first) and never destroyed: rows outlive
// every static that may hold a pointer to one.
std::deque<OuterRegistration>& table() {
    static auto* t = new std::deque<OuterRegistration>{
        {Algorithm::kNone, nullptr, nullptr, plan_no_rounds},
        {Algorithm::kDdp, nullptr, nullptr, plan_ddp_rounds},
        {Algorithm::kDiLoCo, diloco_problems, make_diloco, plan_diloco_rounds},
        {Algorithm::kSparseLoCo, sparseloco_problems, make_sparseloco, plan_sparseloco_rounds},
        {Algorithm::kStreamingDiLoCo, streaming_diloco_problems, make_streaming_diloco, plan_streaming_diloco_rounds},
        {Algorithm::kNoLoCo, noloco_problems, make_noloco, plan_noloco_rounds},
        {Algorithm::kDeMo, demo_problems, make_demo, plan_demo_rounds},
    };
    return *t;
}

[[noreturn]] void refuse_row(const std::string& name, const std::string& why) {
    std::fprintf(stderr, "register_outer_algorithm(%s): %s\n", name.c_str(), why.c_str());
    std::abort();
}

}  // namespace

Algorithm register_outer_algorithm(OuterRegistration row) {
    const auto i = static_cast<size_t>(row.id);
    const std::string id = "id " + std::to_string(static_cast<int>(row.id));
    if (static_cast<int>(row.id) < 0 || i >= algorithm_table().size())
        refuse_row(id, "core/algorithm.h has no algorithm of that id (register_algorithm first)");
    const AlgorithmTraits& traits = traits_of(row.id);
    const std::string name = std::string("\"") + traits.name + "\"";
    if (outer_registration(row.id)) refuse_row(name, "the algorithm has an engine row already");
    if (traits.outer_rounds && !row.make)
        refuse_row(name, "its traits say it syncs in outer rounds, but the row builds no OuterAlgorithm (make)");
    if (!traits.outer_rounds && row.make)
        refuse_row(name, "its traits say it has no outer rounds, so the worker would never build its OuterAlgorithm");
    table().push_back(row);
    return row.id;
}

const std::deque<OuterRegistration>& outer_registry() { return table(); }

const OuterRegistration* outer_registration(Algorithm a) {
    for (const OuterRegistration& row : table())
        if (row.id == a) return &row;
    return nullptr;
}

Result<std::unique_ptr<OuterAlgorithm>> make_outer_algorithm(const RunConfig& cfg, std::vector<torch::Tensor> params,
                                                             std::vector<std::string> names, int replica,
                                                             int replicas) {
    using R = Result<std::unique_ptr<OuterAlgorithm>>;
    const auto algo = named_algorithm(cfg);
    const OuterRegistration* row = algo ? outer_registration(*algo) : nullptr;
    if (!row || !row->make) {
        std::string built, own;
        for (auto& r : outer_registry()) {
            std::string& list = r.make ? built : own;
            list += (list.empty() ? "" : ", ") + std::string(to_string(r.id));
        }
        return R::error("outer.algorithm \"" + cfg.outer.algorithm + "\" has no outer algorithm (expected " + built +
                        "; " + own + " are the worker's own)");
    }
    OuterBuild b{cfg, std::move(params), std::move(names), replica, replicas};
    auto p = common_problems(b);
    if (row->problems) row->problems(b, p);
    if (!p.empty()) {
        std::string msg = cfg.outer.algorithm + ":";
        for (auto& s : p) msg += "\n  " + s;
        return R::error(msg);
    }
    return row->make(std::move(b));
}

}  // namespace tw
