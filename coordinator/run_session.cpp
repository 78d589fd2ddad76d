// One coordinated run; see run_session.h.
#include "coordinator/run_session.h"
#include "core/run_kind.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <cmath>
#include <cstdio>
#include <thread>
#include <zmq.hpp>

#include "coordinator/store_sink.h"
#include "core/config_warnings.h"
#include "core/algorithm.h"
#include "core/config_io.h"
#include "core/data_root.h"
#include "core/layout.h"
#include "core/data_fingerprint.h"
#include "core/metric_names.h"
#include "core/hub_endpoint.h"
#include "core/model_size.h"
#include "core/time_budget.h"
#include "remote/hub_relay.h"
#include "remote/protocol.h"
#include "remote/cluster.h"
#include "remote/coordinator.h"
#include "coordinator/resume_plan.h"
#include "coordinator/lost_restarts.h"
#include "coordinator/scheduled_kills.h"
#include "coordinator/launch_limits.h"
#include "coordinator/node_config.h"
#include "coordinator/relay_joins.h"
#include "coordinator/run_banner.h"
#include "coordinator/final_model_assembly.h"
#include "storage/run_folder.h"
#include "storage/run_liveness.h"
#include "storage/run_store.h"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;
double since_s(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A first preparation downloads nothing but may train a tokenizer on the corpus: minutes, not hours.
constexpr int kPrepareTimeoutMs = 30 * 60 * 1000;

// Brings up the nodes the layout asks for; returns their control endpoints.
// Local nodes (threads, child processes) share the coordinator's data root; remote ones use their own.
std::unique_ptr<LocalCluster> bring_up_nodes(const RunConfig& cfg, int n, std::shared_ptr<zmq::context_t> ctx,
                                       const EngineHooks& hooks, const std::string& data_root,
                                       std::vector<std::string>& endpoints) {
    if (cfg.cluster.mode == "remote") {
        endpoints = cfg.cluster.endpoints;
        return nullptr;
    }
    std::unique_ptr<LocalCluster> c;
    if (cfg.cluster.mode == "threads") {
        NodeOptions base;
        base.ctx = ctx;
        base.version = hooks.version;
        base.data_root = data_root;
        base.prepare_data = hooks.prepare_data;
        c = unwrap(LocalCluster::start_threads(n, base, hooks.worker_factory(ctx)));
    } else {
        c = unwrap(LocalCluster::start_processes(n, hooks.exe, data_root));
    }
    endpoints = c->endpoints();
    return c;
}

// The run_nodes row's role: the run kind, or the algorithm the replicas run.
std::string node_role_label(const RunConfig& cfg) {
    if (const RunKindRow& kind = run_kind_of(cfg); kind.id != RunKind::kReplicas) return kind.name;
    if (algorithm_of(cfg) == Algorithm::kNone) return "trainer";
    return to_string(algorithm_of(cfg));
}

}  // namespace

void Session::fail_unstarted(RunStore& store, const RunConfig& cfg, const std::string& reason, double wall_s,
                             RunStatus status) {
    SessionResult& out = result_;
    out.run_id = unwrap(store.create_run(cfg.run.name, "run", to_toml(cfg), config_hash(cfg), cfg.run.seed));
    {
        std::lock_guard<std::mutex> lock(mu_);
        snap_.run_id = out.run_id;
    }
    check(store.set_run_group(out.run_id, group_, cfg.cluster.mode));
    if (Status st = store.add_event(out.run_id, {wall_s, "coordinator", EventLevel::kError, to_string(status), reason});
        !st)
        std::fprintf(stderr, "thinwire: event not stored: %s\n", st.message().c_str());
    check(store.finish_run(out.run_id, status, reason));
    run_ended_ = true;
    out.status = status;
    out.reason = reason;
    out.wall_s = wall_s;
    add_log(std::string("coordinator: run ") + to_string(status) + ": " + reason);
}

