// The engine's algorithm registry and make_outer_algorithm: one row per algorithm of core/algorithm.h.
#include "engine/algo/registry.h"

#include "core/assert.h"
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

}  // namespace

const std::vector<OuterRegistration>& outer_registry() {
    static const std::vector<OuterRegistration> table = {
        {Algorithm::kNone, nullptr, nullptr},
        {Algorithm::kDdp, nullptr, nullptr},
        {Algorithm::kDiLoCo, diloco_problems, make_diloco},
        {Algorithm::kSparseLoCo, sparseloco_problems, make_sparseloco},
        {Algorithm::kStreamingDiLoCo, streaming_diloco_problems, make_streaming_diloco},
        {Algorithm::kNoLoCo, noloco_problems, make_noloco},
        {Algorithm::kDeMo, demo_problems, make_demo},
    };
    return table;
}

const OuterRegistration& outer_registration(Algorithm a) {
    const auto& t = outer_registry();
    const auto i = static_cast<size_t>(a);
    TW_ASSERT(i < t.size() && t[i].id == a);  // one row per algorithm, in enum order
    return t[i];
}

Result<std::unique_ptr<OuterAlgorithm>> make_outer_algorithm(const RunConfig& cfg, std::vector<torch::Tensor> params,
                                                             std::vector<std::string> names, int replica,
                                                             int replicas) {
    using R = Result<std::unique_ptr<OuterAlgorithm>>;
    const auto algo = parse_algorithm(cfg.outer.algorithm);
    if (!algo || !outer_registration(*algo).make) {
        std::string built, own;
        for (auto& row : outer_registry()) {
            std::string& list = row.make ? built : own;
            list += (list.empty() ? "" : ", ") + std::string(to_string(row.id));
        }
        return R::error("outer.algorithm \"" + cfg.outer.algorithm + "\" has no outer algorithm (expected " + built +
                        "; " + own + " are the worker's own)");
    }
    const OuterRegistration& row = outer_registration(*algo);
    OuterBuild b{cfg, std::move(params), std::move(names), replica, replicas};
    auto p = common_problems(b);
    if (row.problems) row.problems(b, p);
    if (!p.empty()) {
        std::string msg = cfg.outer.algorithm + ":";
        for (auto& s : p) msg += "\n  " + s;
        return R::error(msg);
    }
    return row.make(std::move(b));
}

}  // namespace tw
