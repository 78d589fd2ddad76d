// Background loading of the run store; see run_cache.h.
#include "ui/data/run_cache.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "core/algorithm.h"
#include "core/config_io.h"
#include "core/network.h"
#include "core/metric_names.h"
#include "storage/run_liveness.h"
#include "ui/logic/fault_events.h"

namespace tw::ui {
namespace {

std::string key_settings(const RunConfig& c) {
    char buf[160];
    if (algorithm_of(c) == Algorithm::kDiLoCo)
        std::snprintf(buf, sizeof buf, "diloco, R=%lld, H=%lld, outer lr %.3g, momentum %.3g, %s, %s",
                      (long long)c.outer.replicas, (long long)c.outer.inner_steps, c.outer.lr, c.outer.momentum,
                      c.outer.dtype.c_str(), c.network.profile.c_str());
    else
        std::snprintf(buf, sizeof buf, "%s, R=%lld, batch %lld, lr %.3g, %s", c.outer.algorithm.c_str(),
                      (long long)c.outer.replicas, (long long)c.train.batch_size, c.train.lr,
                      c.network.profile.c_str());
    return buf;
}

}  // namespace

Result<RunData> load_run(RunStore& store, int64_t id) {
    RunData d;
    auto summary = store.get_run(id);
    if (!summary) return summary.status();
    d.summary = *summary;
    if (auto toml = store.config_toml(id)) {
        auto cfg = parse_config(*toml, "run " + std::to_string(id));
        if (cfg) d.cfg = *cfg, d.cfg_ok = true, d.key_settings = key_settings(*cfg);
    }
    auto nodes = store.nodes(id);
    if (!nodes) return nodes.status();
    for (const RunNode& n : *nodes) {
        if (n.cpu.empty() && n.blas.empty()) continue;
        const std::string p = (n.cpu.empty() ? "-" : n.cpu) + ", BLAS " + (n.blas.empty() ? "-" : n.blas);
        if (std::find(d.platforms.begin(), d.platforms.end(), p) == d.platforms.end()) d.platforms.push_back(p);
    }
    auto events = store.events(id);
    if (!events) return events.status();
    for (auto& e : *events)
        if (is_fault_kind(e.kind)) d.faults.push_back(std::move(e));
    auto names = store.metric_names(id);
    if (!names) return names.status();
    auto each = [&](const std::string& name, auto&& fn) -> Status {
        auto rows = store.metrics(id, name);
        if (!rows) return rows.status();
        for (auto& m : *rows) fn(d.nodes[m.node], m);
        return Status::ok();
    };
    Status st = each(metric::kTrainLoss, [](NodeData& n, const MetricRecord& m) {
        n.step.push_back(static_cast<double>(m.step));
        n.loss.push_back(m.value);
        n.wall_s.push_back(m.wall_s);
        n.sim_s.push_back(m.sim_s);
    });
    if (!st) return st;
    if (Status r = each(metric::kValLoss, [](NodeData& n, const MetricRecord& m) {
        n.val_step.push_back(static_cast<double>(m.step));
        n.val.push_back(m.value);
        n.val_wall_s.push_back(m.wall_s);
        n.val_sim_s.push_back(m.sim_s);
    }); !r) return r;
    if (Status r = each(metric::kTrainTokens, [](NodeData& n, const MetricRecord& m) { n.tokens_at[m.step] = m.value; }); !r) return r;
    if (d.summary.status == RunStatus::kRunning) {
        d.traces_error = "re-timing applies to finished runs";
    } else if (auto traces = load_run_traces(store, id)) {
        d.traces = std::make_shared<const StoredRunTraces>(std::move(*traces));
    } else {
        d.traces_error = traces.message();
    }
    if (Status r = each(metric::kRoundComputeS, [](NodeData& n, const MetricRecord& m) {
        n.round_step.push_back(static_cast<double>(m.step));
        n.round_compute_s.push_back(m.value);
    }); !r) return r;
    if (Status r = each(metric::kRoundExposedCommS, [](NodeData& n, const MetricRecord& m) { n.round_exposed_s.push_back(m.value); }); !r) return r;
    // Cumulative bytes sent per step: the sum over link classes of their cumulative counters.
    for (auto& name : *names) {
        if (name.rfind(metric::kBytesPrefix, 0) != 0) continue;
        const bool sent = metric::is_bytes_sent(name);
        std::map<std::string, std::map<int64_t, double>> per_node;
        if (Status r = each(name, [&](NodeData& n, const MetricRecord& m) {
            n.bytes_final[name] = m.value;
            if (sent) per_node[m.node][m.step] = m.value;
        }); !r) return r;
        for (auto& [node, steps] : per_node)
            for (auto& [step, v] : steps) d.nodes[node].bytes_at[step] += v;
    }
    return d;
}

double at_or_before(const std::map<int64_t, double>& m, double step) {
    auto it = m.upper_bound(static_cast<int64_t>(step));
    if (it == m.begin()) return NAN;
    return std::prev(it)->second;
}

double x_of(const NodeData& n, XAxis axis, double step, double sim_s, double wall_s,
            const std::map<int64_t, double>* retimed) {
    switch (axis) {
        case XAxis::kStep: return step;
        case XAxis::kTokens: return at_or_before(n.tokens_at, step);
        case XAxis::kBytes: return n.bytes_at.empty() ? 0.0 : at_or_before(n.bytes_at, step);
        case XAxis::kSimTime: return retimed ? at_or_before(*retimed, step) : sim_s;
        case XAxis::kWallTime: return wall_s;
    }
    return NAN;
}

std::string WhatIf::label() const {
    std::string hw;
    if (!hardware.hardware.empty()) {
        char buf[96];
        hw = hardware.hardware;
        if (hardware.peak_flops > 0) std::snprintf(buf, sizeof buf, " %.4g FLOP/s", hardware.peak_flops), hw += buf;
        if (hardware.efficiency > 0) std::snprintf(buf, sizeof buf, " (eff %.3g)", hardware.efficiency), hw += buf;
    }
    if (network.empty()) return hw;
    return hw.empty() ? network : network + ", " + hw;
}

bool WhatIf::operator==(const WhatIf& o) const {
    return network == o.network && hardware.hardware == o.hardware.hardware &&
           hardware.efficiency == o.hardware.efficiency && hardware.peak_flops == o.hardware.peak_flops;
}

Result<RetimedRun> retime_run(const RunData& d, const WhatIf& w) {
    if (!d.traces) return Result<RetimedRun>::error(d.traces_error);
    const StoredRunTraces& run = *d.traces;
    auto net = retime_network(run, w.network.empty() ? run.cfg.network.profile : w.network);
    if (!net) return net.status();
    auto replay = [&]() -> Result<Timeline> {
        if (w.hardware.hardware.empty()) return retime_loaded(run, *net);
        auto nodes = retime_compute(run.cfg, run.nodes, w.hardware);
        if (!nodes) return nodes.status();
        StoredRunTraces other = run;  // a copy with the re-timed compute; once per change of the what-if
        other.nodes = std::move(*nodes);
        return retime_loaded(other, *net);
    };
    auto t = replay();
    if (!t) return t.status();
    RetimedRun out;
    for (size_t i = 0; i < run.nodes.size(); ++i) {
        RetimedRun::Node& n = out.nodes[run.nodes[i].name];
        n.clock_at = t->clock_at[i];
        n.sim_s = t->sim_s[i];
        n.compute_s = t->compute_s[i];
        n.exposed_s = t->exposed_s[i];
    }
    return out;
}

RunCache::RunCache(std::string db_path, double refresh_s)
    : db_path_(std::move(db_path)), refresh_s_(refresh_s), state_(std::make_shared<CacheState>()) {
    thread_ = std::thread([this] { loop(); });
}

RunCache::~RunCache() {
    quit_ = true;
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void RunCache::want(const std::set<int64_t>& ids) {
    std::lock_guard<std::mutex> lock(mu_);
    if (ids == wanted_) return;
    wanted_ = ids;
    cv_.notify_all();
}

std::shared_ptr<const CacheState> RunCache::state() const {
    std::lock_guard<std::mutex> lock(mu_);
    return state_;
}

void RunCache::load_now() { refresh(); }

namespace {

// What the History table and the plots show of a run's summary (the heartbeat left out: it
// changes every few seconds while nothing visible does).
bool same_summary(const RunSummary& a, const RunSummary& b) {
    return a.id == b.id && a.name == b.name && a.status == b.status && a.finished_at == b.finished_at &&
           a.last_step == b.last_step && a.last_train_loss == b.last_train_loss && a.last_val_loss == b.last_val_loss &&
           a.reason == b.reason && a.notes == b.notes && a.tags == b.tags && a.group == b.group;
}

// Nothing the UI draws differs: the window need not redraw (its idle frames are skipped).
bool same_state(const CacheState& a, const CacheState& b) {
    if (a.error != b.error || a.runs.size() != b.runs.size() || a.loaded != b.loaded || a.rows != b.rows) return false;
    for (size_t i = 0; i < a.runs.size(); ++i)
        if (!same_summary(a.runs[i], b.runs[i])) return false;
    return true;
}

}  // namespace

void RunCache::refresh() {
    std::lock_guard<std::mutex> refreshing(refresh_mu_);  // load_now() and the loop's thread
    auto next = std::make_shared<CacheState>();
    std::set<int64_t> wanted;
    std::shared_ptr<const CacheState> prev;
    {
        std::lock_guard<std::mutex> lock(mu_);
        wanted = wanted_;
        prev = state_;
    }
    // One connection for the window's life (reopened after a failure), not one per refresh.
    if (!store_) {
        auto opened = RunStore::open(db_path_);
        if (opened) store_ = std::make_unique<RunStore>(std::move(*opened));
        else next->error = opened.message();
    }
    RunStore* store = store_.get();
    if (!store) {
        // next->error says why
    } else if (auto lost = mark_lost_runs(*store); !lost) {  // a dead coordinator's run is interrupted
        next->error = lost.message();
    } else if (auto runs = store->list_runs(); !runs) {
        next->error = runs.message();
    } else {
        next->runs = *runs;
        // Table rows: a finished run's never changes; a running one's is remade every refresh.
        std::map<int64_t, RunStatus> was;
        for (const RunSummary& r : prev->runs) was[r.id] = r.status;
        for (const RunSummary& r : next->runs) {
            auto old = prev->rows.find(r.id);
            if (old != prev->rows.end() && r.status != RunStatus::kRunning && was[r.id] == r.status) {
                next->rows[r.id] = old->second;
                continue;
            }
            auto toml = store->config_toml(r.id);
            auto totals = store->totals(r.id);
            if (!toml || !totals) continue;  // deleted meanwhile: no row
            next->rows[r.id] = std::make_shared<const RunRow>(make_run_row(r.id, stored_key_values(*toml), *totals));
        }
        for (int64_t id : wanted) {
            auto old = prev->loaded.find(id);
            // A finished run never changes: keep what was loaded.
            if (old != prev->loaded.end() && old->second->summary.status != RunStatus::kRunning) {
                next->loaded[id] = old->second;
                continue;
            }
            auto d = load_run(*store, id);
            if (d) next->loaded[id] = std::make_shared<const RunData>(std::move(*d));
            else next->error = d.message();
        }
    }
    if (!next->error.empty()) store_.reset();  // try a fresh connection next time
    // A running run reloads every refresh: its new state is published even when equal, so a live
    // plot never misses a point; otherwise the previous state stays (same pointer: no redraw).
    bool running = false;
    for (auto& [id, d] : next->loaded) running = running || d->summary.status == RunStatus::kRunning;
    std::lock_guard<std::mutex> lock(mu_);
    if (!running && wanted == wanted_ && same_state(*next, *prev)) return;
    state_ = next;
}

void RunCache::loop() {
    while (!quit_) {
        refresh();
        std::unique_lock<std::mutex> lock(mu_);
        const auto wanted = wanted_;
        cv_.wait_for(lock, std::chrono::duration<double>(refresh_s_),
                     [&] { return quit_.load() || wanted_ != wanted; });
    }
}

}  // namespace tw::ui