// What the phases of one session share: the run's config as this session adapts it, the store,
// the nodes and their coordinator, the roles, the relay, what a resume goes on from, and the run's
// parts that outlive the poll loop (the sink, the supervisors, the final model's assembly).
struct Session::Live {
    RunConfig cfg;
    Clock::time_point t0 = Clock::now();
    RunStore store;
    std::string launch_toml;  // the config before this session adapts it (run --resume starts here)
    int64_t need = 0;         // nodes the layout's roles take
    int n = 0;                // nodes brought up (cluster.nodes, or need)
    LaunchVerdict limits;
    std::shared_ptr<zmq::context_t> ctx;
    std::unique_ptr<LocalCluster> local;  // null for remote nodes
    std::vector<std::string> endpoints;   // the nodes' control endpoints, node order
    CoordinatorOptions copts;
    std::unique_ptr<Coordinator> coord;
    DataFingerprint fingerprint;
    std::vector<NodeRole> roles;
    std::unique_ptr<HubRelay> hub;  // outer.topology = "hub"
    RelayJoins joins;               // nodes named by key, found at a relay
    // A resume: the common step, or each node's own (HDEE experts, time-budgeted rounds).
    int64_t resume_step = -1;
    bool independent = false;
    std::map<std::string, int64_t> node_steps;
    std::unique_ptr<ScheduledKills> kills;
    std::unique_ptr<LostRestarts> restarts;
    std::unique_ptr<FinalModelAssembly> final_model;
    std::unique_ptr<StoreSink> sink;
    Status store_failure;  // the first store write that failed (a full disk, an I/O error)
    bool stop_sent = false;

    explicit Live(RunStore s) : store(std::move(s)) {}
    void event(EventLevel level, const std::string& kind, const std::string& text, int64_t run_id) {
        if (Status st = store.add_event(run_id, {since_s(t0), "coordinator", level, kind, text}); !st)
            std::fprintf(stderr, "thinwire: event not stored: %s\n", st.message().c_str());
    }
};

void Session::body(RunConfig cfg) {
    Live run(unwrap(RunStore::open(db_path_)));
    run.cfg = std::move(cfg);
    bring_up(run);
    if (!prepare(run)) return;
    open_run(run);
    RunOutcome outcome = run_until_done(run);
    wind_down(run, std::move(outcome));
}

void Session::bring_up(Live& run) {
    RunConfig& cfg = run.cfg;
    // Paths as every node reads them: relative to its data root. What is stored and sent is this
    // form; this process opens the files through `here`, the same paths resolved under its root.
    check(relative_to_root(cfg, data_root_));
    {  // a path outside the data root fails here, before any node starts
        RunConfig here = cfg;
        check(confine_paths(here, data_root_));
    }
    run.launch_toml = to_toml(cfg);
    run.need = nodes_needed(cfg);
    run.n = static_cast<int>(cfg.cluster.nodes > 0 ? cfg.cluster.nodes : run.need);
    // Nodes on this machine share its cores: threads of one process and local child processes alike
    // get run.threads / n. Equal BLAS thread counts are also what makes the two modes compute the
    // same bits: OpenBLAS splits a GEMM by its thread count, and on AVX-512 cores the edge kernels
    // of the split add in another order (docs/determinism.md).
    if (cfg.cluster.mode == "threads" || cfg.cluster.mode == "local")
        cfg.run.threads = std::max<int64_t>(1, cfg.run.threads / run.n);

    // Launch limits (coordinator/launch_limits.h): a layout this machine cannot hold is refused here,
    // before the first node (thread or child process) exists, with the figures and the keys.
    set_phase("checking limits");
    run.limits = unwrap(launch_limits_here(cfg, run.n));
    for (const std::string& w : run.limits.warnings) {
        add_log("coordinator: launch: " + w);
        if (print_) std::fprintf(stderr, "thinwire: warning: %s\n", w.c_str());
    }

    set_phase("starting nodes");
    run.ctx = std::make_shared<zmq::context_t>();
    run.local = bring_up_nodes(cfg, run.n, run.ctx, hooks_, data_root_, run.endpoints);
    run.copts.heartbeat_s = cfg.cluster.heartbeat_s;
    run.copts.heartbeat_timeout_s = cfg.cluster.heartbeat_timeout_s;
    if (!cfg.cluster.coordinator_key.empty()) {
        run.copts.keys = unwrap(read_secret_key(cfg.cluster.coordinator_key));
        for (size_t i = 0; i < cfg.cluster.node_keys.size(); ++i) {
            const std::string& k = cfg.cluster.node_keys[i];
            // A node named by key ("key:K") may leave its entry empty: RelayJoins fills it.
            run.copts.node_keys.push_back(k.empty() ? k : unwrap(public_key_from_text_or_file(k)));
        }
        run.joins = unwrap(RelayJoins::resolve(
            cfg, run.copts.keys, run.endpoints, run.copts.node_keys,
            [this](const std::string& line) {
                add_log(line);
                if (print_) std::fprintf(stderr, "thinwire: %s\n", line.c_str());
            },
            [this] { return stop_req_.load(); }));
    }
    run.coord = unwrap(Coordinator::connect(run.ctx, run.endpoints, run.copts));
}

