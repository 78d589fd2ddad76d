// The fault schedule; see fault_schedule.h for what an event means.
#include "core/fault_schedule.h"
#include "core/number_text.h"
#include "core/run_kind.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

#include "core/algorithm.h"
#include "core/layout.h"

namespace tw {
namespace {

// "kill 2 at 40 rejoin 80" → the event, or the reason it is not one.
Result<FaultEvent> parse_event(const std::string& text) {
    using R = Result<FaultEvent>;
    std::istringstream in(text);
    std::vector<std::string> w;
    for (std::string t; in >> t;) w.push_back(t);
    const std::string usage =
        " (expected \"kill R at S [rejoin T]\", \"disconnect R at S [rejoin T]\", \"pause R at S until T\" or "
        "\"slow R at S until T x K\")";
    auto number = [&](size_t i, int64_t& out) {
        if (i >= w.size() || w[i].empty() || w[i].size() > 15 || w[i].find_first_not_of("0123456789") != std::string::npos)
            return false;
        out = std::stoll(w[i]);
        return true;
    };
    FaultEvent e;
    if (w.empty()) return R::error("an empty event" + usage);
    if (w[0] == "kill") e.kind = FaultKind::kKill;
    else if (w[0] == "disconnect") e.kind = FaultKind::kDisconnect;
    else if (w[0] == "pause") e.kind = FaultKind::kPause;
    else if (w[0] == "slow") e.kind = FaultKind::kSlow;
    else return R::error("\"" + w[0] + "\" is not a fault" + usage);
    int64_t r = 0;
    if (!number(1, r) || w.size() < 4 || w[2] != "at" || !number(3, e.at_step)) return R::error("cannot read it" + usage);
    e.replica = static_cast<int>(r);
    const bool down = e.kind == FaultKind::kKill || e.kind == FaultKind::kDisconnect;
    size_t i = 4;
    if (down) {
        if (w.size() > i) {
            if (w[i] != "rejoin" || !number(i + 1, e.until_step)) return R::error("cannot read it" + usage);
            i += 2;
        }
    } else {
        if (w.size() <= i || w[i] != "until" || !number(i + 1, e.until_step)) return R::error("needs \"until T\"" + usage);
        i += 2;
        if (e.kind == FaultKind::kSlow) {
            if (w.size() <= i + 1 || w[i] != "x") return R::error("needs \"x K\"" + usage);
            char* end = nullptr;
            e.factor = std::strtod(w[i + 1].c_str(), &end);
            if (!end || *end || !(e.factor > 0) || !std::isfinite(e.factor) || e.factor > 1e6)
                return R::error("factor \"" + w[i + 1] + "\" is not a number in (0, 1e6]");
            i += 2;
        }
    }
    if (i != w.size()) return R::error("unexpected \"" + w[i] + "\"" + usage);
    if (e.until_step != 0 && e.until_step <= e.at_step)
        return R::error("step " + std::to_string(e.until_step) + " is not after step " + std::to_string(e.at_step));
    return e;
}

int64_t round_up(int64_t s, int64_t period) { return (s + period - 1) / period * period; }

}  // namespace

const char* to_string(FaultKind k) {
    switch (k) {
        case FaultKind::kKill: return "kill";
        case FaultKind::kDisconnect: return "disconnect";
        case FaultKind::kPause: return "pause";
        case FaultKind::kSlow: return "slow";
    }
    return "?";
}

namespace {
std::string six_digits(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v);
    return b;
}
}  // namespace

std::string FaultEvent::stall_text(double stall_s) const {
    return text() + (churn ? " (churn)" : "") + ": stalls for " + six_digits(stall_s) + " simulated s";
}

std::string FaultEvent::slow_text() const {
    return text() + (churn ? " (churn)" : "") + ": its steps take " + six_digits(factor) + "x their time";
}

std::string FaultEvent::text() const {
    std::string t = std::string(to_string(kind)) + " " + std::to_string(replica) + " at " + std::to_string(at_step);
    if (kind == FaultKind::kKill || kind == FaultKind::kDisconnect) {
        if (until_step > 0) t += " rejoin " + std::to_string(until_step);
    } else {
        t += " until " + std::to_string(until_step);
    }
    if (kind == FaultKind::kSlow) t += " x " + number_text(factor);
    return t;
}

