// Coordinator: request/reply over one DEALER per node, one SUB for every node's stream.
#include "remote/coordinator.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "core/layout.h"
#include "core/platform_info.h"
#include "remote/poll.h"
#include "remote/protocol.h"

namespace tw {
namespace {
using Clock = std::chrono::steady_clock;
double since_s(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
std::string one_decimal(double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", x);
    return buf;
}
}  // namespace

struct Coordinator::Impl {
    std::shared_ptr<zmq::context_t> ctx;
    CoordinatorOptions opts;
    std::vector<zmq::socket_t> dealers;
    zmq::socket_t sub;
    std::map<std::string, size_t> by_name;    // role name → node index
    std::vector<Clock::time_point> last_seen;  // per node, last heartbeat or stream message
    std::vector<bool> in_run;
    std::vector<std::string> tokens;           // per node, the run token its configure returned
    // Per node, the incarnation its configure returned (node_server.cpp) and those of processes
    // it replaced: a replaced process's heartbeat or end, still queued, says nothing of the fresh one.
    std::vector<std::string> incarnations;
    std::vector<std::vector<std::string>> retired;
    Clock::time_point last_heartbeat_sent = Clock::now();
    Clock::time_point last_poll = Clock::now();  // when poll() last read the streams
    // When this coordinator's heartbeats last resumed after a gap of more than half the timeout
    // (its own stall, or a run not started yet): a node that stopped for want of them soon after
    // may have heard nothing because of it, not because of its link.
    Clock::time_point own_gap_at{};
    int64_t next_id = 1;
    bool stopping = false;
    std::optional<size_t> first_failure;  // the node whose failed `done` arrived first in this run
    std::vector<int> unit;                // set_loss_policy: node → replica or spare it belongs to; −1 = vital
    int64_t min_live = 1, max_live = 0;
    Clock::time_point started_at = Clock::now();  // configure: the run's wall clock origin for restarted nodes
    // What configure sent (roles with the run's token and keys, the config), for a node restarted
    // mid-run (rejoin), and the restarted nodes waiting for their stream before their start.
    std::vector<NodeRole> run_roles;
    std::string config_toml;
    std::vector<bool> start_pending;
    // Restarted nodes whose configure is sent and not yet answered: its request id (0 = none) and
    // when it left. poll() takes the answer, so the live nodes keep their heartbeats meanwhile.
    std::vector<std::pair<int64_t, Clock::time_point>> rejoining;
    // answers_again: per node, the hello out (request id, 0 = none) and when it was sent.
    std::map<size_t, std::pair<int64_t, Clock::time_point>> greeting;
    // Nodes counted lost that were heard again and told to stop (once per incarnation), and the
    // metric rows refused from each.
    std::set<size_t> fenced_told;
    std::map<size_t, size_t> fenced_rows;
    std::vector<std::string> losses;  // "NODE at step N", each node counted lost, in order

