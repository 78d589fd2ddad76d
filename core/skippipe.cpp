// SkipPipe path scheduling and the full-pipeline baseline; see skippipe.h for the model.
#include "core/skippipe.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <utility>

#include "core/algorithm.h"
#include "core/assert.h"
#include "core/routing.h"

namespace tw {
namespace {

constexpr size_t kMaxCandidates = 64;  // stage sequences tried per micro-batch (a seeded sample above)

// ---- costs (stage 0's split by head_fraction, see the header) --------------------------------------

double fwd_cost(const SkipPipeProblem& p, int stage) {
    return stage == 0 ? (1.0 - p.head_fraction) * p.fwd_s[0] : p.fwd_s[stage];
}
double bwd_cost(const SkipPipeProblem& p, int stage) {
    return stage == 0 ? (1.0 - p.head_fraction) * p.bwd_s[0] : p.bwd_s[stage];
}
double head_cost(const SkipPipeProblem& p) { return p.head_fraction * (p.fwd_s[0] + p.bwd_s[0]); }

struct Interval {
    double start = 0, end = 0;
};

// One node's reservations: the ops it runs (never overlapping) and the micro-batches it holds.
class NodeTable {
public:
    // Earliest t ≥ ready such that [t, t + dur] overlaps no busy interval. A zero-length op (the
    // head when head_fraction = 0) occupies nothing, so it never waits.
    double earliest_fit(double ready, double dur) const {
        if (dur <= 0) return ready;
        double t = ready;
        for (const Interval& iv : busy_) {
            if (iv.end <= t) continue;
            if (t + dur <= iv.start) break;
            t = iv.end;
        }
        return t;
    }
    int held_at(double t) const {
        int n = 0;
        for (const Interval& h : held_) n += h.start <= t && t < h.end;
        return n;
    }
    // The earliest end of a hold active at t: when a slot can next free up.
    double next_release(double t) const {
        double r = INFINITY;
        for (const Interval& h : held_)
            if (h.start <= t && t < h.end) r = std::min(r, h.end);
        return r;
    }
    // Peak of held_at over [a, b): it can only rise at a or at a hold's start.
    int max_held_within(double a, double b) const {
        int peak = held_at(a);
        for (const Interval& h : held_)
            if (a < h.start && h.start < b) peak = std::max(peak, held_at(h.start));
        return peak;
    }
    void reserve(double start, double end) {
        if (end <= start) return;  // zero-length ops occupy nothing
        Interval iv{start, end};
        busy_.insert(std::upper_bound(busy_.begin(), busy_.end(), iv,
                                      [](const Interval& a, const Interval& b) { return a.start < b.start; }),
                     iv);
        busy_total_s += end - start;
    }
    void hold(double start, double end) {
        if (end > start) held_.push_back({start, end});
    }
    const std::vector<Interval>& holds() const { return held_; }
    double busy_total_s = 0;

private:
    std::vector<Interval> busy_;  // sorted by start
    std::vector<Interval> held_;
};

struct Tables {
    int replicas = 1;
    std::vector<NodeTable> nodes;  // [S·N], node (s, n) at s·N + n
    NodeTable& at(int s, int n) { return nodes[static_cast<size_t>(s * replicas + n)]; }
    const NodeTable& at(int s, int n) const { return nodes[static_cast<size_t>(s * replicas + n)]; }
};

// Earliest start of a forward on `t` at or after `ready` with a free slot of memory at its start.
double place_forward(const NodeTable& t, double ready, double dur, int memory) {
    double s = t.earliest_fit(ready, dur);
    while (t.held_at(s) >= memory) s = t.earliest_fit(t.next_release(s), dur);
    return s;
}

// ---- one candidate: a stage sequence placed greedily into the tables -------------------------------

struct Plan {
    SkipPath path;
    double finish_s = INFINITY;  // end of the last backward (stage 0)
    double load_s = 0;           // busy time already on the nodes it visits (tie-break)
};

// Places `seq` for (replica, micro_batch) with its first op at or after t0; false when a hold
// would exceed memory somewhere.
bool plan_path(const SkipPipeProblem& p, const Tables& tables, const std::vector<int>& seq, int replica,
               int micro_batch, double t0, uint64_t& rng, Plan& out) {
    const int L = static_cast<int>(seq.size());
    SkipPath& path = out.path;
    path.replica = replica;
    path.micro_batch = micro_batch;
    path.visits.assign(static_cast<size_t>(L), SkipVisit{});
    out.load_s = 0;
    double ready = t0;
    for (int i = 0; i < L; ++i) {
        SkipVisit& v = path.visits[i];
        v.stage = seq[i];
        const double dur = fwd_cost(p, v.stage);
        if (i > 0) ready = path.visits[i - 1].fwd_end_s + p.transfer_s;
        if (i == 0) {
            v.node = replica;
            v.fwd_start_s = place_forward(tables.at(0, replica), ready, dur, p.memory_per_node);
        } else {
            // Scan the nodes from a seeded offset and keep strict improvements: ties go to the
            // least busy node, then to the first in the rotated order.
            const int offset = static_cast<int>(uniform_below(rng, static_cast<uint64_t>(p.replicas)));
            double best = INFINITY, best_load = INFINITY;
            for (int k = 0; k < p.replicas; ++k) {
                const int n = (offset + k) % p.replicas;
                const NodeTable& t = tables.at(v.stage, n);
                const double start = place_forward(t, ready, dur, p.memory_per_node);
                if (start < best || (start == best && t.busy_total_s < best_load)) {
                    best = start;
                    best_load = t.busy_total_s;
                    v.node = n;
                }
            }
            v.fwd_start_s = best;
        }
        v.fwd_end_s = v.fwd_start_s + dur;
        out.load_s += tables.at(v.stage, v.node).busy_total_s;
    }
    // The path's own ops on node (0, replica) are ordered in time by their dependencies, so only
    // the other micro-batches' reservations need checking.
    const NodeTable& home = tables.at(0, replica);
    path.head_start_s = home.earliest_fit(path.visits[L - 1].fwd_end_s + p.transfer_s, head_cost(p));
    path.head_end_s = path.head_start_s + head_cost(p);
    for (int i = L - 1; i >= 0; --i) {
        SkipVisit& v = path.visits[i];
        const double arrive = (i == L - 1 ? path.head_end_s : path.visits[i + 1].bwd_end_s) + p.transfer_s;
        const double dur = bwd_cost(p, v.stage);
        v.bwd_start_s = tables.at(v.stage, v.node).earliest_fit(arrive, dur);
        v.bwd_end_s = v.bwd_start_s + dur;
    }
    for (const SkipVisit& v : path.visits) {
        if (v.bwd_end_s <= v.fwd_start_s) continue;
        if (tables.at(v.stage, v.node).max_held_within(v.fwd_start_s, v.bwd_end_s) + 1 > p.memory_per_node)
            return false;
    }
    out.finish_s = path.visits[0].bwd_end_s;
    return true;
}

void commit(const SkipPath& path, Tables& tables) {
    for (const SkipVisit& v : path.visits) {
        NodeTable& t = tables.at(v.stage, v.node);
        t.reserve(v.fwd_start_s, v.fwd_end_s);
        t.reserve(v.bwd_start_s, v.bwd_end_s);
        t.hold(v.fwd_start_s, v.bwd_end_s);
    }
    tables.at(0, path.replica).reserve(path.head_start_s, path.head_end_s);
}

// ---- shared by the schedulers and the checker --------------------------------------------------------

struct HeldPeak {
    int held = 0;  // peak count
    int stage = 0, node = 0;
    double at_s = 0;  // first time the peak is reached
};

// Sweep over hold endpoints per node; at equal times an end frees its slot before a start takes one.
HeldPeak peak_held(const SkipPipeProblem& p, const SkipSchedule& s) {
    std::vector<std::vector<std::pair<double, int>>> events(static_cast<size_t>(p.stages * p.replicas));
    for (const SkipPath& path : s.paths)
        for (const SkipVisit& v : path.visits) {
            if (v.bwd_end_s <= v.fwd_start_s) continue;
            auto& e = events[static_cast<size_t>(v.stage * p.replicas + v.node)];
            e.push_back({v.fwd_start_s, +1});
            e.push_back({v.bwd_end_s, -1});
        }
    HeldPeak peak;
    for (size_t k = 0; k < events.size(); ++k) {
        auto& e = events[k];
        std::sort(e.begin(), e.end());  // (t, −1) sorts before (t, +1)
        int held = 0;
        for (const auto& [t, d] : e) {
            held += d;
            if (held > peak.held) peak = {held, static_cast<int>(k) / p.replicas, static_cast<int>(k) % p.replicas, t};
        }
    }
    return peak;
}

void finish(const SkipPipeProblem& p, SkipSchedule& s) {
    s.makespan_s = 0;
    for (const SkipPath& path : s.paths) {
        s.makespan_s = std::max(s.makespan_s, path.head_end_s);
        for (const SkipVisit& v : path.visits) s.makespan_s = std::max({s.makespan_s, v.fwd_end_s, v.bwd_end_s});
    }
    s.max_held = peak_held(p, s).held;
}

std::string num(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", x);
    return buf;
}

}  // namespace

// ---- validation and path rules ----------------------------------------------------------------------

std::string validate(const SkipPipeProblem& p) {
    std::vector<std::string> e;
    auto bad = [](double x) { return !std::isfinite(x) || x < 0; };
    if (p.stages < 2) e.push_back("stages " + std::to_string(p.stages) + " is below 2 (stage 0 plus one more)");
    if (p.replicas < 1) e.push_back("replicas " + std::to_string(p.replicas) + " is below 1");
    if (p.path_stages < 2) e.push_back("path_stages " + std::to_string(p.path_stages) + " is below 2");
    if (p.path_stages > p.stages)
        e.push_back("path_stages " + std::to_string(p.path_stages) + " exceeds stages " + std::to_string(p.stages));
    if (p.max_swaps < 0) e.push_back("max_swaps " + std::to_string(p.max_swaps) + " is negative");
    if (p.micro_batches < 1) e.push_back("micro_batches " + std::to_string(p.micro_batches) + " is below 1");
    if (p.memory_per_node < 1) e.push_back("memory_per_node " + std::to_string(p.memory_per_node) + " is below 1");
    using Times = std::pair<const char*, const std::vector<double>*>;
    for (const auto& [name, v] : {Times{"fwd_s", &p.fwd_s}, Times{"bwd_s", &p.bwd_s}}) {
        if (static_cast<int>(v->size()) != p.stages) {
            e.push_back(std::string(name) + " has " + std::to_string(v->size()) + " entries, stages is " +
                        std::to_string(p.stages));
            continue;
        }
        for (size_t i = 0; i < v->size(); ++i)
            if (bad((*v)[i]))
                e.push_back(std::string(name) + "[" + std::to_string(i) + "] " + num((*v)[i]) +
                            " is negative or not finite");
    }
    if (bad(p.transfer_s)) e.push_back("transfer_s " + num(p.transfer_s) + " is negative or not finite");
    if (!(p.head_fraction >= 0 && p.head_fraction <= 1))
        e.push_back("head_fraction " + num(p.head_fraction) + " is outside [0, 1]");
    std::string out;
    for (size_t i = 0; i < e.size(); ++i) out += (i ? "\n" : "") + e[i];
    return out;
}

std::vector<std::vector<int>> skip_paths(int stages, int path_stages, int max_swaps) {
    std::vector<std::vector<int>> out;
    if (stages < 1 || path_stages < 1 || path_stages > stages) return out;
    std::vector<int> seq{0};
    std::vector<char> used(static_cast<size_t>(stages), 0);
    used[0] = 1;
    // Depth-first; the step back (cur − 1) is tried before the upward moves, so the output is sorted.
    auto dfs = [&](auto&& self, int swaps) -> void {
        if (static_cast<int>(seq.size()) == path_stages) {
            out.push_back(seq);
            return;
        }
        const int cur = seq.back();
        auto go = [&](int next, int next_swaps) {
            used[next] = 1;
            seq.push_back(next);
            self(self, next_swaps);
            seq.pop_back();
            used[next] = 0;
        };
        if (cur >= 1 && !used[cur - 1] && swaps < max_swaps) go(cur - 1, swaps + 1);
        for (int next = cur + 1; next < stages; ++next)
            if (!used[next]) go(next, swaps);
    };
    dfs(dfs, 0);
    return out;
}

// ---- the greedy scheduler ---------------------------------------------------------------------------

Result<SkipSchedule> schedule_skippipe(const SkipPipeProblem& p, uint64_t seed) {
    if (std::string v = validate(p); !v.empty()) return Result<SkipSchedule>::error(v);
    const std::vector<std::vector<int>> all = skip_paths(p.stages, p.path_stages, p.max_swaps);
    TW_ASSERT(!all.empty() && "the increasing path 0, 1, …, L−1 always qualifies");
    Tables tables;
    tables.replicas = p.replicas;
    tables.nodes.resize(static_cast<size_t>(p.stages * p.replicas));
    SkipSchedule sched;
    sched.paths.resize(static_cast<size_t>(p.replicas * p.micro_batches));

    std::vector<size_t> order(all.size());
    for (int j = 0; j < p.micro_batches; ++j) {
        for (int r = 0; r < p.replicas; ++r) {
            // A fresh seeded candidate order per micro-batch: a sample when there are too many, and
            // the last tie-break otherwise.
            uint64_t seed_state = seed;
            uint64_t rng = splitmix64(seed_state) ^ static_cast<uint64_t>(j * p.replicas + r);
            std::iota(order.begin(), order.end(), size_t{0});
            for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[uniform_below(rng, i)]);
            const size_t n_cand = std::min(order.size(), kMaxCandidates);

            double t0 = 0;
            for (;;) {
                Plan best, plan;
                bool found = false;
                for (size_t c = 0; c < n_cand; ++c) {
                    if (!plan_path(p, tables, all[order[c]], r, j, t0, rng, plan)) continue;
                    const double tie = 1e-12 * (1.0 + std::fabs(plan.finish_s));
                    if (!found || plan.finish_s < best.finish_s - tie ||
                        (plan.finish_s <= best.finish_s + tie && plan.load_s < best.load_s)) {
                        best = plan;
                        found = true;
                    }
                }
                if (found) {
                    commit(best.path, tables);
                    sched.paths[static_cast<size_t>(r * p.micro_batches + j)] = std::move(best.path);
                    break;
                }
                // Nothing fits from t0: wait for the next hold anywhere to end.
                double next = INFINITY;
                for (const NodeTable& t : tables.nodes)
                    for (const Interval& h : t.holds())
                        if (h.end > t0) next = std::min(next, h.end);
                TW_ASSERT(std::isfinite(next) && "past the last hold every candidate fits");
                t0 = next;
            }
        }
    }
    finish(p, sched);
    return sched;
}