void FaultSchedule::problems(const RunConfig& c, std::vector<std::string>& p) {
    const bool faults = c.faults.enabled();
    const auto algo = named_algorithm(c);
    const bool outer = algo && traits_of(*algo).outer_rounds;
    if (c.cluster.min_replicas > c.outer.replicas)
        p.push_back("cluster.min_replicas " + std::to_string(c.cluster.min_replicas) + " exceeds outer.replicas " +
                    std::to_string(c.outer.replicas));
    if (c.outer.round_deadline_s > 0 && !outer)
        p.push_back("outer.round_deadline_s: only outer algorithms have rounds to leave a straggler out of");
    // Pipeline replicas are left out as a whole, by the rounds that go on among the replicas present.
    if (c.outer.round_deadline_s > 0 && c.cluster.stages > 1 && outer && !pipeline_survives_loss(c))
        p.push_back("outer.round_deadline_s: pipeline replicas are left out of a round only where the rounds go on "
                    "among the replicas present (pipeline.routing = \"fixed\", at most " +
                    std::to_string(kMaxSurvivorStages) + " stages and " + std::to_string(kMaxSurvivorReplicas) +
                    " replicas; docs/faults.md)");
    if (c.cluster.spares > 0) {
        const std::string what = "cluster.spares " + std::to_string(c.cluster.spares) + ": ";
        if (!outer)
            p.push_back(what + "spares take the place of lost replicas of an outer algorithm, not of \"" + c.outer.algorithm + "\"");
        else if (c.cluster.stages > 1 || c.cluster.nodes_per_replica > 1 || *run_kind_of(c).not_replaced)
            p.push_back(what + "spares stand in for replicas of one node only (no pipelines, Gloo groups, " +
                        not_replaced_kinds() + ")");
        if (c.outer.round_time_s > 0) p.push_back(what + "time-budgeted rounds (outer.round_time_s) take no spares");
        if (c.outer.replicas + c.cluster.spares > 64)
            p.push_back(what + "outer.replicas + cluster.spares must be at most 64 (the transport's member masks)");
    }
    if (c.cluster.restart_lost > 0) {
        const std::string what = "cluster.restart_lost " + std::to_string(c.cluster.restart_lost) + ": ";
        if (c.cluster.mode != "local" && c.cluster.mode != "remote")
            p.push_back(what + "a lost node comes back as a fresh process: its coordinator starts it (cluster.mode = "
                               "\"local\") or its operator does (\"remote\"); threads have no process to restart");
        if (!outer)
            p.push_back(what + "restarted nodes rejoin the rounds of an outer algorithm, not \"" + c.outer.algorithm + "\"");
        else if (const char* who = run_kind_of(c).not_replaced; *who)
            p.push_back(what + "restarts full and pipeline replicas, not " + who);
        else if (c.cluster.stages > 1 && !pipeline_survives_loss(c))
            p.push_back(what + "this pipeline run cannot go on without a replica (pipeline.routing \"" + c.pipeline.routing +
                        "\"; docs/faults.md), so no replica is lost to restart");
        else if (c.cluster.stages > 1 && c.cluster.nodes_per_replica > 1)
            p.push_back(what + "in a run with pipeline replicas, full replicas of one node only");
        if (c.cluster.spares > 0) p.push_back(what + "a lost replica comes back either restarted or through a spare, not both");
        if (faults) p.push_back(what + "a fault schedule's kills say themselves whether a replica comes back");
        if (c.outer.round_time_s > 0) p.push_back(what + "time-budgeted rounds (outer.round_time_s) restart no replica");
        if (c.outer.replicas > 64) p.push_back(what + "at most 64 replicas (the admission's member mask)");
    }
    if (!faults) return;
    if (!outer) {
        p.push_back("[faults]: faults act on the replicas of an outer algorithm (" +
                    algorithm_names_where([](const AlgorithmTraits& t) { return t.outer_rounds; }) + "), not on \"" +
                    c.outer.algorithm + "\"");
        return;
    }
    if (c.cluster.stages > 1) {
        // Runs with pipeline replicas: every kind of event. Their rounds drop a replica that is down by
        // the schedule (engine/worker/stage_rounds.h); one that rejoins takes each stage's state from
        // replica 0's holder of it (engine/worker/stage_recovery.h).
        if (!pipeline_survives_loss(c))
            p.push_back("[faults]: this pipeline run cannot go on without a replica (pipeline.routing \"" +
                        c.pipeline.routing + "\"; docs/faults.md), so it takes no fault schedule");
        for (auto& text : c.faults.events) {
            auto e = parse_event(text);
            if (!e) continue;  // named below
            if ((e->kind == FaultKind::kKill || e->kind == FaultKind::kDisconnect) && e->replica == 0)
                p.push_back("faults.events \"" + text + "\": replica 0 evaluates the global model; a run with pipeline "
                            "replicas does not go on without it");
        }
    }
    if (c.outer.round_time_s > 0) p.push_back("[faults]: time-budgeted rounds (outer.round_time_s) have no fault schedule yet");
    if (c.faults.churn_mtbf_steps > 0 && c.faults.churn_down_steps < 1)
        p.push_back("faults.churn.down_steps must be at least 1 with faults.churn.mtbf_steps set");
    for (auto& text : c.faults.events) {
        auto e = parse_event(text);
        if (!e) {
            p.push_back("faults.events \"" + text + "\": " + e.message());
            continue;
        }
        if (e->replica >= c.outer.replicas)
            p.push_back("faults.events \"" + text + "\": no replica " + std::to_string(e->replica) + " (outer.replicas " +
                        std::to_string(c.outer.replicas) + ")");
        if (e->at_step < 1 || e->at_step >= c.train.steps)
            p.push_back("faults.events \"" + text + "\": step " + std::to_string(e->at_step) + " outside 1.." +
                        std::to_string(c.train.steps - 1));
    }
}

