// Re-timing by replay; see timeline.h. Each phase of a step runs in the order the workers run it:
// compute (a stage node's schedule with its messages), results due now, the step's rounds, then
// what follows a round (AD2's frozen table), so every SimClock call happens as it did live.
#include "core/timeline.h"

#include <limits>

#include <algorithm>
#include <deque>
#include <set>

#include "core/algorithm.h"
#include "core/metric_names.h"
#include "core/pipeline_program.h"
#include "core/round_clock.h"
#include "core/sim_clock.h"

namespace tw {

const std::vector<std::string>& trace_metric_names() {
    static const std::vector<std::string> kNames{metric::kTrainComputeS,    metric::kClockComputeS,
                                                 metric::kClockSendBytes,   metric::kRoundBytes,
                                                 metric::kRoundHops,        metric::kRoundOverlapSteps,
                                                 metric::kRoundGroupMask};
    return kNames;
}

bool add_to_trace(NodeTrace& t, const MetricRecord& m) {
    const std::string& n = m.name;
    if (n == metric::kTrainComputeS) {
        t.compute_s[m.step] = m.value;
        t.recorded_final_s = std::max(t.recorded_final_s, m.sim_s);
    } else if (n == metric::kClockComputeS) {
        t.segments_s[m.step].push_back(m.value);
    } else if (n == metric::kClockSendBytes) {
        t.sent_bytes[m.step].push_back(static_cast<uint64_t>(m.value));
    } else if (n == metric::kRoundBytes) {
        t.round_bytes[m.step] = static_cast<uint64_t>(m.value);
        t.recorded_round_s[m.step] = m.sim_s;
        t.recorded_final_s = std::max(t.recorded_final_s, m.sim_s);
    } else if (n == metric::kRoundHops) {
        t.round_hops[m.step] = static_cast<int64_t>(m.value);
    } else if (n == metric::kRoundOverlapSteps) {
        t.round_overlap[m.step] = static_cast<int64_t>(m.value);
    } else if (n == metric::kRoundGroupMask) {
        t.round_group[m.step].push_back(static_cast<uint64_t>(m.value));
    } else {
        return false;
    }
    return true;
}

namespace {

template <class V>
const V* find_at(const std::map<int64_t, V>& m, int64_t step) {
    auto it = m.find(step);
    return it == m.end() ? nullptr : &it->second;
}

int64_t hops_at(const NodeTrace& t, int64_t step) {
    const int64_t* h = find_at(t.round_hops, step);
    return h ? *h : 1;
}

bool in_mask(const std::vector<uint64_t>* masks, size_t slice, int replica) {
    if (!masks || masks->empty()) return true;
    const uint64_t mask = (*masks)[std::min(slice, masks->size() - 1)];
    return replica < 64 && ((mask >> replica) & 1u);
}

Timeline empty_timeline(size_t n) {
    return Timeline{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0), std::vector<double>(n, 0.0),
                    std::vector<double>(n, 0.0), std::vector<std::map<int64_t, double>>(n)};
}

std::set<int64_t> all_steps(const std::vector<TraceNode>& nodes) {
    std::set<int64_t> steps;
    for (auto& n : nodes)
        for (auto& [s, c] : n.trace.compute_s) steps.insert(s);
    return steps;
}

void finish(Timeline& t, const std::vector<SimClock>& clocks) {
    for (size_t i = 0; i < clocks.size(); ++i) {
        t.sim_s[i] = clocks[i].now_s();
        t.compute_s[i] = clocks[i].compute_s();
        t.exposed_s[i] = clocks[i].exposed_s();
        t.sync_exposed_s[i] = clocks[i].sync_exposed_s();
    }
}

// ---- full replicas: DDP and the outer algorithms (engine/worker/replica_worker.cpp) ------------------

// Time-budgeted rounds (core/time_budget.h): replicas reach round k after different numbers of
// steps, so the replay walks rounds, not steps: each node computes up to its k-th round's step,
// then the round's members meet as the worker's clock rule says (DiLoCo and SparseLoCo: every
// replica, no overlap).
Result<Timeline> retime_budgeted(const std::vector<TraceNode>& nodes, const NetworkProfile& net, Topology topology) {
    const size_t N = nodes.size();
    Timeline t = empty_timeline(N);
    std::vector<SimClock> clocks(N);
    std::vector<std::vector<int64_t>> rounds(N);
    std::vector<std::map<int64_t, double>::const_iterator> next(N);
    size_t most = 0;
    for (size_t i = 0; i < N; ++i) {
        for (auto& kv : nodes[i].trace.round_bytes) rounds[i].push_back(kv.first);
        most = std::max(most, rounds[i].size());
        next[i] = nodes[i].trace.compute_s.begin();
    }
    auto advance_to = [&](size_t i, int64_t last) {
        for (; next[i] != nodes[i].trace.compute_s.end() && next[i]->first <= last; ++next[i]) {
            clocks[i].compute(next[i]->second);
            t.clock_at[i][next[i]->first] = clocks[i].now_s();
        }
    };
    for (size_t k = 0; k < most; ++k) {
        std::vector<double> group;
        for (size_t i = 0; i < N; ++i)
            if (k < rounds[i].size()) {
                advance_to(i, rounds[i][k]);
                group.push_back(clocks[i].now_s());
            }
        for (size_t i = 0; i < N; ++i) {
            if (k >= rounds[i].size()) continue;
            const int64_t step = rounds[i][k];
            std::vector<int> members;
            for (size_t q = 0; q < N; ++q)
                if (k < rounds[q].size()) members.push_back(nodes[q].replica);
            const RoundTiming timing{RoundKind::kOuter, LinkClass::kOuterSync, nodes[i].replica, members, group,
                                     *find_at(nodes[i].trace.round_bytes, step), hops_at(nodes[i].trace, step)};
            close_round(clocks[i], RoundKind::kOuter, round_end(net, topology, timing));
            t.clock_at[i][step] = clocks[i].now_s();
        }
    }
    for (size_t i = 0; i < N; ++i) advance_to(i, std::numeric_limits<int64_t>::max());
    finish(t, clocks);
    return t;
}

Result<Timeline> retime_replicas(const RunConfig& cfg, const std::vector<TraceNode>& nodes, const NetworkProfile& net) {
    // A fault schedule or a deadline changes who takes part in a round, what the detection of a
    // loss costs and when a joiner's state arrives (docs/faults.md); none of that is replayed.
    if (cfg.faults.enabled() || cfg.outer.round_deadline_s > 0)
        return Result<Timeline>::error("runs with [faults] or outer.round_deadline_s cannot be re-timed: the rounds' "
                                       "membership, the loss detection and the recovery transfers are not replayed");
    if (cfg.outer.round_time_s > 0 && cfg.cluster.nodes_per_replica == 1) return retime_budgeted(nodes, net, topology_of(cfg));
    const Algorithm algo = algorithm_of(cfg);
    if (algo != Algorithm::kDdp && cfg.cluster.nodes_per_replica > 1)
        return Result<Timeline>::error(std::string("runs whose replicas span several nodes under ") + to_string(algo) +
                                       " cannot be re-timed: the leader's broadcast of the weights to its replica is "
                                       "not stored");
    const Topology topology = topology_of(cfg);
    const size_t N = nodes.size();
    Timeline t = empty_timeline(N);
    std::vector<SimClock> clocks(N);
    for (int64_t step : all_steps(nodes)) {
        for (size_t i = 0; i < N; ++i)
            if (const double* c = find_at(nodes[i].trace.compute_s, step)) clocks[i].compute(*c);
        for (size_t i = 0; i < N; ++i) clocks[i].settle_due(step);
        std::vector<double> arrivals(N);
        for (size_t i = 0; i < N; ++i) arrivals[i] = clocks[i].now_s();
        for (size_t i = 0; i < N; ++i) {
            const TraceNode& n = nodes[i];
            const uint64_t* bytes = find_at(n.trace.round_bytes, step);
            if (!bytes) continue;
            // DDP's ring runs over every node of the run; an outer round over the replicas in its
            // group (NoLoCo), or all of them.
            const auto* masks = find_at(n.trace.round_group, step);
            std::vector<double> group;
            for (size_t q = 0; q < N; ++q)
                if (algo == Algorithm::kDdp || in_mask(masks, 0, nodes[q].replica)) group.push_back(arrivals[q]);
            if (group.empty()) group.push_back(arrivals[i]);
            // Between replicas, the members' access links (core/network.h round_link).
            std::vector<int> members;
            if (algo != Algorithm::kDdp)
                for (int r = 0; r < cfg.outer.replicas; ++r)
                    if (in_mask(masks, 0, r)) members.push_back(r);
            const RoundKind kind = algo == Algorithm::kDdp ? RoundKind::kStepCollective : RoundKind::kOuter;
            const RoundTiming timing{kind, round_link_class(cfg), n.replica, members, group, *bytes, hops_at(n.trace, step)};
            const int64_t* overlap = find_at(n.trace.round_overlap, step);
            close_round(clocks[i], kind, round_end(net, topology, timing), step, overlap ? *overlap : 0);
        }
        for (size_t i = 0; i < N; ++i)
            if (nodes[i].trace.compute_s.count(step)) t.clock_at[i][step] = clocks[i].now_s();
    }
    finish(t, clocks);
    return t;
}

// ---- pipeline runs: stage nodes and full replicas (engine/worker/pipeline_worker.cpp) ----------------

class PipelineReplay {
public:
    PipelineReplay(const RunConfig& cfg, const std::vector<TraceNode>& nodes, const NetworkProfile& net)
        : cfg_(cfg), nodes_(nodes), net_(net), clocks_(nodes.size()), events_(nodes.size()), at_(nodes.size()),
          segment_(nodes.size()), sent_(nodes.size()) {}