bool Session::prepare(Live& run) {
    RunConfig& cfg = run.cfg;
    set_phase("preparing data");
    // The nodes prepare (or find) the data themselves, node 0 first: thread and child-process
    // nodes then find it cached instead of racing to build it. Node 0's vocabulary is the run's,
    // and its fingerprint the reference every node's own data must match before any step.
    auto prepared = run.coord->prepare(to_toml(without_keys(cfg)), static_cast<size_t>(run.need), kPrepareTimeoutMs,
                                       [this] { return stop_req_.load(); });
    if (!prepared && stop_req_.load()) {  // Ctrl-C while the nodes prepared: interrupted, not failed
        fail_unstarted(run.store, cfg, "stopped on request while the nodes prepared the data", since_s(run.t0),
                       RunStatus::kInterrupted);
        if (run.local) run.coord->shutdown();
        return false;
    }
    if (!prepared || prepared->empty()) {
        // Data that cannot be prepared (a missing or empty shard, a binary corpus) fails the run
        // where a person looks for it: stored as failed with the node's reason, not only printed.
        fail_unstarted(run.store, cfg, prepared ? "no node to prepare the data on" : prepared.message(), since_s(run.t0));
        if (run.local) run.coord->shutdown();
        return false;
    }
    const auto reports = std::move(*prepared);
    for (auto& line : reports.front().log) announce(line);
    if (cfg.model.vocab_size == 0) cfg.model.vocab_size = reports.front().vocab_size;
    result_.unigram = reports.front().unigram_loss;
    run.fingerprint = unwrap(parse_data_fingerprint(reports.front().fingerprint));
    run.roles = unwrap(assign_roles(cfg, run.endpoints, free_tcp_port));
    for (NodeRole& r : run.roles) r.data_fingerprint = to_wire(run.fingerprint);
    run.joins.mark_relayed(run.roles, run.endpoints);
    // outer.topology = "hub": the relay runs here, in the coordinator, on cluster.hub_endpoint
    // (loopback on a free port when unset: thread and child-process nodes reach it). It admits only
    // requests with the run's token, and with keys only the members' keys, each for its own rank.
    if (uses_hub(cfg)) {
        const uint64_t token = random_token();
        HubRelayOptions ho;
        // Spares are members too (mesh ranks R..R+S-1): one that takes a lost replica's place
        // uploads under its own rank, and each round's mask names whoever holds the places.
        ho.members = static_cast<int>(cfg.outer.replicas + cfg.cluster.spares);
        ho.token = token;
        ho.max_payload_bytes = largest_data_frame_bytes(cfg);
        ho.log = [](const std::string& line) { std::fprintf(stderr, "thinwire: %s\n", line.c_str()); };
        if (!run.copts.keys.empty()) {
            ho.keys = run.copts.keys;
            ho.member_keys.assign(static_cast<size_t>(ho.members), "");
            for (size_t i = 0; i < run.roles.size(); ++i)
                if (run.roles[i].mesh_rank >= 0 && run.roles[i].mesh_rank < ho.members)
                    ho.member_keys[static_cast<size_t>(run.roles[i].mesh_rank)] = run.copts.node_keys.at(i);
        }
        const std::string listen = cfg.cluster.hub_endpoint.empty() ? "tcp://127.0.0.1:*" : cfg.cluster.hub_endpoint;
        run.hub = unwrap(HubRelay::start(run.ctx, listen, std::move(ho)));
        for (NodeRole& r : run.roles) {
            r.mesh_token = token;
            if (r.mesh_rank >= 0)
                r.hub_endpoint = cfg.cluster.hub_endpoint.empty() ? run.hub->endpoint() : cfg.cluster.hub_endpoint;
        }
    }
    return true;
}

