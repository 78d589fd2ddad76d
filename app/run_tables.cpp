// `thinwire run`'s tables; see run_tables.h.
#include "app/run_tables.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/metric_names.h"
#include "storage/run_traces.h"

namespace tw::cli {
namespace {

double figure(const WorkerSummary& s, const std::string& k) {
    auto it = s.find(k);
    return it == s.end() ? 0.0 : it->second;
}

}  // namespace

void print_nodes(const SessionResult& r) {
    std::printf("  %-12s %6s %10s %9s %14s %14s %14s %14s %10s %8s\n", "node", "steps", "train loss", "val loss",
                "outer sent B", "outer recv B", "intra sent B", "stage sent B", "sim (s)", "util");
    for (auto& n : r.nodes) {
        // A session that ended early (its store failed, an exception) may hold no figures of a
        // node: its row says so with "-" rather than the table failing.
        const auto it = r.summary.find(n);
        if (it == r.summary.end()) {
            std::printf("  %-12s %6s %10s %9s %14s %14s %14s %14s %10s %8s\n", n.c_str(), "-", "-", "-", "-", "-", "-",
                        "-", "-", "-");
            continue;
        }
        const WorkerSummary& s = it->second;
        const double val = figure(s, metric::kValLoss);
        char val_text[16] = "-";
        if (s.count(metric::kValLoss) && !std::isnan(val)) std::snprintf(val_text, sizeof val_text, "%.4f", val);
        std::printf("  %-12s %6.0f %10.4f %9s %14.0f %14.0f %14.0f %14.0f %10.2f %7.1f%%\n", n.c_str(),
                    figure(s, summary::kSteps), figure(s, metric::kTrainLoss), val_text, figure(s, metric::kBytesOuterSent),
                    figure(s, metric::kBytesOuterRecv), figure(s, metric::kBytesIntraSent), figure(s, metric::kBytesStageSent),
                    figure(s, summary::kSimS), 100 * figure(s, summary::kUtilisation));
    }
}

// SkipPipe's own figures from node (0, 0)'s summary (engine/worker/skippipe_worker.h): the mean
// iteration against the full pipeline's, and the partial models' validation losses against the full one.
void print_skippipe(const SessionResult& r) {
    if (r.nodes.empty() || !r.summary.count(r.nodes.front())) return;
    const WorkerSummary& s = r.summary.at(r.nodes.front());
    const double skip = figure(s, metric::kSkipPipeMeanSkipIterS), full = figure(s, metric::kSkipPipeFullIterS);
    std::printf("  SkipPipe: mean iteration %.4f s (trained on: %.4f s), full pipeline %.4f s: SkipPipe/full %.3f "
                "(%.1f%% %s)\n", skip, figure(s, metric::kSkipPipeMeanIterS), full, skip / full,
                100 * std::fabs(1 - skip / full), skip <= full ? "shorter" : "longer");
    const double val = figure(s, metric::kValLoss);
    for (auto& [name, v] : s)
        if (name.rfind(std::string(metric::kValLossPathPrefix) + "path", 0) == 0)
            std::printf("  %-22s %9.4f  %+8.4f nats vs the full model, %+6.1f%% perplexity\n", name.c_str(), v, v - val,
                        100 * (std::exp(v - val) - 1));
}

// The run's latest simulated clock re-timed on network `profile` from what it stored
// (storage/run_traces.h); NaN where the run cannot be re-timed (the reason is printed once by the
// caller's table as "-").
namespace {
double retimed_s(RunStore& store, int64_t run_id, const std::string& profile) {
    if (run_id <= 0) return NAN;
    auto run = load_run_traces(store, run_id);
    if (!run) return NAN;
    auto t = retime_stored(*run, profile);
    if (!t || t->sim_s.empty()) return NAN;
    return *std::max_element(t->sim_s.begin(), t->sim_s.end());
}
}  // namespace

void print_comparison(RunStore& store, const RunPlan& plan, const std::vector<SessionResult>& results) {
    // The network the runs recorded, then the ones [report] asks for, all re-timed the same way.
    std::vector<std::string> nets{plan.runs.front().second.network.profile};
    for (auto& n : plan.report_networks)
        if (std::find(nets.begin(), nets.end(), n) == nets.end()) nets.push_back(n);
    // Every run is re-timed from the store, pipelines included (core/timeline.h); a run that cannot be
    // (replicas of several nodes under an outer algorithm) shows "-". util is the mean over nodes
    // on the recorded network. util: compute / simulated time (pipeline bubbles and transfers count as idle); sync util:
    // compute / (compute + exposed outer-sync time), the paper's utilisation.
    std::printf("\n%-26s %6s %9s %16s %14s %14s %7s %9s", "run", "id", "val loss", "sent/replica B", "outer B",
                "stage B", "util", "sync util");
    for (auto& n : nets) std::printf(" %14s", ("sim s " + n).c_str());
    std::printf("\n");
    for (size_t i = 0; i < results.size(); ++i) {
        const RunConfig& c = plan.runs[i].second;
        const SessionResult& r = results[i];
        double val = NAN, outer = 0, stage = 0, util = 0, sync_util = 0, val_step = -2;
        for (auto& [node, s] : r.summary) {
            // The latest evaluation: with faults the lowest live replica evaluates, so several have.
            const double at = s.count(summary::kValStep) ? s.at(summary::kValStep) : -1;
            if (s.count(metric::kValLoss) && !std::isnan(s.at(metric::kValLoss)) && at >= val_step)
                val = s.at(metric::kValLoss), val_step = at;
            outer += figure(s, metric::kBytesOuterSent) + figure(s, metric::kBytesIntraSent);
            stage += figure(s, metric::kBytesStageSent);
            util += figure(s, summary::kUtilisation) / static_cast<double>(r.summary.size());
            sync_util += (s.count(summary::kSyncUtilisation) ? figure(s, summary::kSyncUtilisation) : figure(s, summary::kUtilisation)) /
                         static_cast<double>(r.summary.size());
        }
        std::printf("%-26s %6lld %9.4f %16.0f %14.0f %14.0f %6.1f%% %8.1f%%", c.run.name.c_str(), (long long)r.run_id,
                    val, (outer + stage) / static_cast<double>(c.outer.replicas), outer, stage, 100 * util,
                    100 * sync_util);
        for (size_t k = 0; k < nets.size(); ++k) {
            const double t = retimed_s(store, r.run_id, nets[k]);
            if (std::isnan(t)) std::printf(" %14s", "-");
            else std::printf(" %14.2f", t);
        }
        std::printf("\n");
    }
}

void print_failures(const std::string& title, const std::vector<std::pair<std::string, std::string>>& failed) {
    std::fprintf(stderr, "%s\n  %-28s %s\n", title.c_str(), "run", "why");
    for (auto& [name, why] : failed) {
        std::string line;
        size_t at = 0;
        while (at <= why.size()) {
            size_t end = why.find('\n', at);
            if (end == std::string::npos) end = why.size();
            std::string part = why.substr(at, end - at);
            part.erase(0, part.find_first_not_of(' '));
            if (!part.empty()) line += (line.empty() ? "" : "; ") + part;
            at = end + 1;
        }
        std::fprintf(stderr, "  %-28s %s\n", name.c_str(), line.c_str());
    }
}

}  // namespace tw::cli