// ---- the full-pipeline baseline (GPipe in waves, fixed op order per node) ------------------------------

Result<SkipSchedule> schedule_full_pipeline(const SkipPipeProblem& p) {
    if (std::string v = validate(p); !v.empty()) return Result<SkipSchedule>::error(v);
    const int S = p.stages, N = p.replicas, m = p.micro_batches;
    const int wave = std::min(p.memory_per_node, m);
    enum Kind : uint8_t { kFwd = 0, kHead = 1, kBwd = 2 };
    struct Op {
        int path;
        Kind kind;
        int stage;
    };
    SkipSchedule sched;
    sched.paths.resize(static_cast<size_t>(N * m));
    std::vector<std::vector<Op>> node_ops(static_cast<size_t>(S * N));
    for (int r = 0; r < N; ++r) {
        for (int j = 0; j < m; ++j) {
            SkipPath& path = sched.paths[static_cast<size_t>(r * m + j)];
            path.replica = r;
            path.micro_batch = j;
            path.visits.assign(static_cast<size_t>(S), SkipVisit{});
            for (int s = 0; s < S; ++s) path.visits[s] = {s, r, -1, -1, -1, -1};
            path.head_end_s = -1;
        }
        for (int w0 = 0; w0 < m; w0 += wave) {
            const int w1 = std::min(w0 + wave, m);
            for (int s = 0; s < S; ++s) {
                auto& ops = node_ops[static_cast<size_t>(s * N + r)];
                for (int j = w0; j < w1; ++j) ops.push_back({r * m + j, kFwd, s});
                if (s == 0)
                    for (int j = w0; j < w1; ++j) ops.push_back({r * m + j, kHead, 0});
                for (int j = w1 - 1; j >= w0; --j) ops.push_back({r * m + j, kBwd, s});
            }
        }
    }
    // Each node takes its next op once that op's input has arrived (end times < 0: not yet run).
    std::vector<size_t> next(node_ops.size(), 0);
    std::vector<double> free_at(node_ops.size(), 0.0);
    size_t remaining = 0;
    for (const auto& ops : node_ops) remaining += ops.size();
    while (remaining > 0) {
        bool progress = false;
        for (size_t k = 0; k < node_ops.size(); ++k) {
            while (next[k] < node_ops[k].size()) {
                const Op op = node_ops[k][next[k]];
                SkipPath& path = sched.paths[static_cast<size_t>(op.path)];
                double input = 0, dur = 0;
                if (op.kind == kFwd) {
                    if (op.stage > 0) input = path.visits[op.stage - 1].fwd_end_s;
                    dur = fwd_cost(p, op.stage);
                } else if (op.kind == kHead) {
                    input = path.visits[S - 1].fwd_end_s;
                    dur = head_cost(p);
                } else {
                    input = op.stage == S - 1 ? path.head_end_s : path.visits[op.stage + 1].bwd_end_s;
                    dur = bwd_cost(p, op.stage);
                }
                if (input < 0) break;
                const bool local = op.kind == kFwd && op.stage == 0;  // the batch starts on its node
                const double start = std::max(free_at[k], local ? 0.0 : input + p.transfer_s);
                SkipVisit& v = path.visits[op.stage];
                if (op.kind == kFwd) v.fwd_start_s = start, v.fwd_end_s = start + dur;
                if (op.kind == kHead) path.head_start_s = start, path.head_end_s = start + dur;
                if (op.kind == kBwd) v.bwd_start_s = start, v.bwd_end_s = start + dur;
                free_at[k] = start + dur;
                ++next[k];
                --remaining;
                progress = true;
            }
        }
        TW_ASSERT(progress && "GPipe waves are deadlock-free");
    }
    finish(p, sched);
    return sched;
}