void Session::open_run(Live& run) {
    RunConfig& cfg = run.cfg;
    SessionResult& out = result_;
    RunStore& store = run.store;
    auto& roles = run.roles;
    // A new run, or the one being resumed (checked before anything is changed in the store).
    LaunchRecord launch{run.launch_toml, ""};
    // HDEE experts exchange nothing and train step counts of their own: each resumes from its own
    // latest checkpoint (a node that wrote none starts over), not from one step common to all.
    // Time-budgeted rounds run a number of steps per round of each replica's own: the replicas
    // resume after a common round, each at its own step.
    run.independent = run_kind_of(cfg).resumes_each_node;
    if (resume_run_ > 0) {
        std::vector<std::string> names;
        for (auto& r : roles) names.push_back(r.name);
        ResumeRule rule;
        rule.independent = run.independent;
        if (cfg.outer.round_time_s > 0) {
            const TimeBudget plan = unwrap(time_budget(cfg));
            for (auto& r : roles)
                if (r.replica >= 0 && static_cast<size_t>(r.replica) < plan.inner_steps.size())
                    rule.round_steps[r.name] = plan.inner_steps[static_cast<size_t>(r.replica)];
        }
        for (auto& r : roles)
            if (r.kind == NodeKind::kSpare) rule.spares.insert(r.name);
        const bool own_steps = run.independent || !rule.round_steps.empty();
        const ResumePoint at = unwrap(resume_point(store, resume_run_, names, rule));
        run.resume_step = at.step;
        run.node_steps = at.node_steps;
        launch.uid = at.uid;
        out.run_id = resume_run_;
        check(store.reopen_run(out.run_id));
        int64_t dropped = 0;
        std::string where = "at step " + std::to_string(run.resume_step);
        if (own_steps) {
            where = run.independent ? "each expert from its own latest checkpoint:"
                                    : "after a common round, each replica at its own step:";
            for (auto& r : roles) {
                const auto it = run.node_steps.find(r.name);
                const int64_t from = it == run.node_steps.end() ? -1 : it->second;  // -1: every row of it goes
                dropped += unwrap(store.delete_metrics_after(out.run_id, from, r.name));
                where += " " + r.name + (from < 0 ? " anew" : " " + std::to_string(from));
            }
        } else {
            dropped = unwrap(store.delete_metrics_after(out.run_id, run.resume_step));
            // A spare starts standing by again, as at the run's start: none of its rows stays.
            for (const std::string& n : rule.spares) dropped += unwrap(store.delete_metrics_after(out.run_id, -1, n));
        }
        check(store.set_config(out.run_id, to_toml(cfg), config_hash(cfg)));
        check(store.add_event(out.run_id, {since_s(run.t0), "coordinator", EventLevel::kInfo, "resume",
                                           "resumed " + where + " (" + std::to_string(dropped) +
                                               " metric rows after it deleted)"}));
        out.resumed_at = run.resume_step;
    } else {
        out.run_id = unwrap(store.create_run(cfg.run.name, "run", to_toml(cfg), config_hash(cfg), cfg.run.seed));
        check(store.set_run_group(out.run_id, group_, cfg.cluster.mode));
        char uid[17];
        std::snprintf(uid, sizeof uid, "%016llx", static_cast<unsigned long long>(random_token()));
        launch.uid = uid;
    }
    check(store.set_launch(out.run_id, launch));
    check(store.set_coordinator(out.run_id, static_cast<int64_t>(getpid()), this_host_name()));
    // Every node's checkpoints live in <data.cache_dir>/checkpoints/<this> under its own data root.
    const std::string checkpoint_run = "run-" + std::to_string(out.run_id) + "-" + launch.uid;
    for (NodeRole& r : roles) {
        if (cfg.train.ckpt_every > 0 || resume_run_ > 0) r.checkpoint_run = checkpoint_run;
        r.resume_step = run.resume_step;
        if (!run.node_steps.empty() || run.independent) {
            const auto it = run.node_steps.find(r.name);
            r.resume_step = it == run.node_steps.end() ? -1 : it->second;
        }
        if (r.kind == NodeKind::kSpare) r.resume_step = -1;  // stands by again (resume_plan.h ResumeRule)
    }
    run.event(EventLevel::kInfo, "data", "data " + to_text(run.fingerprint), out.run_id);
    // The launch estimate stays with the run (a later look at a crash compares it with the machine).
    for (const std::string& w : run.limits.warnings) run.event(EventLevel::kWarning, "launch", w, out.run_id);
    if (!run.limits.summary.empty())
        run.event(EventLevel::kInfo, "launch", run.limits.summary + "; " + run.limits.detail, out.run_id);
    {
        std::lock_guard<std::mutex> lock(mu_);
        snap_.run_id = out.run_id;
    }
    for (size_t i = 0; i < roles.size(); ++i) {
        out.nodes.push_back(roles[i].name);
        if (resume_run_ > 0) continue;  // a resumed run's nodes are stored already
        const NodeInfo& ni = run.coord->nodes()[i];
        RunNode rn;
        rn.node = roles[i].name;
        rn.endpoint = ni.endpoint;
        rn.role = node_role_label(cfg);
        rn.kind = to_string(roles[i].kind);
        rn.replica = roles[i].replica;
        rn.stage = roles[i].stage;
        rn.rank = roles[i].rank;
        rn.host = ni.host;
        rn.version = ni.version;
        rn.threads = ni.threads;
        rn.cpu = ni.cpu;
        rn.blas = ni.blas;
        check(store.add_node(out.run_id, rn));
    }
    RunBannerFacts facts;
    facts.run_id = out.run_id;
    facts.nodes = run.n;
    facts.resumed = resume_run_ > 0;
    facts.resume_step = run.resume_step;
    facts.own_steps = run.independent || !run.node_steps.empty();
    facts.independent = run.independent;
    for (const NodeRole& r : roles) facts.node_steps.emplace_back(r.name, r.resume_step);
    for (const std::string& line : run_banner(cfg, facts)) announce(line);

    run.kills = std::make_unique<ScheduledKills>(cfg, roles);
    run.restarts = std::make_unique<LostRestarts>(cfg, roles);
    // The final model: the nodes holding it send it after training (core/final_model.h).
    run.final_model = std::make_unique<FinalModelAssembly>(cfg.model);
    for (const NodeRole& r : roles)
        if (r.kind == NodeKind::kExpert && r.expert_d_ff > 0) {
            ModelConfig m = cfg.model;
            m.d_ff = r.expert_d_ff;
            run.final_model->expect(r.name, m);
        }
    ScheduledKills* kills = run.kills.get();
    run.sink = std::make_unique<StoreSink>(store, out.run_id, cfg.train.steps, cfg.train.log_every, out.nodes, print_,
                                           [this, kills](const EventRecord& e) {
                                               add_log(e.node + ": " + e.kind + ": " + e.text);
                                               kills->on_event(e);
                                           });
    run.sink->model = run.final_model.get();
    // Settings that run but probably not as meant (core/config_warnings.h): stored, printed, listed.
    for (const std::string& w : config_warnings(cfg))
        run.sink->on_event({0, "coordinator", EventLevel::kWarning, "config", w});
}