Result<FaultSchedule> FaultSchedule::create(const RunConfig& cfg) {
    std::vector<std::string> p;
    problems(cfg, p);
    if (!p.empty()) return Result<FaultSchedule>::error(p[0]);
    FaultSchedule s;
    s.period_ = round_period(cfg);
    s.steps_ = cfg.train.steps;
    s.replicas_ = static_cast<int>(cfg.outer.replicas);
    for (auto& text : cfg.faults.events) s.events_.push_back(parse_event(text).value());
    const auto sort = [&s] {
        std::stable_sort(s.events_.begin(), s.events_.end(), [](const FaultEvent& a, const FaultEvent& b) {
            return a.at_step != b.at_step ? a.at_step < b.at_step : a.replica < b.replica;
        });
    };
    sort();
    const auto& f = cfg.faults;
    if (f.churn_mtbf_steps > 0) {
        for (int r = 0; r < s.replicas_; ++r) {
            // With pipeline replicas churn never strikes replica 0: it evaluates the global model,
            // and the run does not go on without it.
            if (cfg.cluster.stages > 1 && r == 0) continue;
            std::mt19937_64 gen(static_cast<uint64_t>(f.churn_seed) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(r) + 1);
            int64_t t = 0;
            for (;;) {
                const double u = static_cast<double>(gen() >> 11) * 0x1.0p-53;  // [0, 1)
                t += std::max<int64_t>(1, static_cast<int64_t>(std::ceil(-std::log1p(-u) * static_cast<double>(f.churn_mtbf_steps))));
                if (t >= s.steps_) break;
                FaultEvent e;
                e.kind = FaultKind::kKill;
                e.replica = r;
                e.at_step = t;
                e.until_step = t + f.churn_down_steps;
                e.churn = true;
                // Churn never breaks the quorum: every round the failure spans keeps min_replicas.
                const int64_t back = s.rejoin_round(e) < 0 ? s.steps_ : s.rejoin_round(e);
                bool ok = s.down_at(r, t) == nullptr;
                for (int64_t b = round_up(t + 1, s.period_); ok && b <= back && b <= s.steps_; b += s.period_)
                    ok = static_cast<int64_t>(s.members(b).size()) - 1 >= cfg.cluster.min_replicas;
                if (ok) {
                    s.events_.push_back(e);
                    sort();
                }
                t = back;  // the next failure comes after it is back
            }
        }
    }
    return s;
}

int64_t FaultSchedule::rejoin_round(const FaultEvent& e) const {
    if (e.until_step <= 0) return -1;
    const int64_t b = round_up(std::max(e.until_step, e.at_step + 1), period_);
    return b > steps_ ? -1 : b;
}

const FaultEvent* FaultSchedule::down_at(int r, int64_t step) const {
    for (auto& e : events_) {
        if (e.replica != r || (e.kind != FaultKind::kKill && e.kind != FaultKind::kDisconnect)) continue;
        if (step <= e.at_step) continue;
        const int64_t back = rejoin_round(e);
        if (back < 0 || step <= back) return &e;  // down through the round it rejoins after
    }
    return nullptr;
}

bool FaultSchedule::in_round(int r, int64_t round_step) const { return down_at(r, round_step) == nullptr; }

int64_t FaultSchedule::rounds_taken(int r, int64_t from, int64_t to, int64_t period) const {
    int64_t n = 0;
    for (int64_t s = (from / period + 1) * period; period > 0 && s <= to; s += period) n += in_round(r, s) ? 1 : 0;
    return n;
}

bool FaultSchedule::gone_for_good(int r, int64_t step) const {
    const FaultEvent* e = down_at(r, step);
    return e && e->kind == FaultKind::kKill && rejoin_round(*e) < 0;
}

std::vector<int> FaultSchedule::members(int64_t round_step) const {
    std::vector<int> out;
    for (int r = 0; r < replicas_; ++r)
        if (in_round(r, round_step)) out.push_back(r);
    return out;
}

std::vector<int> FaultSchedule::rejoining(int64_t round_step) const {
    std::vector<int> out;
    for (auto& e : events_)
        if ((e.kind == FaultKind::kKill || e.kind == FaultKind::kDisconnect) && rejoin_round(e) == round_step &&
            std::find(out.begin(), out.end(), e.replica) == out.end())
            out.push_back(e.replica);
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<const FaultEvent*> FaultSchedule::starting(int r, int64_t step) const {
    std::vector<const FaultEvent*> out;
    for (auto& e : events_)
        if (e.replica == r && e.at_step == step) out.push_back(&e);
    return out;
}

double FaultSchedule::compute_factor(int r, int64_t step) const {
    double k = 1;
    for (auto& e : events_)
        if (e.replica == r && e.kind == FaultKind::kSlow && step > e.at_step && step <= e.until_step) k *= e.factor;
    return k;
}

}  // namespace tw
