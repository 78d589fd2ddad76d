// core/config_warnings.h.
#include "core/config_warnings.h"

#include "core/algorithm.h"
#include "core/joined_nodes.h"
#include "core/run_kind.h"

namespace tw {

std::vector<std::string> config_warnings(const RunConfig& cfg) {
    std::vector<std::string> w;
    if (has_joined_nodes(cfg) && cfg.network.relay_replicas.empty())
        w.push_back("cluster.endpoints names nodes by key, reached through a relay, but network.relay_replicas is "
                    "empty: the simulated clock charges no relay link (docs/relay.md, \"The simulated clock\")");
    const auto algo = named_algorithm(cfg);
    // Rounds every H inner steps (time-budgeted rounds and HDEE experts follow other rules).
    if (!algo || !traits_of(*algo).outer_rounds || cfg.outer.round_time_s > 0 || is_run_kind(cfg, RunKind::kHdee)) return w;
    const int64_t H = cfg.outer.inner_steps, steps = cfg.train.steps;
    if (H <= 0 || steps <= 0) return w;
    const std::string s = std::to_string(steps), h = std::to_string(H);
    if (steps < H) {
        w.push_back("train.steps " + s + " < outer.inner_steps " + h + ": no outer round runs, the replicas never " +
                    "synchronise and the global model evaluated is the untrained one");
    } else if (steps % H != 0) {
        const int64_t last = steps / H * H;
        w.push_back("train.steps " + s + " is not a multiple of outer.inner_steps " + h + ": the last " +
                    std::to_string(steps - last) + " steps are never synchronised; the global model evaluated is " +
                    "the one after the round at step " + std::to_string(last));
    }
    return w;
}

}  // namespace tw