RunOutcome Session::run_until_done(Live& run) {
    const RunConfig& cfg = run.cfg;
    const auto& roles = run.roles;
    Coordinator& coord = *run.coord;
    StoreSink& sink = *run.sink;
    set_phase("running");
    {
        // Survivors go on (docs/faults.md): the replicas of an outer algorithm may be lost while
        // cluster.min_replicas of them remain — a replica of several nodes as a whole — and a spare
        // counts once it holds a place, so never more than outer.replicas are live. A run with
        // pipeline replicas whose rounds go on among survivors (core/layout.h
        // pipeline_survives_loss) counts each replica as one unit too: a pipeline leaves as a whole.
        // Every other node is vital.
        const bool elastic = run_kind_of(cfg).survives_loss(cfg);
        std::vector<int> unit(roles.size(), -1);
        for (size_t i = 0; i < roles.size() && elastic; ++i)
            unit[i] = roles[i].kind == NodeKind::kSpare ? static_cast<int>(cfg.outer.replicas + i) : roles[i].replica;
        coord.set_loss_policy(std::move(unit), cfg.cluster.min_replicas, cfg.outer.replicas);
    }
    std::optional<RunOutcome> outcome;
    if (Status st = coord.configure(roles, to_toml(without_keys(cfg))); !st) outcome = RunOutcome{RunStatus::kFailed, st.message()};
    else if (Status st2 = coord.start(); !st2) outcome = RunOutcome{RunStatus::kFailed, st2.message()};
    Clock::time_point stop_at, last_beat = Clock::now();
    const auto process_event = [&sink](const std::string& l) {
        sink.on_event({0, "coordinator", EventLevel::kWarning, "process", l});
    };
    // A store write that fails stops the run as a user's stop does (nodes end after their step,
    // checkpointing where train.ckpt_every asks), rather than training on while every row it makes
    // is held in memory and lost at the end.
    while (!outcome) {
        outcome = coord.poll(sink, 100);
        if (run.hub)  // the relay follows the coordinator's membership: a node counted lost is fenced there
            for (size_t i = 0; i < roles.size() && i < coord.nodes().size(); ++i)
                if (roles[i].mesh_rank >= 0) run.hub->fence(roles[i].mesh_rank, coord.nodes()[i].lost);
        if (run.store_failure.is_ok()) {
            run.store_failure = sink.write_failure();
            if (!run.store_failure.is_ok()) {
                const std::string line = "the run store could not be written (" + run.store_failure.message() +
                                         "); stopping the run";
                std::fprintf(stderr, "thinwire: %s\n", line.c_str());
                add_log("coordinator: " + line);
            }
        }
        if (!outcome && run.local && run.kills->active())
            if (Status st = run.kills->carry_out(*run.local, coord, process_event); !st)
                outcome = RunOutcome{RunStatus::kFailed, "scheduled kill: " + st.message()};
        if (!outcome && run.restarts->active())
            if (Status st = run.restarts->carry_out(
                    run.local.get(), coord, [&sink](const std::string& node) { return sink.tokens(node); }, process_event);
                !st)
                outcome = RunOutcome{RunStatus::kFailed, "restarting a lost node: " + st.message()};
        if (since_s(last_beat) >= kCoordinatorHeartbeatS) {  // readers tell a live coordinator from a dead one
            sink.heartbeat();
            last_beat = Clock::now();
        }
        sink.redraw();
        publish(coord.nodes(), run.joins);
        if (pause_req_.exchange(false)) {
            if (Status st = coord.pause(); st) set_phase("paused"), add_log("coordinator: paused");
            else add_log("coordinator: pause failed: " + st.message());
        }
        if (resume_req_.exchange(false)) {
            if (Status st = coord.resume(); st) set_phase("running"), add_log("coordinator: resumed");
            else add_log("coordinator: resume failed: " + st.message());
        }
        if ((stop_req_.load() || !run.store_failure.is_ok()) && !run.stop_sent) {
            set_phase("stopping");
            if (run.store_failure.is_ok()) add_log("coordinator: stop requested");
            (void)coord.stop();
            run.stop_sent = true;
            stop_at = Clock::now();
        }
        if (run.stop_sent && !outcome && since_s(stop_at) > 60)
            outcome = RunOutcome{RunStatus::kInterrupted, "interrupted; nodes did not stop within 60 s"};
    }
    if (run.stop_sent && outcome->status == RunStatus::kFinished) outcome = RunOutcome{RunStatus::kInterrupted, "interrupted"};
    return *outcome;
}