// ---- the checker --------------------------------------------------------------------------------------

std::string check_schedule(const SkipPipeProblem& p, const SkipSchedule& s) {
    if (std::string v = validate(p); !v.empty()) return "problem: " + v;
    const int S = p.stages, N = p.replicas, m = p.micro_batches, L = p.path_stages;
    if (static_cast<int>(s.paths.size()) != N * m)
        return "paths: " + std::to_string(s.paths.size()) +
               " paths, expected replicas·micro_batches = " + std::to_string(N * m);
    std::vector<char> seen(static_cast<size_t>(N * m), 0);
    double last_end = 0;
    for (const SkipPath& path : s.paths) {
        last_end = std::max(last_end, path.head_end_s);
        for (const SkipVisit& v : path.visits) last_end = std::max({last_end, v.fwd_end_s, v.bwd_end_s});
    }
    const double eps = 1e-9 * std::max(1.0, last_end);

    for (const SkipPath& path : s.paths) {
        const std::string who =
            "(replica " + std::to_string(path.replica) + ", micro-batch " + std::to_string(path.micro_batch) + ")";
        if (path.replica < 0 || path.replica >= N || path.micro_batch < 0 || path.micro_batch >= m)
            return "paths: " + who + " is out of range";
        if (seen[static_cast<size_t>(path.replica * m + path.micro_batch)]++) return "paths: " + who + " appears twice";
        const auto& vs = path.visits;
        if (static_cast<int>(vs.size()) != L)
            return "path " + who + ": visits " + std::to_string(vs.size()) + " stages, path_stages is " +
                   std::to_string(L);
        if (vs[0].stage != 0) return "path " + who + ": starts at stage " + std::to_string(vs[0].stage) + ", not 0";
        if (vs[0].node != path.replica)
            return "path " + who + ": starts on node (0, " + std::to_string(vs[0].node) + "), not its own replica's";
        std::vector<char> used(static_cast<size_t>(S), 0);
        int swaps = 0;
        for (size_t i = 0; i < vs.size(); ++i) {
            const SkipVisit& v = vs[i];
            if (v.stage < 0 || v.stage >= S || v.node < 0 || v.node >= N)
                return "path " + who + ": node (" + std::to_string(v.stage) + ", " + std::to_string(v.node) +
                       ") does not exist";
            if (used[v.stage]++) return "path " + who + ": visits stage " + std::to_string(v.stage) + " twice";
            if (i == 0) continue;
            const int from = vs[i - 1].stage;
            if (v.stage < from - 1)
                return "path " + who + ": steps back from stage " + std::to_string(from) + " to " +
                       std::to_string(v.stage) + " (only by one stage)";
            if (v.stage == from - 1 && ++swaps > p.max_swaps)
                return "path " + who + ": " + std::to_string(swaps) + " swaps exceed max_swaps " +
                       std::to_string(p.max_swaps);
        }
        // Durations, then arrivals, in the order the micro-batch runs them.
        auto wrong_length = [&](double a, double b, double cost) {
            return !std::isfinite(a) || !std::isfinite(b) || std::fabs((b - a) - cost) > eps;
        };
        for (const SkipVisit& v : vs) {
            if (wrong_length(v.fwd_start_s, v.fwd_end_s, fwd_cost(p, v.stage)) ||
                wrong_length(v.bwd_start_s, v.bwd_end_s, bwd_cost(p, v.stage)))
                return "duration: " + who + " on stage " + std::to_string(v.stage) + ": forward " +
                       num(v.fwd_end_s - v.fwd_start_s) + " s, backward " + num(v.bwd_end_s - v.bwd_start_s) +
                       " s; expected " + num(fwd_cost(p, v.stage)) + " s and " + num(bwd_cost(p, v.stage)) + " s";
        }
        if (wrong_length(path.head_start_s, path.head_end_s, head_cost(p)))
            return "duration: " + who + ": head " + num(path.head_end_s - path.head_start_s) + " s, expected " +
                   num(head_cost(p)) + " s";
        auto early = [&](const std::string& what, double start, double arrive) -> std::string {
            if (start >= arrive - eps) return "";
            return "order: " + who + ": " + what + " starts at " + num(start) + " s before its input arrives at " +
                   num(arrive) + " s";
        };
        std::string e = early("the first forward", vs[0].fwd_start_s, 0);
        for (size_t i = 1; e.empty() && i < vs.size(); ++i)
            e = early("the forward on stage " + std::to_string(vs[i].stage), vs[i].fwd_start_s,
                      vs[i - 1].fwd_end_s + p.transfer_s);
        if (e.empty()) e = early("the head", path.head_start_s, vs.back().fwd_end_s + p.transfer_s);
        for (size_t i = vs.size(); e.empty() && i-- > 0;)
            e = early("the backward on stage " + std::to_string(vs[i].stage), vs[i].bwd_start_s,
                      (i + 1 == vs.size() ? path.head_end_s : vs[i + 1].bwd_end_s) + p.transfer_s);
        if (!e.empty()) return e;
    }

    // Collisions: per node, ops sorted by start; each must start after every earlier one has ended.
    struct NodeOp {
        double start, end;
        const SkipPath* path;
        const char* what;
    };
    std::vector<std::vector<NodeOp>> ops(static_cast<size_t>(S * N));
    for (const SkipPath& path : s.paths) {
        for (const SkipVisit& v : path.visits) {
            ops[static_cast<size_t>(v.stage * N + v.node)].push_back({v.fwd_start_s, v.fwd_end_s, &path, "forward"});
            ops[static_cast<size_t>(v.stage * N + v.node)].push_back({v.bwd_start_s, v.bwd_end_s, &path, "backward"});
        }
        ops[static_cast<size_t>(path.replica)].push_back({path.head_start_s, path.head_end_s, &path, "head"});
    }
    for (size_t k = 0; k < ops.size(); ++k) {
        auto& o = ops[k];
        std::sort(o.begin(), o.end(), [](const NodeOp& a, const NodeOp& b) { return a.start < b.start; });
        const NodeOp* reach = nullptr;  // the op with the latest end so far
        for (const NodeOp& op : o) {
            if (op.end <= op.start) continue;  // zero-length ops occupy nothing
            if (reach && op.start < reach->end - eps) {
                auto desc = [](const NodeOp& x) {
                    return std::string(x.what) + " of (replica " + std::to_string(x.path->replica) + ", micro-batch " +
                           std::to_string(x.path->micro_batch) + ") at [" + num(x.start) + ", " + num(x.end) + "]";
                };
                return "collision: node (" + std::to_string(k / N) + ", " + std::to_string(k % N) +
                       "): " + desc(*reach) + " overlaps " + desc(op);
            }
            if (!reach || op.end > reach->end) reach = &op;
        }
    }

    const HeldPeak peak = peak_held(p, s);
    if (peak.held > p.memory_per_node)
        return "memory: node (" + std::to_string(peak.stage) + ", " + std::to_string(peak.node) + ") holds " +
               std::to_string(peak.held) + " micro-batches at " + num(peak.at_s) + " s, memory_per_node is " +
               std::to_string(p.memory_per_node);
    if (s.max_held != peak.held)
        return "max_held: " + std::to_string(s.max_held) + " but the peak is " + std::to_string(peak.held);
    if (std::fabs(s.makespan_s - last_end) > eps)
        return "makespan: " + num(s.makespan_s) + " s but the last op ends at " + num(last_end) + " s";
    return "";
}

SkipStageTimes skip_stage_times(const FwdBwd& block, const FwdBwd& head, const std::vector<int64_t>& blocks_per_stage) {
    TW_ASSERT(!blocks_per_stage.empty());
    SkipStageTimes st;
    st.block = block, st.head = head;
    for (size_t s = 0; s < blocks_per_stage.size(); ++s) {
        const double n = static_cast<double>(blocks_per_stage[s]);
        st.fwd_s.push_back(n * st.block.fwd_s + (s == 0 ? st.head.fwd_s : 0));
        st.bwd_s.push_back(n * st.block.bwd_s + (s == 0 ? st.head.bwd_s : 0));
    }
    st.head_fraction = (st.head.fwd_s + st.head.bwd_s) / (st.fwd_s[0] + st.bwd_s[0]);
    return st;
}


}  // namespace tw
