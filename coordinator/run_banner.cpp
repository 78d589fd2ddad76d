// The run's opening lines; see run_banner.h.
#include "coordinator/run_banner.h"

#include <cstdarg>
#include <cstdio>

#include "core/run_kind.h"
#include "core/hdee_results.h"

namespace tw {
namespace {

std::string format(const char* fmt, ...) {
    va_list a;
    va_start(a, fmt);
    va_list b;
    va_copy(b, a);
    const int n = std::vsnprintf(nullptr, 0, fmt, a);
    va_end(a);
    std::string out(n > 0 ? static_cast<size_t>(n) : 0, '\0');
    if (n > 0) std::vsnprintf(out.data(), out.size() + 1, fmt, b);
    va_end(b);
    return out;
}

const char* plural(int64_t n) { return n == 1 ? "" : "s"; }

}  // namespace

std::vector<std::string> run_banner(const RunConfig& cfg, const RunBannerFacts& f) {
    std::vector<std::string> out;
    const long long id = f.run_id, threads = cfg.run.threads, steps = cfg.train.steps;
    const char* mode = cfg.cluster.mode.c_str();
    const char* name = cfg.run.name.c_str();
    const RunKindRow& kind = run_kind_of(cfg);
    out.push_back(format("run %lld \"%s\": %s on %s (%d node%s, %lld thread%s each), %lld steps%s", id, name,
                         kind.banner(cfg).c_str(), mode, f.nodes, plural(f.nodes), threads, plural(threads), steps,
                         kind.steps_are));
    if (f.resumed && f.own_steps) {
        out.push_back(format("run %lld resumes: %s", id,
                             f.independent ? "each expert from its own latest checkpoint"
                                           : "after the latest round every replica checkpointed, each at its own step"));
        for (const auto& [node, step] : f.node_steps)
            out.push_back(format("  %-12s %s", node.c_str(),
                                 step < 0 ? "starts over (no checkpoint)" : ("at step " + std::to_string(step)).c_str()));
    } else if (f.resume_step >= 0) {
        out.push_back(format("run %lld resumes at step %lld (%s)", id, (long long)f.resume_step,
                             cfg.cluster.spares > 0 ? "every replica's latest common checkpoint before a spare took a "
                                                      "place; the spares stand by again"
                                                    : "every node's latest common checkpoint"));
    }
    return out;
}

}  // namespace tw
