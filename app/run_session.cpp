// One coordinated run; see run_session.h.
#include "app/run_session.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <cmath>
#include <cstdio>
#include <thread>
#include <zmq.hpp>

#include "app/engine_node.h"
#include "core/config_io.h"
#include "core/data_root.h"
#include "core/layout.h"
#include "core/metric_names.h"
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
    StoreSink(RunStore& store, int64_t run_id, int64_t steps, int64_t every, std::vector<std::string> nodes,
              bool print, std::function<void(const EventRecord&)> on_event)
        : store_(store), run_id_(run_id), buf_(store, run_id), steps_(steps), every_(every),
          print_(print), tty_(print && isatty(fileno(stdout)) != 0), nodes_(std::move(nodes)),
          on_event_(std::move(on_event)) {}

    void on_metrics(const std::vector<MetricRecord>& records) override {
        for (auto& m : records) {
            Line& l = lines_[m.node];
            if (m.name == metric::kTrainLoss) l.step = m.step, l.loss = m.value;
            else if (m.name == metric::kValLoss) l.val = m.value;
            else if (metric::is_bytes_sent(m.name))
                l.sent[m.name] = m.value;
            l.sim_s = m.sim_s;
            if (print_ && !tty_ && m.name == metric::kTrainLoss && (m.step % every_ == 0 || m.step == steps_))
                print_line(m.node, l);
            buf_.add(m);
        }
        // A coordinator crash loses at most a second of metrics. A failed write keeps its rows
        // pending for the next flush (storage/metric_writer.h); say so once per failure.
        if (since_s(last_flush_) > 1.0)
            if (Status st = flush(); !st) std::fprintf(stderr, "thinwire: metrics not stored yet: %s\n", st.message().c_str());
    }
    void on_event(const EventRecord& e) override {
        if (Status st = store_.add_event(run_id_, e); !st)
            std::fprintf(stderr, "thinwire: event of %s not stored: %s\n", e.node.c_str(), st.message().c_str());
        if (on_event_) on_event_(e);
        if (print_ && e.level != EventLevel::kInfo)
            std::printf("%s: %s: %s\n", e.node.c_str(), e.kind.c_str(), e.text.c_str());
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
    bool print_, tty_, drawn_ = false;
    std::vector<std::string> nodes_;
    std::function<void(const EventRecord&)> on_event_;
    std::map<std::string, Line> lines_;
    Clock::time_point last_flush_ = Clock::now(), last_draw_ = Clock::now();
};

// Brings up the nodes the layout asks for; returns their control endpoints.
// Local nodes (threads, child processes) share the coordinator's data root; remote ones use their own.
std::unique_ptr<LocalCluster> bring_up(const RunConfig& cfg, int n, std::shared_ptr<zmq::context_t> ctx,
                                       const std::string& exe, const std::string& data_root,
                                       std::vector<std::string>& endpoints) {
    if (cfg.cluster.mode == "remote") {
        endpoints = cfg.cluster.endpoints;
        return nullptr;
    }
    std::unique_ptr<LocalCluster> c;
    if (cfg.cluster.mode == "threads") {
        NodeOptions base;
        base.ctx = ctx;
        base.version = thinwire_version();
        base.data_root = data_root;
        c = unwrap(LocalCluster::start_threads(n, base, engine_worker_factory(ctx)));
    } else {
        c = unwrap(LocalCluster::start_processes(n, exe, data_root));
    }
    endpoints = c->endpoints();
    return c;
}

}  // namespace