    // The configure request that gives a node its role of this run.
    Message configure_message(const NodeRole& role) const {
        Message m;
        m.kind = MsgKind::kConfigure;
        m.body = {{"role", role_to_json(role)}, {"config_toml", config_toml},
                  {"heartbeat_s", opts.heartbeat_s}, {"heartbeat_timeout_s", opts.heartbeat_timeout_s}};
        return m;
    }
    // A request socket to node i at `endpoint`, with the node's CurveZMQ key when the run has keys.
    zmq::socket_t dealer_to(size_t i, const std::string& endpoint) {
        zmq::socket_t d(*ctx, zmq::socket_type::dealer);
        if (!opts.keys.empty()) curve_client(d, opts.keys, opts.node_keys[i]);
        d.connect(endpoint);
        return d;
    }
};

void Coordinator::set_loss_policy(std::vector<int> unit, int64_t min_live, int64_t max_live) {
    impl_->unit = std::move(unit);
    impl_->min_live = min_live;
    impl_->max_live = max_live;
}

Coordinator::~Coordinator() {
    if (!impl_) return;
    for (auto& d : impl_->dealers) d.set(zmq::sockopt::linger, 200);
    impl_->sub.set(zmq::sockopt::linger, 0);
}

int64_t Coordinator::send_request(size_t i, Message& m) {
    Impl& s = *impl_;
    const int64_t id = s.next_id++;
    m.body["id"] = id;
    if (i < s.tokens.size() && !s.tokens[i].empty()) m.body["token"] = s.tokens[i];
    auto frames = encode(m);
    auto& d = s.dealers[i];
    for (size_t f = 0; f < frames.size(); ++f)
        d.send(frames[f], f + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    return id;
}

std::optional<Result<Message>> Coordinator::take_reply(size_t i, int64_t id) {
    using R = Result<Message>;
    auto& d = impl_->dealers[i];
    while (poll_in(d, 0)) {
        std::vector<zmq::message_t> reply;
        (void)zmq::recv_multipart(d, std::back_inserter(reply));
        auto msg = decode(reply);
        if (!msg) return R::error("node " + nodes_[i].endpoint + " sent a malformed reply: " + msg.message());
        if (msg->body.value("id", int64_t{-1}) != id) continue;  // a late reply to an earlier request
        if (msg->kind == MsgKind::kError)
            return R::error("node " + nodes_[i].endpoint + ": " + msg->body.value("error", std::string("error")));
        return R(std::move(*msg));
    }
    return std::nullopt;
}

Result<Message> Coordinator::await_reply(size_t i, int64_t id, MsgKind asked, int timeout_ms,
                                         const std::function<bool()>& abort) {
    using R = Result<Message>;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (Clock::now() < deadline) {
        if (abort && abort()) return R::error(std::string("stopped on request while waiting for \"") + to_string(asked) + "\"");
        if (!poll_in(impl_->dealers[i], 50)) continue;
        if (auto r = take_reply(i, id)) return std::move(*r);
    }
    return R::error("node " + nodes_[i].endpoint + " did not answer \"" + to_string(asked) + "\" within " +
                    std::to_string(timeout_ms / 1000.0) + " s");
}

Result<Message> Coordinator::request(size_t i, Message m) {
    const int64_t id = send_request(i, m);
    return await_reply(i, id, m.kind, impl_->opts.reply_timeout_ms);
}

Result<std::vector<DataReport>> Coordinator::prepare(const std::string& config_toml, size_t count, int timeout_ms,
                                                     const std::function<bool()>& abort) {
    using R = Result<std::vector<DataReport>>;
    count = std::min(count, nodes_.size());
    std::vector<DataReport> out(count);
    // Node 0 first: nodes that share its data root (threads, child processes) then find the data
    // cached instead of racing to build it. The others at once: remote nodes prepare in parallel.
    for (size_t first = 0, end = std::min<size_t>(count, 1); first < count; first = end, end = count) {
        std::vector<std::pair<size_t, int64_t>> sent;
        for (size_t i = first; i < end; ++i) {
            Message m;
            m.kind = MsgKind::kPrepare;
            m.body["config_toml"] = config_toml;
            sent.emplace_back(i, send_request(i, m));
        }
        for (auto [i, id] : sent) {
            auto reply = await_reply(i, id, MsgKind::kPrepare, timeout_ms, abort);
            if (!reply) return R::error("preparing data: " + reply.message());
            auto report = data_report_from_message(*reply);
            if (!report) return R::error("preparing data: node " + nodes_[i].endpoint + " " + report.message());
            out[i] = std::move(*report);
        }
    }
    return out;
}

Result<std::unique_ptr<Coordinator>> Coordinator::connect(std::shared_ptr<zmq::context_t> ctx,
                                                          std::vector<std::string> endpoints,
                                                          CoordinatorOptions opts) {
    using R = Result<std::unique_ptr<Coordinator>>;
    std::unique_ptr<Coordinator> c(new Coordinator());
    c->impl_ = std::make_unique<Impl>();
    Impl& s = *c->impl_;
    s.ctx = std::move(ctx);
    s.opts = opts;
    const bool curve = !opts.keys.empty();
    if (curve && opts.node_keys.size() != endpoints.size())
        return R::error("coordinator: " + std::to_string(opts.node_keys.size()) + " node keys for " +
                        std::to_string(endpoints.size()) + " endpoints");
    s.sub = zmq::socket_t(*s.ctx, zmq::socket_type::sub);
    s.sub.set(zmq::sockopt::subscribe, "");
    s.sub.set(zmq::sockopt::rcvhwm, 0);
    for (auto& e : endpoints) {
        NodeInfo n;
        n.endpoint = e;
        c->nodes_.push_back(n);
        try {
            s.dealers.push_back(s.dealer_to(c->nodes_.size() - 1, e));
        } catch (const zmq::error_t& err) {
            return R::error("cannot connect to node " + e + ": " + err.what());
        }
    }
    s.last_seen.assign(endpoints.size(), Clock::now());
    s.in_run.assign(endpoints.size(), false);
    s.tokens.assign(endpoints.size(), "");
    s.incarnations.assign(endpoints.size(), "");
    s.retired.assign(endpoints.size(), {});
    for (size_t i = 0; i < endpoints.size(); ++i) {
        Message hello;
        hello.kind = MsgKind::kHello;
        auto caps = c->request(i, hello);
        if (!caps) return caps.status();
        const auto& b = caps->body;
        // Something else on the port (another run's node, a program that is not a node) answers
        // otherwise: say so instead of reading its reply as an old node's.
        if (caps->kind != MsgKind::kCapabilities || !b.contains("protocol"))
            return R::error("node " + endpoints[i] + " answered hello with \"" + to_string(caps->kind) +
                            "\" and no protocol: is another program listening on its port?");
        if (b.value("protocol", 0) != kProtocolVersion)
            return R::error("node " + endpoints[i] + " speaks protocol " + std::to_string(b.value("protocol", 0)) +
                            ", this coordinator " + std::to_string(kProtocolVersion));
        NodeInfo& n = c->nodes_[i];
        n.version = b.value("node_version", "");
        n.host = b.value("host", "");
        n.device = b.value("device", "");
        n.threads = b.value("threads", int64_t{0});
        n.pid = b.value("pid", int64_t{0});
        n.memory_bytes = b.value("memory_bytes", uint64_t{0});
        n.state = b.value("state", "");
        // Free text from the node: printable and bounded before it is stored or shown.
        n.cpu = printable_label(b.value("cpu", ""));
        n.blas = printable_label(b.value("blas", ""));
    }
    return c;
}

Status Coordinator::configure(const std::vector<NodeRole>& roles, const std::string& config_toml) {
    Impl& s = *impl_;
    if (roles.size() > nodes_.size())
        return Status::error("configure: " + std::to_string(roles.size()) + " roles for " +
                             std::to_string(nodes_.size()) + " nodes");
    const bool curve = !s.opts.keys.empty();
    std::map<std::string, std::string> key_of_data_ep;  // data endpoint → node key
    for (size_t i = 0; i < roles.size(); ++i) {
        auto eps = derive_endpoints(nodes_[i].endpoint);
        if (!eps) return eps.status();
        if (curve) {
            curve_client(s.sub, s.opts.keys, s.opts.node_keys[i]);  // taken at connect: one key per node
            key_of_data_ep[eps->data] = s.opts.node_keys[i];
        }
        s.sub.connect(eps->metrics);
    }
    // The run's data-plane token (the caller's when it set one on the roles: the hub relay it
    // started checks it), and every member's key for the mesh and the gradient groups.
    const uint64_t mesh_token = !roles.empty() && roles.front().mesh_token != 0 ? roles.front().mesh_token : random_token();
    std::vector<NodeRole> run_roles = roles;
    std::map<std::pair<std::string, int>, std::map<int, std::string>> group_keys;  // (host, port) → rank → key
    for (size_t i = 0; i < roles.size(); ++i)
        if (curve && !roles[i].grad_group.host.empty())
            group_keys[{roles[i].grad_group.host, roles[i].grad_group.port}][roles[i].grad_group.rank] =
                s.opts.node_keys[i];
    for (auto& r : run_roles) {
        r.mesh_token = mesh_token;
        if (!curve) continue;
        if (!r.hub_endpoint.empty()) r.hub_key = s.opts.keys.public_key;  // the relay serves with this coordinator's keys
        r.mesh_keys.clear();
        for (auto& ep : r.mesh_endpoints) {
            auto it = key_of_data_ep.find(ep);
            if (it == key_of_data_ep.end()) return Status::error("configure: no node key for mesh endpoint " + ep);
            r.mesh_keys.push_back(it->second);
        }
        if (!r.grad_group.host.empty()) {
            r.grad_group.keys.clear();
            for (auto& [rank, key] : group_keys[{r.grad_group.host, r.grad_group.port}]) r.grad_group.keys.push_back(key);
        }
    }
    s.first_failure.reset();
    s.run_roles = run_roles;
    s.config_toml = config_toml;
    s.start_pending.assign(nodes_.size(), false);
    s.rejoining.assign(nodes_.size(), {0, Clock::now()});
    // The nodes' wall clocks start as they are configured (each builds its worker then): a process
    // restarted later counts its wall time from here too (NodeRole::rejoin_wall_ms).
    s.started_at = Clock::now();
    for (size_t i = 0; i < roles.size(); ++i) {
        s.tokens[i].clear();  // a new configure is not bound to the previous run's token
        if (!s.incarnations[i].empty()) s.retired[i].push_back(std::exchange(s.incarnations[i], ""));
        auto r = request(i, s.configure_message(run_roles[i]));
        if (!r) return r.status();
        if (Status st = take_token(i, *r); !st) return st;
        nodes_[i].name = roles[i].name;
        nodes_[i].state = "configured";
        nodes_[i].done = false;
        nodes_[i].error.clear();
        s.by_name[roles[i].name] = i;
        s.in_run[i] = true;
    }
    // PUB/SUB subscriptions are asynchronous: wait until every node's stream has delivered a
    // heartbeat, so no metric of the run can be published into the void.
    std::vector<bool> heard(nodes_.size(), false);
    const auto deadline = Clock::now() + std::chrono::milliseconds(s.opts.reply_timeout_ms);
    size_t missing = roles.size();
    while (missing > 0) {
        if (Clock::now() > deadline) {
            for (size_t i = 0; i < roles.size(); ++i)
                if (!heard[i]) return Status::error("no metric stream from node " + nodes_[i].endpoint);
        }
        if (!poll_in(s.sub, 50)) continue;
        std::vector<zmq::message_t> frames;
        (void)zmq::recv_multipart(s.sub, std::back_inserter(frames));
        auto m = decode(frames);
        if (!m || m->kind != MsgKind::kHeartbeat) continue;
        auto it = s.by_name.find(m->body.value("name", ""));
        if (it != s.by_name.end() && !heard[it->second]) heard[it->second] = true, --missing;
    }
    return Status::ok();
}

// Three missed heartbeats: for the best-effort stop and shutdown, the node is gone (a peer on the
// data plane may have declared it lost a moment before this coordinator's own deadline).
// Silence is judged as of the last poll, so a caller that has not polled for a while does not
// mistake its own inattention for the node's.
bool Coordinator::presumed_gone(size_t i) const {
    if (since_s(impl_->last_seen[i]) > impl_->opts.heartbeat_timeout_s) return true;
    const double silent_at_poll = std::chrono::duration<double>(impl_->last_poll - impl_->last_seen[i]).count();
    return silent_at_poll > std::min(impl_->opts.heartbeat_timeout_s, 3 * impl_->opts.heartbeat_s);
}

Status Coordinator::broadcast(int kind, const char* verb) {
    for (size_t i = 0; i < nodes_.size(); ++i) {
        if (!impl_->in_run[i] || nodes_[i].done) continue;
        // A node that missed its heartbeats is gone: asking it would only wait out the reply timeout.
        if (presumed_gone(i)) continue;
        Message m;
        m.kind = static_cast<MsgKind>(kind);
        auto r = request(i, m);
        if (!r) return Status::error(std::string(verb) + ": " + r.message());
    }
    return Status::ok();
}

Status Coordinator::start() {
    const auto now = Clock::now();
    for (auto& t : impl_->last_seen) t = now;
    return broadcast(static_cast<int>(MsgKind::kStart), "start");
}
Status Coordinator::pause() { return broadcast(static_cast<int>(MsgKind::kPause), "pause"); }
Status Coordinator::resume() { return broadcast(static_cast<int>(MsgKind::kResume), "resume"); }
Status Coordinator::stop() {
    impl_->stopping = true;
    const int saved = impl_->opts.reply_timeout_ms;
    impl_->opts.reply_timeout_ms = std::min(saved, 3000);  // stopping must not hang on a node that just died
    Status s = broadcast(static_cast<int>(MsgKind::kStop), "stop");
    impl_->opts.reply_timeout_ms = saved;
    return s;
}

void Coordinator::shutdown() {
    const int saved = impl_->opts.reply_timeout_ms;
    impl_->opts.reply_timeout_ms = 2000;  // a dead node must not hold the exit up
    for (size_t i = 0; i < nodes_.size(); ++i) {
        if (impl_->in_run[i] && presumed_gone(i)) continue;
        Message m;
        m.kind = MsgKind::kShutdown;
        (void)request(i, m);
    }
    impl_->opts.reply_timeout_ms = saved;
}

Status Coordinator::rejoin(size_t i, int64_t rejoin_step) {
    Impl& s = *impl_;
    if (i >= s.run_roles.size()) return Status::error("rejoin: node " + std::to_string(i) + " has no role in this run");
    NodeRole role = s.run_roles[i];
    // A resumed run's fresh process rejoins live: it loads no checkpoint, but numbers its rounds
    // from the step its peers resumed at.
    role.rejoin_origin_step = std::max<int64_t>(role.resume_step, 0);
    role.resume_step = -1;
    role.rejoin_step = rejoin_step;
    return configure_restarted(i, role);
}

Status Coordinator::rejoin_live(size_t i, int64_t tokens) {
    Impl& s = *impl_;
    if (i >= s.run_roles.size()) return Status::error("rejoin: node " + std::to_string(i) + " has no role in this run");
    NodeRole role = s.run_roles[i];
    // The lowest step a live node of the run has reported: the fresh process joins after a round
    // at this step or later.
    int64_t from = -1;
    for (size_t j = 0; j < nodes_.size(); ++j)
        if (j != i && s.in_run[j] && !nodes_[j].done && (from < 0 || nodes_[j].step < from)) from = nodes_[j].step;
    // A resumed run's peers number their rounds from the step they resumed at (pipelines' stage rounds).
    role.rejoin_origin_step = std::max<int64_t>(role.resume_step, 0);
    role.resume_step = -1;
    role.rejoin_live_from = std::max<int64_t>(from, 0);
    role.rejoin_tokens = std::max<int64_t>(tokens, 0);
    return configure_restarted(i, role);
}

Status Coordinator::configure_restarted(size_t i, const NodeRole& role_in) {
    Impl& s = *impl_;
    NodeRole role = role_in;
    role.rejoin_wall_ms = static_cast<int64_t>(since_s(s.started_at) * 1000);
    role.rejoin_sent_unix_ms = unix_now_ms();
    Message m = s.configure_message(role);
    s.tokens[i].clear();  // the restarted node hands out a token of its own
    if (!s.incarnations[i].empty()) s.retired[i].push_back(std::exchange(s.incarnations[i], ""));
    // A fresh socket: the old one's connection was to the killed process, and a request written
    // into it before the socket noticed the process was gone would be lost.
    try {
        s.dealers[i].set(zmq::sockopt::linger, 0);
        s.dealers[i] = s.dealer_to(i, nodes_[i].endpoint);
    } catch (const zmq::error_t& err) {
        return Status::error("rejoin: cannot connect to node " + nodes_[i].endpoint + ": " + err.what());
    }
    s.rejoining[i] = {send_request(i, m), Clock::now()};
    NodeInfo& n = nodes_[i];
    n.state = "restarting";
    n.done = n.lost = n.stopped = n.ok = n.coordinator_lost = false;
    s.fenced_told.erase(i);
    s.fenced_rows.erase(i);
    n.error.clear();
    s.last_seen[i] = Clock::now();
    return Status::ok();
}

bool Coordinator::answers_again(size_t i) {
    Impl& s = *impl_;
    if (i >= nodes_.size() || !nodes_[i].lost) return false;
    auto [it, fresh] = s.greeting.try_emplace(i, 0, Clock::now() - std::chrono::seconds(1));
    auto& [id, sent] = it->second;
    if (id != 0) {
        auto r = take_reply(i, id);
        if (!r) {
            if (since_s(sent) > 1.0) id = 0;  // no answer: another hello on a fresh socket next time
            return false;
        }
        id = 0;
        sent = Clock::now();  // whatever came, the next hello waits a second
        if (!r->is_ok()) return false;
        const Message& m = r->value();
        // A node of this protocol that holds no run: its operator restarted it. A process that
        // answers while still busy (it was only slow, or another run took it) is left alone.
        return m.kind == MsgKind::kCapabilities && m.body.value("protocol", 0) == kProtocolVersion &&
               m.body.value("state", std::string()) == "idle";
    }
    if (since_s(sent) < 1.0) return false;
    try {
        s.dealers[i].set(zmq::sockopt::linger, 0);
        s.dealers[i] = s.dealer_to(i, nodes_[i].endpoint);
    } catch (const zmq::error_t&) {
        sent = Clock::now();
        return false;
    }
    Message hello;
    hello.kind = MsgKind::kHello;
    id = send_request(i, hello);
    sent = Clock::now();
    return false;
}

Status Coordinator::take_token(size_t i, const Message& reply) {
    const auto tok = reply.body.find("token");
    if (tok == reply.body.end() || !tok->is_string())
        return Status::error("node " + nodes_[i].endpoint + " did not hand out a run token at configure");
    impl_->tokens[i] = tok->get<std::string>();
    if (const auto inc = reply.body.find("incarnation"); inc != reply.body.end() && inc->is_string())
        impl_->incarnations[i] = inc->get<std::string>();
    return Status::ok();
}

void Coordinator::take_rejoin_answers() {
    Impl& s = *impl_;
    for (size_t i = 0; i < s.rejoining.size(); ++i) {
        auto& [id, sent] = s.rejoining[i];
        if (id == 0) continue;
        s.last_seen[i] = Clock::now();  // starting up, not silent
        NodeInfo& n = nodes_[i];
        Status st;
        if (auto r = take_reply(i, id)) {
            id = 0;
            st = r->is_ok() ? take_token(i, r->value()) : r->status();
            if (st) {
                n.state = "configured";
                // Started once its stream is heard (handle_stream), so no metric of it is published into the void.
                s.start_pending[i] = true;
            }
        } else if (since_s(sent) * 1000 > s.opts.reply_timeout_ms) {
            id = 0;
            st = Status::error("node " + n.endpoint + " did not answer \"configure\" within " +
                               std::to_string(s.opts.reply_timeout_ms / 1000.0) + " s");
        }
        if (!st) {
            n.error = "restarted, but " + st.message();
            if (!s.first_failure) s.first_failure = i;
        }
    }
}

void Coordinator::handle_stream(const Message& m, CoordinatorSink& sink) {
    Impl& s = *impl_;
    const std::string name = m.body.value("name", "");
    auto it = s.by_name.find(name);
    if (it == s.by_name.end()) return;  // a node outside this run
    // A process this coordinator replaced: its rows and events are history, kept; its heartbeat
    // and its end are not the fresh process's.
    const auto& retired = s.retired[it->second];
    if ((m.kind == MsgKind::kHeartbeat || m.kind == MsgKind::kDone) &&
        std::count(retired.begin(), retired.end(), m.body.value("incarnation", std::string())))
        return;
    NodeInfo& n = nodes_[it->second];
    s.last_seen[it->second] = Clock::now();
    if (n.lost && (m.kind == MsgKind::kHeartbeat || m.kind == MsgKind::kDone || m.kind == MsgKind::kMetrics ||
                   m.kind == MsgKind::kModel)) {
        // Counted lost, and the run went on without it: the run's outcome is its survivors'. A
        // process that was only paused (SIGSTOP, a VM stall) wakes here; it is told to stop, what
        // it measures from then on is not the run's (it may finish a round its peers gave up
        // without it), and its end is an event, never a stop or a failure of the run. It comes
        // back only as a rejoin, a new incarnation. Its weights (kModel) are not the run's either:
        // the final model comes from a live member.
        if (m.kind == MsgKind::kMetrics) {
            const size_t rows = m.body.contains("rows") && m.body["rows"].is_array() ? m.body["rows"].size() : 0;
            if (s.fenced_rows[it->second] == 0)
                sink.on_event({0, name, EventLevel::kWarning, "lost-node-rows",
                               "metric rows from node " + name + " after it was counted lost are not the run's: refused"});
            s.fenced_rows[it->second] += rows;
        } else if (m.kind == MsgKind::kDone) {
            sink.on_event({0, name, EventLevel::kInfo, "lost-node-ended",
                           "node " + name + ", counted lost, ended: " +
                               (m.body.value("ok", false) ? std::string(m.body.value("stopped", false) ? "stopped" : "finished")
                                                          : "failed: " + m.body.value("error", std::string())) +
                               (s.fenced_rows[it->second] ? "; " + std::to_string(s.fenced_rows[it->second]) +
                                                                " metric rows it sent after it was counted lost refused"
                                                          : std::string())});
        } else if (m.kind == MsgKind::kHeartbeat && !s.fenced_told.count(it->second)) {
            s.fenced_told.insert(it->second);
            sink.on_event({0, name, EventLevel::kWarning, "lost-node-heard",
                           "node " + name + " was counted lost but is heard again (it was paused, or its link came back); it is told to stop"});
            auto frames = encode(Message{MsgKind::kStop, {{"token", s.tokens[it->second]}, {"reason", "counted lost"}}, {}});
            s.dealers[it->second].send(frames[0], zmq::send_flags::dontwait);
        }
        return;
    }
    switch (m.kind) {
        case MsgKind::kHeartbeat:
            n.state = m.body.value("state", n.state);
            n.step = m.body.value("step", n.step);
            if (it->second < s.start_pending.size() && s.start_pending[it->second] && n.state == "configured") {
                s.start_pending[it->second] = false;
                Message start;
                start.kind = MsgKind::kStart;
                if (auto r = request(it->second, start); !r) {
                    n.error = "restarted, but its start failed: " + r.message();
                    if (!s.first_failure) s.first_failure = it->second;
                }
            }
            break;
        case MsgKind::kMetrics: {
            auto recs = metrics_from_rows(m.body.contains("rows") ? m.body["rows"] : nlohmann::json(), name);
            if (recs) sink.on_metrics(*recs);
            else sink.on_event({0, name, EventLevel::kWarning, "bad-metrics", recs.message()});
            break;
        }
        case MsgKind::kEvent:
            sink.on_event({m.body.value("wall_s", 0.0), name, static_cast<EventLevel>(m.body.value("level", 0)),
                           m.body.value("event", ""), m.body.value("text", "")});
            break;
        case MsgKind::kScores: {
            // A malformed frame fails the run, naming the node; it never reaches the arithmetic.
            auto scores = scores_from_message(m);
            if (scores) {
                sink.on_scores(name, std::move(*scores));
            } else {
                n.error = scores.message();
                if (!s.first_failure) s.first_failure = it->second;
            }
            break;
        }
        case MsgKind::kModel: {
            // A malformed part is a warning naming the node: the run's training stands without it.
            if (auto part = model_part_from_message(m)) sink.on_model_part(name, std::move(*part));
            else sink.on_event({0, name, EventLevel::kWarning, "model", part.message()});
            break;
        }
        case MsgKind::kDone:
            n.done = true;
            n.ok = m.body.value("ok", false);
            n.stopped = m.body.value("stopped", false);
            // A refused scores frame's error stays when the node itself ends well.
            if (const std::string e = m.body.value("error", ""); !e.empty() || n.error.empty()) n.error = e;
            n.coordinator_lost = m.body.value("coordinator_lost", false);
            n.state = !n.ok ? "failed" : (n.stopped ? "stopped" : "finished");
            // A node that stopped itself for want of this coordinator's word: poll() decides whether
            // that was a loss (its link) or this coordinator's own silence; its error is that stop's.
            if (!n.ok && !s.first_failure && !n.coordinator_lost) s.first_failure = it->second;
            if (m.body.contains("summary") && m.body["summary"].is_object())
                for (auto& [k, v] : m.body["summary"].items())
                    if (v.is_number()) n.summary[k] = v.get<double>();
            break;
        default:
            break;
    }
}

std::optional<RunOutcome> Coordinator::poll(CoordinatorSink& sink, int timeout_ms) {
    Impl& s = *impl_;
    {
        // A gap of seconds since the last poll is this coordinator's own pause (SIGSTOP, a VM stall,
        // a whole threads run stopped with it): the nodes' silence counts only from when it reads
        // their streams again.
        const auto now = Clock::now();
        const auto gap = now - s.last_poll;
        if (gap > std::chrono::milliseconds(timeout_ms) + std::chrono::seconds(1))
            for (auto& t : s.last_seen) t = std::min(now, t + gap);
    }
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    do {
        bool readable = poll_in(s.sub, std::min(timeout_ms, 20));
        while (readable) {
            std::vector<zmq::message_t> frames;
            if (!zmq::recv_multipart(s.sub, std::back_inserter(frames), zmq::recv_flags::dontwait)) break;
            auto m = decode(frames);
            if (m) handle_stream(*m, sink);
            else sink.on_event({0, "coordinator", EventLevel::kWarning, "bad-message", m.message()});
        }
    } while (Clock::now() < deadline);
    s.last_poll = Clock::now();
    take_rejoin_answers();

    if (since_s(s.last_heartbeat_sent) >= s.opts.heartbeat_s) {
        if (since_s(s.last_heartbeat_sent) > s.opts.heartbeat_timeout_s / 2) s.own_gap_at = Clock::now();
        for (size_t i = 0; i < nodes_.size(); ++i) {
            if (!s.in_run[i] || nodes_[i].done || (i < s.rejoining.size() && s.rejoining[i].first != 0)) continue;
            Message hb;
            hb.kind = MsgKind::kHeartbeat;
            hb.body["token"] = s.tokens[i];
            auto frames = encode(hb);
            s.dealers[i].send(frames[0], zmq::send_flags::dontwait);
        }
        s.last_heartbeat_sent = Clock::now();
    }
    for (size_t i = 0; i < nodes_.size(); ++i)
        if (s.in_run[i]) nodes_[i].heartbeat_age_s = since_s(s.last_seen[i]);
    // After a stop request, a node's error is the stop's doing (a wait aborted on it): the run was
    // interrupted, not failed.
    if (s.first_failure && !s.stopping) {
        const NodeInfo& n = nodes_[*s.first_failure];
        return RunOutcome{RunStatus::kFailed, n.name + ": " + n.error};
    }
    bool all_done = true, any_stopped = false;
    const NodeInfo* deaf_after_stall = nullptr;  // stopped for want of this coordinator, which had stalled
    for (size_t i = 0; i < nodes_.size(); ++i) {
        if (!s.in_run[i]) continue;
        NodeInfo& n = nodes_[i];
        // A node that stopped itself, hearing nothing from this coordinator past the timeout, while
        // this coordinator kept sending (no gap of its own within two timeouts): the link to it failed
        // (one way, or both and back before its heartbeats were missed here). It left the run as a
        // lost node does; its stop is not a stop request. After a gap of this coordinator's own the
        // stop stays one (the run is interrupted: the nodes lost their coordinator).
        const bool deaf = n.done && n.coordinator_lost && !n.lost && !s.stopping &&
                          since_s(s.own_gap_at) > 2 * s.opts.heartbeat_timeout_s;
        const bool silent = !n.done && n.heartbeat_age_s > s.opts.heartbeat_timeout_s;
        if (!deaf && !silent) {
            all_done = all_done && n.done;
            any_stopped = any_stopped || n.stopped;
            if (n.stopped && n.coordinator_lost && !s.stopping && !deaf_after_stall) deaf_after_stall = &n;
            continue;
        }
        const std::string why = "node " + n.name + " (" + n.endpoint + ") " +
                                (deaf ? "stopped: it heard nothing from the coordinator for " +
                                            one_decimal(s.opts.heartbeat_timeout_s) + " s while the coordinator ran"
                                      : "sent no heartbeat for " + one_decimal(n.heartbeat_age_s) + " s") +
                                " (last at step " + std::to_string(n.step) + ")";
        // A node the run cannot go on without fails it.
        if (i >= s.unit.size() || s.unit[i] < 0 || s.stopping) return RunOutcome{RunStatus::kFailed, why};
        // A replica the run can go on without: its peers redo their round among themselves.
        n.done = n.lost = true;
        n.stopped = false;
        n.state = "lost";
        s.losses.push_back(n.name + " at step " + std::to_string(n.step));
        // Live units: those none of whose nodes is lost (a replica's nodes leave together).
        std::set<int> units, dead;
        for (size_t j = 0; j < nodes_.size() && j < s.unit.size(); ++j) {
            if (!s.in_run[j] || s.unit[j] < 0) continue;
            units.insert(s.unit[j]);
            if (nodes_[j].lost) dead.insert(s.unit[j]);
        }
        int64_t live = static_cast<int64_t>(units.size() - dead.size());
        if (s.max_live > 0) live = std::min(live, s.max_live);
        sink.on_event({0, n.name, EventLevel::kWarning, "node-lost", why + "; " + std::to_string(live) + " replica(s) go on"});
        if (live < s.min_live)
            return RunOutcome{RunStatus::kFailed, "quorum lost: " + std::to_string(live) +
                                                      " replica(s) left, cluster.min_replicas is " +
                                                      std::to_string(s.min_live) + " (node " + n.name + " lost)"};
    }
    if (!all_done) return std::nullopt;
    if (const NodeInfo* n = deaf_after_stall)
        return RunOutcome{RunStatus::kInterrupted, "node " + n->name + " stopped at step " + std::to_string(n->step) +
                                                       ", hearing nothing from the coordinator while it stalled"};
    if (any_stopped || s.stopping) return RunOutcome{RunStatus::kInterrupted, "stopped on request"};
    // Finished; the faults it survived are named.
    std::string survived;
    for (const std::string& l : s.losses) survived += (survived.empty() ? "" : ", ") + l;
    return RunOutcome{RunStatus::kFinished, survived.empty() ? "" : "survived the loss of " + survived};
}

}  // namespace tw