void Session::wind_down(Live& run, RunOutcome outcome) {
    const RunConfig& cfg = run.cfg;
    SessionResult& out = result_;
    Coordinator& coord = *run.coord;
    StoreSink& sink = *run.sink;
    const auto& roles = run.roles;
    if (outcome.status == RunStatus::kFailed) {
        // Let the surviving nodes end their part (and report what they have) before leaving.
        (void)coord.stop();
        const auto until = Clock::now() + std::chrono::seconds(5);
        while (Clock::now() < until) {
            (void)coord.poll(sink, 100);
            bool all = true;
            for (size_t i = 0; i < roles.size(); ++i)
                all = all && (coord.nodes()[i].done || coord.nodes()[i].heartbeat_age_s > cfg.cluster.heartbeat_timeout_s);
            if (all) break;
        }
    }
    if (const RunKindRow& kind = run_kind_of(cfg); kind.finish && outcome.status == RunStatus::kFinished) {
        // Every node has finished and reported: what the kind adds (HDEE combines its ensembles).
        auto end = kind.finish(cfg, sink.scores);
        if (!end) {
            outcome = RunOutcome{RunStatus::kFailed, end.message()};
        } else {
            std::vector<MetricRecord> rows;
            for (auto& [name, v] : end->metrics)
                rows.push_back({end->metrics_node, 0, -1, since_s(run.t0), 0, name, v});
            sink.on_metrics(rows);
            out.end_tables = end->tables;
        }
    }
    if (Status st = keep_final_model(cfg, roles, *run.final_model, out); !st)
        sink.on_event({0, "coordinator", EventLevel::kWarning, "model", "no final model kept: " + st.message()});
    else if (!out.model_dir.empty())
        sink.on_event({0, "coordinator", EventLevel::kInfo, "model", "final model kept in " + out.model_dir});
    // The last try for rows a failed write kept (into the writer's reserve). Whatever could not be
    // stored fails the run, with the count, so a run whose rows are missing never reads as finished.
    if (Status f = sink.flush(); !f && run.store_failure.is_ok()) run.store_failure = f;
    if (!run.store_failure.is_ok()) {
        const size_t lost = sink.unstored();
        std::string reason = "the run store could not be written: " + run.store_failure.message() + "; " +
                             (lost == 0 ? std::string("every metric row was stored in the end")
                                        : std::to_string(lost) + " metric rows not stored");
        if (outcome.status == RunStatus::kFailed && !outcome.reason.empty()) reason += " (and: " + outcome.reason + ")";
        outcome = RunOutcome{RunStatus::kFailed, reason};
        out.store_failed = true;
        if (lost > 0)
            std::fprintf(stderr, "thinwire: run %lld: %zu metric rows not stored (the run store could not be written)\n",
                         (long long)out.run_id, lost);
    }
    // The result first: what the nodes reported holds whether or not the store takes the end.
    for (size_t i = 0; i < roles.size(); ++i) out.summary[roles[i].name] = coord.nodes()[i].summary;
    out.status = outcome.status;
    out.reason = outcome.reason;
    // The run's end before its last events: a store short of room may take one row more, and
    // this is the one that matters. If not even that, the run stays "running" until a reader sees
    // its heartbeat stop (storage/run_liveness.h) and the reason is only printed here.
    if (Status st = run.store.finish_run(out.run_id, outcome.status, outcome.reason); !st)
        std::fprintf(stderr, "thinwire: run %lld could not be marked %s in the store (%s): %s\n", (long long)out.run_id,
                     to_string(outcome.status), st.message().c_str(), outcome.reason.c_str());
    run_ended_ = true;  // tried: end_after_exception must not try again
    sink.finish();
    run.event(outcome.status == RunStatus::kFinished ? EventLevel::kInfo : EventLevel::kError, to_string(outcome.status),
              outcome.reason, out.run_id);
    if (run.hub) {
        // The relay's own byte counts (uploads received, downloads sent), beside the nodes' counters.
        const ByteCounters hb = run.hub->counters();
        const int k = static_cast<int>(LinkClass::kOuterSync);
        run.event(EventLevel::kInfo, "hub",
                  "hub relay: received " + std::to_string(hb.recv_bytes[k]) + " B in " + std::to_string(hb.recv_msgs[k]) +
                      " uploads, sent " + std::to_string(hb.sent_bytes[k]) + " B in " + std::to_string(hb.sent_msgs[k]) +
                      " payloads, refused " + std::to_string(run.hub->refused()),
                  out.run_id);
    }
    if (!run.joins.empty()) {
        // What the relay carried for each node named by key, beside the nodes' own counters.
        std::vector<std::string> names;
        for (const NodeRole& r : roles) names.push_back(r.name);
        for (const std::string& line : run.joins.report(names)) run.event(EventLevel::kInfo, "relay", line, out.run_id);
    }
    publish(coord.nodes(), run.joins);
    if (run.local) coord.shutdown();
    out.wall_s = since_s(run.t0);
    add_log(std::string("coordinator: run ") + to_string(out.status) + (out.reason.empty() ? "" : ": " + out.reason));
}

