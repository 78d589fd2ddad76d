// One coordinated run; see run_session.h.
#include "app/run_session.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>
#include <zmq.hpp>

#include "app/engine_node.h"
#include "core/config_io.h"
#include "core/layout.h"
#include "engine/data/dataset.h"
#include "remote/cluster.h"
#include "remote/coordinator.h"
#include "storage/metric_writer.h"
#include "storage/run_store.h"

namespace tw::cli {
namespace {

using Clock = std::chrono::steady_clock;
double since_s(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string human_bytes(double b) {
    char buf[32];
    const char* unit[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (b >= 1000 && u < 4) b /= 1000, ++u;
    std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
    return buf;
}

// Streams the nodes' records into the run store in batches, keeps what progress lines and
// re-timing need, and prints one progress line per node.
class StoreSink : public CoordinatorSink {
public:
    StoreSink(RunStore& store, int64_t run_id, int64_t steps, int64_t every, std::vector<std::string> nodes)
        : store_(store), run_id_(run_id), buf_(store, run_id), steps_(steps), every_(every),
          tty_(isatty(fileno(stdout)) != 0), nodes_(std::move(nodes)) {}

    void on_metrics(const std::vector<MetricRecord>& records) override {
        for (auto& m : records) {
            Line& l = lines_[m.node];
            if (m.name == "train.loss") l.step = m.step, l.loss = m.value;
            else if (m.name == "val.loss") l.val = m.value;
            else if (m.name == "train.compute_s") traces[m.node].compute_s[m.step] = m.value;
            else if (m.name == "round.bytes") traces[m.node].round_bytes[m.step] = static_cast<uint64_t>(m.value);
            else if (m.name == "round.hops") traces[m.node].round_hops[m.step] = static_cast<int64_t>(m.value);
            else if (m.name.rfind("bytes.", 0) == 0 && m.name.size() > 5 && m.name.compare(m.name.size() - 5, 5, ".sent") == 0)
                l.sent[m.name] = m.value;
            l.sim_s = m.sim_s;
            if (!tty_ && m.name == "train.loss" && (m.step % every_ == 0 || m.step == steps_)) print_line(m.node, l);
            buf_.add(m);
        }
        if (since_s(last_flush_) > 1.0) flush();  // a coordinator crash loses at most a second of metrics
    }
    void on_event(const EventRecord& e) override {
        (void)store_.add_event(run_id_, e);
        if (e.level != EventLevel::kInfo) std::printf("%s: %s: %s\n", e.node.c_str(), e.kind.c_str(), e.text.c_str());
    }
    Status flush() {
        last_flush_ = Clock::now();
        return buf_.flush();
    }
    // Redraws the block of progress lines on a terminal.
    void redraw() {
        if (!tty_ || since_s(last_draw_) < 0.5) return;
        if (drawn_) std::printf("\033[%zuA", nodes_.size());
        for (auto& n : nodes_) print_line(n, lines_[n]);
        drawn_ = true;
        last_draw_ = Clock::now();
        std::fflush(stdout);
    }

    std::map<std::string, ReplicaTrace> traces;

private:
    struct Line {
        int64_t step = 0;
        double loss = NAN, val = NAN, sim_s = 0;
        std::map<std::string, double> sent;
    };
    void print_line(const std::string& node, const Line& l) {
        double sent = 0;
        for (auto& [k, v] : l.sent) sent += v;
        std::printf("%s%-12s step %6lld/%-6lld loss %7.4f%s  sent %10s  sim %8.1f s\n", tty_ ? "\033[2K" : "",
                    node.c_str(), (long long)l.step, (long long)steps_, l.loss,
                    std::isnan(l.val) ? "" : ("  val " + std::to_string(l.val).substr(0, 6)).c_str(),
                    human_bytes(sent).c_str(), l.sim_s);
    }

    RunStore& store_;
    int64_t run_id_;
    MetricBuffer buf_;
    int64_t steps_, every_;
    bool tty_, drawn_ = false;
    std::vector<std::string> nodes_;
    std::map<std::string, Line> lines_;
    Clock::time_point last_flush_ = Clock::now(), last_draw_ = Clock::now();
};

// Brings up the nodes the layout asks for; returns their control endpoints.
std::unique_ptr<LocalCluster> bring_up(const RunConfig& cfg, int n, std::shared_ptr<zmq::context_t> ctx,
                                       const std::string& exe, std::vector<std::string>& endpoints) {
    if (cfg.cluster.mode == "remote") {
        endpoints = cfg.cluster.endpoints;
        return nullptr;
    }
    std::unique_ptr<LocalCluster> c;
    if (cfg.cluster.mode == "threads") {
        NodeOptions base;
        base.ctx = ctx;
        base.version = thinwire_version();
        c = unwrap(LocalCluster::start_threads(n, base, engine_worker_factory(ctx)));
    } else {
        c = unwrap(LocalCluster::start_processes(n, exe));
    }
    endpoints = c->endpoints();
    return c;
}

}  // namespace

SessionResult run_session(RunConfig cfg, RunStore& store, const std::string& group, const std::string& exe,
                          const std::atomic<bool>& interrupt) {
    SessionResult out;
    const auto t0 = Clock::now();
    // The coordinator's machine prepares the data once, so thread and child-process nodes find it
    // cached instead of racing to build it; it also fixes the vocabulary every node must use.
    PreparedData data = unwrap(prepare_data(cfg.data, [](const std::string& s) { std::printf("%s\n", s.c_str()); }));
    if (cfg.model.vocab_size == 0) cfg.model.vocab_size = data.vocab_size;
    out.unigram = unigram_loss(*data.train, *data.val, cfg.model.vocab_size);
    const int64_t need = nodes_needed(cfg);
    const int n = static_cast<int>(cfg.cluster.nodes > 0 ? cfg.cluster.nodes : need);
    const int64_t threads_total = cfg.run.threads;
    // Threads of one process share its cores.
    if (cfg.cluster.mode == "threads") cfg.run.threads = std::max<int64_t>(1, cfg.run.threads / n);

    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> endpoints;
    std::unique_ptr<LocalCluster> local = bring_up(cfg, n, ctx, exe, endpoints);
    CoordinatorOptions copts;
    copts.heartbeat_s = cfg.cluster.heartbeat_s;
    copts.heartbeat_timeout_s = cfg.cluster.heartbeat_timeout_s;
    auto coord = unwrap(Coordinator::connect(ctx, endpoints, copts));
    const std::vector<NodeRole> roles = unwrap(assign_roles(cfg, endpoints, free_tcp_port));

    out.run_id = unwrap(store.create_run(cfg.run.name, "run", to_toml(cfg), config_hash(cfg), cfg.run.seed));
    check(store.set_run_group(out.run_id, group, cfg.cluster.mode));
    for (size_t i = 0; i < roles.size(); ++i) {
        const NodeInfo& ni = coord->nodes()[i];
        RunNode rn;
        rn.node = roles[i].name;
        rn.endpoint = ni.endpoint;
        rn.role = cfg.outer.algorithm == "none" ? "trainer" : cfg.outer.algorithm;
        rn.kind = roles[i].kind;
        rn.replica = roles[i].replica;
        rn.rank = roles[i].rank;
        rn.host = ni.host;
        rn.version = ni.version;
        rn.threads = ni.threads;
        check(store.add_node(out.run_id, rn));
        out.nodes.push_back(roles[i].name);
    }
    std::printf("run %lld \"%s\": %s, %lld replica%s × %lld node%s on %s (%d node%s, %lld thread%s each), %lld steps\n",
                (long long)out.run_id, cfg.run.name.c_str(),
                cfg.outer.algorithm == "none" ? "one node" : cfg.outer.algorithm.c_str(), (long long)cfg.outer.replicas,
                cfg.outer.replicas == 1 ? "" : "s", (long long)cfg.cluster.nodes_per_replica,
                cfg.cluster.nodes_per_replica == 1 ? "" : "s", cfg.cluster.mode.c_str(), n, n == 1 ? "" : "s",
                (long long)cfg.run.threads, cfg.run.threads == 1 ? "" : "s", (long long)cfg.train.steps);
    (void)threads_total;

    StoreSink sink(store, out.run_id, cfg.train.steps, cfg.train.log_every, out.nodes);
    std::optional<RunOutcome> outcome;
    if (Status st = coord->configure(roles, to_toml(cfg)); !st) outcome = RunOutcome{RunStatus::kFailed, st.message()};
    else if (Status st2 = coord->start(); !st2) outcome = RunOutcome{RunStatus::kFailed, st2.message()};
    bool stop_sent = false;
    Clock::time_point stop_at;
    while (!outcome) {
        outcome = coord->poll(sink, 100);
        sink.redraw();
        if (interrupt.load() && !stop_sent) {
            (void)coord->stop();
            stop_sent = true;
            stop_at = Clock::now();
        }
        if (stop_sent && !outcome && since_s(stop_at) > 60)
            outcome = RunOutcome{RunStatus::kInterrupted, "interrupted; nodes did not stop within 60 s"};
    }
    if (stop_sent && outcome->status == RunStatus::kFinished) outcome = RunOutcome{RunStatus::kInterrupted, "interrupted"};
    if (outcome->status == RunStatus::kFailed) {
        // Let the surviving nodes end their part (and report what they have) before leaving.
        (void)coord->stop();
        const auto until = Clock::now() + std::chrono::seconds(5);
        while (Clock::now() < until) {
            (void)coord->poll(sink, 100);
            bool all = true;
            for (size_t i = 0; i < roles.size(); ++i)
                all = all && (coord->nodes()[i].done || coord->nodes()[i].heartbeat_age_s > cfg.cluster.heartbeat_timeout_s);
            if (all) break;
        }
    }
    if (Status f = sink.flush(); !f) std::fprintf(stderr, "thinwire: metrics not stored: %s\n", f.message().c_str());
    (void)store.add_event(out.run_id, {since_s(t0), "coordinator",
                                       outcome->status == RunStatus::kFinished ? EventLevel::kInfo : EventLevel::kError,
                                       to_string(outcome->status), outcome->reason});
    check(store.finish_run(out.run_id, outcome->status, outcome->reason));
    for (size_t i = 0; i < roles.size(); ++i) out.summary[roles[i].name] = coord->nodes()[i].summary;
    if (local) coord->shutdown();
    out.status = outcome->status;
    out.reason = outcome->reason;
    out.traces = std::move(sink.traces);
    out.wall_s = since_s(t0);
    return out;
}

}  // namespace tw::cli
