// Planning a resume; see resume_plan.h.
#include "coordinator/resume_plan.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "core/config_io.h"
#include "core/data_root.h"
#include "core/metric_names.h"
#include "storage/run_liveness.h"

namespace tw {

Result<ResumePlan> plan_resume(RunStore& store, int64_t id, const std::string& file, const std::vector<std::string>& sets,
                               const std::string& data_root, bool force) {
    using R = Result<ResumePlan>;
    if (auto marked = mark_lost_runs(store); !marked) return marked.status();
    auto run = store.get_run(id);
    if (!run) return run.status();
    const std::string which = "run " + std::to_string(id);
    if (run->status == RunStatus::kRunning)
        return R::error(which + " is still running (its coordinator, process " + std::to_string(run->coordinator_pid) +
                        " on " + (run->coordinator_host.empty() ? "an unknown host" : run->coordinator_host) +
                        ", is alive); stop it first");
    if (run->status == RunStatus::kFinished) return R::error(which + " finished; there is nothing to resume");
    auto launch = store.launch(id);
    if (!launch) return launch.status();
    if (launch->toml.empty() || launch->uid.empty())
        return R::error(which + " was started by an older thinwire, which stored no launch config; it cannot be resumed");
    auto stored = parse_config(launch->toml, which + "'s stored config");
    if (!stored) return stored.status();

    ResumePlan plan;
    plan.run = *run;
    plan.cfg = *stored;
    if (!file.empty()) {
        auto given = load_run_plan(file, sets);
        if (!given) return given.status();
        const RunConfig* pick = nullptr;
        for (auto& [variant, c] : given->runs)
            if (c.run.name == stored->run.name) pick = &c;
        if (!pick && given->runs.size() == 1) pick = &given->runs.front().second;
        if (!pick) return R::error(file + " has no run named \"" + stored->run.name + "\" (" + which + "'s name)");
        plan.cfg = *pick;
    } else if (!sets.empty()) {
        auto given = parse_config(launch->toml, which + "'s stored config", sets);
        if (!given) return given.status();
        plan.cfg = *given;
    }
    if (Status s = relative_to_root(plan.cfg, data_root); !s) return s;

    // The stored text re-written by this build, so a run stored with another float notation compares
    // by value.
    const auto before = config_key_values(to_toml(*stored)), after = config_key_values(to_toml(plan.cfg));
    std::map<std::string, std::pair<std::string, std::string>> diff;
    for (auto& [k, v] : before)
        if (auto it = after.find(k); it == after.end() || it->second != v) diff[k] = {v, it == after.end() ? "(none)" : it->second};
    for (auto& [k, v] : after)
        if (!before.count(k)) diff[k] = {"(none)", v};
    for (auto& [k, v] : diff) plan.changed.push_back(k + ": " + v.first + " → " + v.second);
    if (!plan.changed.empty() && !force) {
        std::string list;
        for (auto& c : plan.changed) list += "\n  " + c;
        return R::error("resume of " + which + " refused: the config (hash " + config_hash(plan.cfg) +
                        ") differs from the one it was launched with (hash " + config_hash(*stored) + ") in " +
                        std::to_string(plan.changed.size()) + " key(s):" + list +
                        "\n(--force resumes with the given values)");
    }
    return plan;
}

Result<ResumePoint> resume_point(RunStore& store, int64_t id, const std::vector<std::string>& nodes,
                                 const ResumeRule& rule) {
    using R = Result<ResumePoint>;
    const std::string which = "run " + std::to_string(id);
    auto stored = store.nodes(id);
    if (!stored) return stored.status();
    std::vector<std::string> had;
    for (auto& n : *stored) had.push_back(n.node);
    std::vector<std::string> now = nodes;
    std::sort(had.begin(), had.end());
    std::sort(now.begin(), now.end());
    if (had != now)
        return R::error(which + " ran " + std::to_string(had.size()) + " nodes, this layout has " +
                        std::to_string(now.size()) + " others; a resume needs the same nodes");
    auto launch = store.launch(id);
    if (!launch) return launch.status();
    if (!rule.round_steps.empty()) {
        auto rows = store.metrics(id, metric::kCkptBytes);
        if (!rows) return rows.status();
        // outer step → node → its step at that round's end (a clean stop's mid-round file is not one)
        std::map<int64_t, std::map<std::string, int64_t>> by_round;
        for (const MetricRecord& m : *rows) {
            const auto h = rule.round_steps.find(m.node);
            if (h != rule.round_steps.end() && h->second > 0 && m.step % h->second == 0)
                by_round[m.outer_step][m.node] = m.step;
        }
        for (auto it = by_round.rbegin(); it != by_round.rend(); ++it) {
            if (it->second.size() != nodes.size()) continue;
            ResumePoint at{std::numeric_limits<int64_t>::max(), launch->uid, it->second};
            for (auto& [n, s] : at.node_steps) at.step = std::min(at.step, s);
            return at;
        }
        return R::error(which + " has no round after which every node wrote a checkpoint (train.ckpt_every = 0, or "
                                "it stopped before the first); nothing to resume from");
    }
    if (rule.independent) {
        auto latest = store.latest_step_by_node(id, metric::kCkptBytes);
        if (!latest) return latest.status();
        if (latest->empty())
            return R::error(which + " has no checkpoint of any node (train.ckpt_every = 0, or it stopped before the "
                                    "first); nothing to resume from");
        ResumePoint at{0, launch->uid, {}};
        for (const std::string& n : nodes)
            if (auto it = latest->find(n); it != latest->end()) at.node_steps[n] = it->second;
        at.step = at.node_steps.size() < nodes.size() ? 0 : std::numeric_limits<int64_t>::max();
        for (auto& [n, s] : at.node_steps) at.step = std::min(at.step, s);
        return at;
    }
    if (!rule.spares.empty()) {
        auto rows = store.metrics(id, metric::kCkptBytes);
        if (!rows) return rows.status();
        std::map<int64_t, std::set<std::string>> by_step;
        for (const MetricRecord& m : *rows) by_step[m.step].insert(m.node);
        for (auto it = by_step.rbegin(); it != by_step.rend(); ++it) {
            bool every = true;
            for (const std::string& n : nodes) every = every && (rule.spares.count(n) ? !it->second.count(n) : it->second.count(n) > 0);
            if (every) return ResumePoint{it->first, launch->uid, {}};
        }
        return R::error(which + " has no checkpoint that every replica wrote before a spare took a place "
                                "(train.ckpt_every = 0, or it stopped before the first); nothing to resume from");
    }
    auto step = store.step_every_node_reported(id, metric::kCkptBytes);
    if (!step) return step.status();
    if (!*step)
        return R::error(which + " has no checkpoint that every node wrote (train.ckpt_every = 0, or it stopped before "
                                "the first); nothing to resume from");
    return ResumePoint{**step, launch->uid};
}

}  // namespace tw