    Result<Timeline> run();

private:
    int S() const { return static_cast<int>(cfg_.cluster.stages); }
    bool whole(size_t i) const { return nodes_[i].stage < 0; }
    Status index_holders();
    // Runs every node's events_ to the end, in any interleaving that respects the messages: a
    // receive waits for its sender's send. Segment values and message sizes come from the traces.
    Status run_events(int64_t step);
    Status outer_rounds(int64_t step, std::vector<bool>& had_round);

    const RunConfig& cfg_;
    const std::vector<TraceNode>& nodes_;
    const NetworkProfile& net_;
    std::vector<SimClock> clocks_;
    std::map<std::pair<int, int>, size_t> holder_;  // (replica, stage) → node
    std::vector<std::vector<StageEvent>> events_;   // per node, this phase's events
    std::vector<size_t> at_;                        // per node, the next event
    std::vector<size_t> segment_, sent_;            // per node, the next clock.compute_s / clock.send_bytes row
    std::map<std::pair<size_t, size_t>, std::deque<double>> in_flight_;  // (from, to) → arrival times
};

Status PipelineReplay::index_holders() {
    for (size_t i = 0; i < nodes_.size(); ++i) {
        const TraceNode& n = nodes_[i];
        if (!whole(i) && n.trace.segments_s.empty() && !n.trace.compute_s.empty())
            return Status::error("pipeline runs recorded before stage nodes stored their clock segments (" +
                                 std::string(metric::kClockComputeS) + ") cannot be re-timed; " + n.name + " has none");
        for (int s = 0; s < S(); ++s)
            if (whole(i) || n.stage == s) holder_[{n.replica, s}] = i;
    }
    for (int r = 0; r < cfg_.outer.replicas; ++r)
        for (int s = 0; s < S(); ++s)
            if (!holder_.count({r, s}))
                return Status::error("pipeline run without a node for stage " + std::to_string(s) + " of replica " +
                                     std::to_string(r));
    return Status::ok();
}

Status PipelineReplay::run_events(int64_t step) {
    auto step_error = [&](size_t i, const std::string& what) {
        return Status::error(nodes_[i].name + " at step " + std::to_string(step) + ": " + what +
                             " (the trace does not match the run's schedule)");
    };
    for (bool progress = true; progress;) {
        progress = false;
        for (size_t i = 0; i < nodes_.size(); ++i) {
            const NodeTrace& tr = nodes_[i].trace;
            for (; at_[i] < events_[i].size(); ++at_[i], progress = true) {
                const StageEvent& e = events_[i][at_[i]];
                if (e.kind == StageEventKind::kCompute) {
                    const double* whole_step = whole(i) ? find_at(tr.compute_s, step) : nullptr;
                    const auto* segs = find_at(tr.segments_s, step);
                    if (whole_step) clocks_[i].compute(*whole_step);
                    else if (segs && segment_[i] < segs->size()) clocks_[i].compute((*segs)[segment_[i]++]);
                    else return step_error(i, "a compute segment is missing");
                    continue;
                }
                const size_t peer = holder_.at({e.peer_replica, e.peer_stage});
                if (e.kind == StageEventKind::kSend) {
                    const auto* sizes = find_at(tr.sent_bytes, step);
                    if (!sizes || sent_[i] >= sizes->size()) return step_error(i, "a message size is missing");
                    in_flight_[{i, peer}].push_back(clocks_[i].send(net_.stage, (*sizes)[sent_[i]++]));
                    continue;
                }
                auto& queue = in_flight_[{peer, i}];
                if (queue.empty()) break;  // its sender has not got there yet
                clocks_[i].receive(queue.front());
                queue.pop_front();
            }
        }
    }
    for (size_t i = 0; i < nodes_.size(); ++i)
        if (at_[i] < events_[i].size()) return step_error(i, "a message never arrived");
    return Status::ok();
}

// Every H steps each node takes part in one round per stage it holds; its uplink carries its
// payloads of every held stage back to back after the slowest member of any of those rounds.
Status PipelineReplay::outer_rounds(int64_t step, std::vector<bool>& had_round) {
    std::vector<double> arrivals(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) arrivals[i] = clocks_[i].now_s();
    for (size_t i = 0; i < nodes_.size(); ++i) {
        const NodeTrace& tr = nodes_[i].trace;
        const uint64_t* bytes = find_at(tr.round_bytes, step);
        if (!bytes) continue;
        had_round[i] = true;
        const auto* masks = find_at(tr.round_group, step);
        double latest = arrivals[i];
        size_t slice = 0;
        std::vector<bool> member(static_cast<size_t>(cfg_.outer.replicas), false);
        for (int s = 0; s < S(); ++s) {
            if (!whole(i) && nodes_[i].stage != s) continue;
            for (int r = 0; r < cfg_.outer.replicas; ++r)
                if (in_mask(masks, slice, r)) latest = std::max(latest, arrivals[holder_.at({r, s})]), member[r] = true;
            ++slice;
        }
        std::vector<int> members;
        for (int r = 0; r < cfg_.outer.replicas; ++r)
            if (member[r]) members.push_back(r);
        const RoundTiming timing{RoundKind::kStages, LinkClass::kOuterSync, nodes_[i].replica, members, {latest}, *bytes,
                                 hops_at(tr, step)};
        close_round(clocks_[i], RoundKind::kStages, round_end(net_, Topology::kMesh, timing));
    }
    return Status::ok();
}

Result<Timeline> PipelineReplay::run() {
    if (Status st = index_holders(); !st) return st;
    Timeline t = empty_timeline(nodes_.size());
    auto start_phase = [&](auto&& events_of) {
        for (size_t i = 0; i < nodes_.size(); ++i) events_[i] = events_of(i), at_[i] = 0;
    };
    auto frozen_table = [&](const std::vector<bool>& active) {
        start_phase([&](size_t i) {
            return active[i] && !whole(i) ? frozen_table_events(cfg_, nodes_[i].replica, nodes_[i].stage)
                                          : std::vector<StageEvent>{};
        });
    };
    if (frozen_table_at_start(cfg_)) {
        std::fill(segment_.begin(), segment_.end(), 0), std::fill(sent_.begin(), sent_.end(), 0);
        frozen_table(std::vector<bool>(nodes_.size(), true));
        if (Status st = run_events(0); !st) return st;
    }
    for (int64_t step : all_steps(nodes_)) {
        std::fill(segment_.begin(), segment_.end(), 0), std::fill(sent_.begin(), sent_.end(), 0);
        start_phase([&](size_t i) {
            if (!nodes_[i].trace.compute_s.count(step)) return std::vector<StageEvent>{};
            if (whole(i)) return std::vector<StageEvent>{StageEvent{}};  // the trainer's step: one segment
            return stage_iteration(cfg_, nodes_[i].replica, nodes_[i].stage, step - 1);
        });
        if (Status st = run_events(step); !st) return st;
        std::vector<bool> had_round(nodes_.size(), false);
        if (Status st = outer_rounds(step, had_round); !st) return st;
        frozen_table(had_round);
        if (Status st = run_events(step); !st) return st;
        for (size_t i = 0; i < nodes_.size(); ++i)
            if (nodes_[i].trace.compute_s.count(step)) t.clock_at[i][step] = clocks_[i].now_s();
    }
    finish(t, clocks_);
    return t;
}

}  // namespace

Result<Timeline> retime(const RunConfig& cfg, const std::vector<TraceNode>& nodes, const NetworkProfile& net) {
    if (nodes.empty()) return Result<Timeline>::error("no nodes to re-time");
    if (cfg.cluster.stages > 1) return PipelineReplay(cfg, nodes, net).run();
    return retime_replicas(cfg, nodes, net);
}

}  // namespace tw