Status Session::keep_final_model(const RunConfig& cfg, const std::vector<NodeRole>& roles,
                                 const FinalModelAssembly& parts, SessionResult& out) const {
    const std::string dir = run_folder(db_path_, out.run_id);
    if (dir.empty()) return Status::ok();  // a store without a file keeps no files
    std::vector<std::string> senders;
    for (const NodeRole& r : roles)
        if (parts.holds(r.name)) senders.push_back(r.name);
    if (senders.empty()) return Status::error("no node sent it (the run ended before its end of training)");
    std::string kept;
    if (run_kind_of(cfg).model_per_node) {
        // Each sender's model is a model of its own: model-NODE.safetensors.
        for (const std::string& n : senders) {
            auto w = parts.write(dir, {n}, "model-" + n + ".safetensors");
            if (!w) return w.status();
            kept += (kept.empty() ? "" : ", ") + n;
        }
    } else {
        // The global model from the lowest replica that sent all of it: one node, or a pipeline
        // replica's stages in stage order.
        std::map<int64_t, std::vector<std::string>> by_replica;
        for (const NodeRole& r : roles)
            if (parts.holds(r.name)) by_replica[r.replica].push_back(r.name);
        Status last = Status::error("no replica sent all of it");
        for (auto& [replica, nodes] : by_replica) {
            auto w = parts.write(dir, nodes, kRunModelFile);
            if (!w) {
                last = w.status();
                continue;
            }
            for (const std::string& n : nodes) kept += (kept.empty() ? "" : ", ") + n;
            last = Status::ok();
            break;
        }
        if (!last) return last;
    }
    std::FILE* f = std::fopen((dir + "/" + kRunConfigFile).c_str(), "wb");
    if (!f) return Status::error("cannot write " + dir + "/" + kRunConfigFile);
    const std::string toml = to_toml(without_keys(cfg));
    const bool ok = std::fwrite(toml.data(), 1, toml.size(), f) == toml.size();
    if (std::fclose(f) != 0 || !ok) return Status::error("cannot write " + dir + "/" + kRunConfigFile);
    out.model_dir = dir;
    announce("final model (from " + kept + ") kept in " + dir);
    return Status::ok();
}