void Session::body(RunConfig cfg) {
    SessionResult& out = result_;
    const auto t0 = Clock::now();
    RunStore store = unwrap(RunStore::open(db_path_));
    // Paths as every node reads them: relative to its data root. What is stored and sent is this
    // form; this process opens the files through `here`, the same paths resolved under its root.
    check(relative_to_root(cfg, data_root_));
    RunConfig here = cfg;
    check(confine_paths(here, data_root_));
    set_phase("preparing data");
    // The coordinator's machine prepares the data once, so thread and child-process nodes find it
    // cached instead of racing to build it; it also fixes the vocabulary every node must use.
    PreparedData data = unwrap(prepare_data(here.data, print_ ? [](const std::string& s) { std::printf("%s\n", s.c_str()); }
                                                              : static_cast<void (*)(const std::string&)>(nullptr)));
    if (cfg.model.vocab_size == 0) cfg.model.vocab_size = data.vocab_size;
    out.unigram = unigram_loss(*data.train, *data.val, cfg.model.vocab_size);
    // The reference every node's own data must match (each node checks before any step).
    const DataFingerprint fingerprint = unwrap(data_fingerprint(data));
    const int64_t need = nodes_needed(cfg);
    const int n = static_cast<int>(cfg.cluster.nodes > 0 ? cfg.cluster.nodes : need);
    // Threads of one process share its cores.
    if (cfg.cluster.mode == "threads") cfg.run.threads = std::max<int64_t>(1, cfg.run.threads / n);

    set_phase("starting nodes");
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> endpoints;
    std::unique_ptr<LocalCluster> local = bring_up(cfg, n, ctx, exe_, data_root_, endpoints);
    CoordinatorOptions copts;
    copts.heartbeat_s = cfg.cluster.heartbeat_s;
    copts.heartbeat_timeout_s = cfg.cluster.heartbeat_timeout_s;
    if (!cfg.cluster.coordinator_key.empty()) {
        copts.keys = unwrap(read_secret_key(cfg.cluster.coordinator_key));
        for (auto& k : cfg.cluster.node_keys) copts.node_keys.push_back(unwrap(public_key_from_text_or_file(k)));
    }
    auto coord = unwrap(Coordinator::connect(ctx, endpoints, copts));
    std::vector<NodeRole> roles = unwrap(assign_roles(cfg, endpoints, free_tcp_port));
    for (NodeRole& r : roles) r.data_fingerprint = to_wire(fingerprint);

    out.run_id = unwrap(store.create_run(cfg.run.name, "run", to_toml(cfg), config_hash(cfg), cfg.run.seed));
    check(store.set_run_group(out.run_id, group_, cfg.cluster.mode));
    if (Status st = store.add_event(out.run_id,
                          {since_s(t0), "coordinator", EventLevel::kInfo, "data", "data " + to_text(fingerprint)}); !st)
        std::fprintf(stderr, "thinwire: event not stored: %s\n", st.message().c_str());
    {
        std::lock_guard<std::mutex> lock(mu_);
        snap_.run_id = out.run_id;
    }
    for (size_t i = 0; i < roles.size(); ++i) {
        const NodeInfo& ni = coord->nodes()[i];
        RunNode rn;
        rn.node = roles[i].name;
        rn.endpoint = ni.endpoint;
        rn.role = cfg.outer.algorithm == "none" ? "trainer" : cfg.outer.algorithm;
        rn.kind = roles[i].kind;
        rn.replica = roles[i].replica;
        rn.stage = roles[i].stage;
        rn.rank = roles[i].rank;
        rn.host = ni.host;
        rn.version = ni.version;
        rn.threads = ni.threads;
        check(store.add_node(out.run_id, rn));
        out.nodes.push_back(roles[i].name);
    }
    if (print_) std::printf("run %lld \"%s\": %s, %lld replica%s × %lld node%s on %s (%d node%s, %lld thread%s each), %lld steps\n",
                (long long)out.run_id, cfg.run.name.c_str(),
                cfg.outer.algorithm == "none" ? "one node" : cfg.outer.algorithm.c_str(), (long long)cfg.outer.replicas,
                cfg.outer.replicas == 1 ? "" : "s", (long long)cfg.cluster.nodes_per_replica,
                cfg.cluster.nodes_per_replica == 1 ? "" : "s", cfg.cluster.mode.c_str(), n, n == 1 ? "" : "s",
                (long long)cfg.run.threads, cfg.run.threads == 1 ? "" : "s", (long long)cfg.train.steps);

    StoreSink sink(store, out.run_id, cfg.train.steps, cfg.train.log_every, out.nodes, print_,
                   [this](const EventRecord& e) { add_log(e.node + ": " + e.kind + ": " + e.text); });
    set_phase("running");
    std::optional<RunOutcome> outcome;
    // Nodes need none of the coordinator's own key material: the run's config without it.
    RunConfig node_cfg = cfg;
    node_cfg.cluster.coordinator_key.clear();  // nodes get their peers' keys in their roles
    node_cfg.cluster.node_keys.clear();
    if (Status st = coord->configure(roles, to_toml(node_cfg)); !st) outcome = RunOutcome{RunStatus::kFailed, st.message()};
    else if (Status st2 = coord->start(); !st2) outcome = RunOutcome{RunStatus::kFailed, st2.message()};
    bool stop_sent = false;
    Clock::time_point stop_at;
    while (!outcome) {
        outcome = coord->poll(sink, 100);
        sink.redraw();
        publish(coord->nodes());
        if (pause_req_.exchange(false)) {
            if (Status st = coord->pause(); st) set_phase("paused"), add_log("coordinator: paused");
            else add_log("coordinator: pause failed: " + st.message());
        }
        if (resume_req_.exchange(false)) {
            if (Status st = coord->resume(); st) set_phase("running"), add_log("coordinator: resumed");
            else add_log("coordinator: resume failed: " + st.message());
        }
        if (stop_req_.load() && !stop_sent) {
            set_phase("stopping");
            add_log("coordinator: stop requested");
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
    if (Status st = store.add_event(out.run_id, {since_s(t0), "coordinator",
                                       outcome->status == RunStatus::kFinished ? EventLevel::kInfo : EventLevel::kError,
                                       to_string(outcome->status), outcome->reason}); !st)
        std::fprintf(stderr, "thinwire: event not stored: %s\n", st.message().c_str());
    check(store.finish_run(out.run_id, outcome->status, outcome->reason));
    for (size_t i = 0; i < roles.size(); ++i) out.summary[roles[i].name] = coord->nodes()[i].summary;
    publish(coord->nodes());
    if (local) coord->shutdown();
    out.status = outcome->status;
    out.reason = outcome->reason;
    out.wall_s = since_s(t0);
    add_log(std::string("coordinator: run ") + to_string(out.status) + (out.reason.empty() ? "" : ": " + out.reason));
}

Session::Session(RunConfig cfg, std::string db_path, std::string group, std::string exe, std::string data_root,
                 bool print_progress)
    : db_path_(std::move(db_path)), group_(std::move(group)), exe_(std::move(exe)), data_root_(std::move(data_root)),
      print_(print_progress) {
    thread_ = std::thread([this, cfg = std::move(cfg)] {
        try {
            body(cfg);
        } catch (const std::exception& e) {
            // Before the run exists (bad layout, no data) there is nothing to mark; the reason is the result.
            result_.status = RunStatus::kFailed;
            result_.reason = e.what();
            result_.failed_to_start = result_.run_id == 0;
            add_log(std::string("coordinator: ") + e.what());
        }
        std::lock_guard<std::mutex> lock(mu_);
        snap_.done = true;
        snap_.status = result_.status;
        snap_.reason = result_.reason;
        snap_.phase = to_string(result_.status);
    });
}

Session::~Session() {
    stop();
    if (thread_.joinable()) thread_.join();
}

const SessionResult& Session::wait() {
    if (thread_.joinable()) thread_.join();
    return result_;
}

SessionSnapshot Session::snapshot() const {
    std::lock_guard<std::mutex> lock(mu_);
    return snap_;
}

void Session::set_phase(const std::string& p) {
    std::lock_guard<std::mutex> lock(mu_);
    snap_.phase = p;
}

void Session::add_log(const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);
    snap_.log.push_back(line);
}

void Session::publish(const std::vector<NodeInfo>& nodes) {
    std::lock_guard<std::mutex> lock(mu_);
    snap_.nodes = nodes;
}

SessionResult run_session(RunConfig cfg, const std::string& db_path, const std::string& group, const std::string& exe,
                          const std::string& data_root, const std::atomic<bool>& interrupt) {
    Session s(std::move(cfg), db_path, group, exe, data_root, /*print_progress=*/true);
    while (!s.snapshot().done) {
        if (interrupt.load()) s.stop();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    SessionResult r = s.wait();
    if (r.failed_to_start) throw Error(r.reason);
    return r;
}

Result<std::string> coordinator_data_root(const std::string& given) {
    if (!given.empty()) return resolve_node_data_root(given);
    std::error_code ec;
    const auto cwd = std::filesystem::canonical(std::filesystem::current_path(ec), ec);
    if (ec) return Result<std::string>::error("data root: the working directory: " + ec.message());
    return cwd.string();
}

}  // namespace tw::cli