Session::Session(RunConfig cfg, std::string db_path, std::string group, EngineHooks hooks, std::string data_root,
                 bool print_progress, int64_t resume_run, std::function<void(const std::string&)> announce)
    : db_path_(std::move(db_path)), group_(std::move(group)), data_root_(std::move(data_root)),
      hooks_(std::move(hooks)), print_(print_progress), announce_(std::move(announce)), resume_run_(resume_run) {
    thread_ = std::thread([this, cfg = std::move(cfg)] {
        try {
            body(cfg);
        } catch (const std::exception& e) {
            end_after_exception(e.what());
        } catch (...) {
            end_after_exception("an exception that is not a std::exception");
        }
        std::lock_guard<std::mutex> lock(mu_);
        snap_.done = true;
        snap_.status = result_.status;
        snap_.reason = result_.reason;
        snap_.phase = to_string(result_.status);
    });
}

void Session::end_after_exception(const std::string& what) {
    // Before the run exists (bad layout, unreachable nodes) there is nothing to mark; the reason is
    // the result. After, the run must not stay "running" in the store: it failed, for this reason.
    result_.status = RunStatus::kFailed;
    result_.reason = what;
    result_.failed_to_start = result_.run_id == 0;
    add_log("coordinator: " + what);
    if (result_.run_id == 0 || run_ended_) return;
    auto store = RunStore::open(db_path_);
    Status st = store ? store->finish_run(result_.run_id, RunStatus::kFailed, what) : store.status();
    if (!st) std::fprintf(stderr, "thinwire: run %lld not marked failed: %s\n", (long long)result_.run_id, st.message().c_str());
    run_ended_ = st.is_ok();
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

void Session::publish(const std::vector<NodeInfo>& nodes, const RelayJoins& joins) {
    std::lock_guard<std::mutex> lock(mu_);
    snap_.nodes = nodes;
    joins.mark(snap_.nodes);
}

SessionResult run_session(RunConfig cfg, const std::string& db_path, const std::string& group, EngineHooks hooks,
                          const std::string& data_root, const std::atomic<bool>& interrupt, int64_t resume_run) {
    // The run's banner, the data preparation's log and where the final model went: on stdout.
    const auto print_line = [](const std::string& line) { std::printf("%s\n", line.c_str()); };
    Session s(std::move(cfg), db_path, group, std::move(hooks), data_root, /*print_progress=*/true, resume_run,
              print_line);
    while (!s.snapshot().done) {
        if (interrupt.load()) s.stop();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    SessionResult r = s.wait();
    if (r.failed_to_start) throw Error(r.reason);
    return r;
}

Result<std::string> coordinator_data_root(const std::string& given) { return resolve_node_data_root(given); }

}  // namespace tw
