// Node server: control loop, worker thread, metric stream. See node_server.h.
#include "remote/node_server.h"

#include "remote/peer_user.h"

#include "core/platform_info.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>
#include <zmq.hpp>

#include "remote/disconnect_log.h"
#include "remote/poll.h"
#include <zmq_addon.hpp>

#include "core/config_io.h"
#include "core/data_root.h"
#include "core/layout.h"
#include "remote/protocol.h"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;
double since_s(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The control and metric sockets' handshake deadline (ZMQ_HANDSHAKE_IVL), ms: a coordinator over a
// slow link completes ZeroMQ's and CURVE's few round trips in well under a second.
constexpr int kHandshakeMs = 5000;

std::string host_name() {
    char buf[256] = {};
    gethostname(buf, sizeof buf - 1);
    return buf;
}

// Worker observations, queued by the worker thread and published by the server loop (ZeroMQ
// sockets are not thread-safe, so only the loop touches the PUB socket).
class QueueSink : public MetricSink {
public:
    explicit QueueSink(std::string name) : name_(std::move(name)) {}
    void metrics(std::vector<MetricRecord> records) override {
        Message m;
        m.kind = MsgKind::kMetrics;
        m.body = {{"name", name_}, {"rows", metric_rows(records)}};
        push(std::move(m));
    }
    void event(EventRecord e) override {
        Message m;
        m.kind = MsgKind::kEvent;
        m.body = {{"name", name_}, {"wall_s", e.wall_s}, {"level", static_cast<int>(e.level)}, {"event", e.kind},
                  {"text", e.text}};
        push(std::move(m));
    }
    void scores(ExpertScores s) override { push(scores_message(name_, s)); }
    void final_model(FinalModelPart p) override { push(model_message(name_, p)); }
    void push(Message m) {
        std::lock_guard<std::mutex> lock(mu_);
        out_.push_back(std::move(m));
    }
    std::vector<Message> take() {
        std::lock_guard<std::mutex> lock(mu_);
        return std::exchange(out_, {});
    }

private:
    std::string name_;
    std::mutex mu_;
    std::vector<Message> out_;
};

}  // namespace

Status check_bind_allowed(const std::string& endpoint, bool have_curve_keys) {
    if (endpoint.rfind("inproc://", 0) == 0 || endpoint.rfind("ipc://", 0) == 0) return Status::ok();
    if (endpoint.rfind("tcp://", 0) != 0)
        return Status::error("endpoint " + endpoint + ": expected inproc://, ipc:// or tcp://HOST:PORT");
    const auto colon = endpoint.rfind(':');
    if (colon == std::string::npos || colon < 6)
        return Status::error("endpoint " + endpoint + ": expected tcp://HOST:PORT");
    const std::string host = endpoint.substr(6, colon - 6);
    if (host == "localhost")
        return Status::error("endpoint " + endpoint +
                             ": ZeroMQ binds addresses, not host names; use tcp://127.0.0.1:PORT");
    if (host.rfind("127.", 0) == 0 || host == "[::1]") return Status::ok();
    if (have_curve_keys) return Status::ok();
    return Status::error("endpoint " + endpoint +
                         ": refusing to bind a non-loopback address without CurveZMQ keys (anyone could drive this "
                         "node); give --curve-secret-key and --allow, or bind tcp://127.0.0.1:PORT");
}

// Who sent a request, for events and refusals: the key's tag with CURVE, else the token's owner.
std::string sender_tag(const std::string& key) { return key.empty() ? "a loopback client" : "key " + key_tag(key); }

struct NodeServer::Impl {
    NodeOptions opts;
    WorkerFactory factory;
    std::shared_ptr<zmq::context_t> ctx;
    std::unique_ptr<ZapHandler> zap;  // with keys; before any socket, so no connection skips it
    zmq::socket_t router, pub;
    std::unique_ptr<DisconnectLog> router_log;  // tcp/ipc: connections dropped by the size limit
    NodeEndpoints eps;
    std::string owner_key, token;     // the configuring coordinator; "" = nobody yet
    // This configuration's id, on everything published from its configure on: a coordinator that
    // restarted this node's process tells the dead process's last words (still in its queue) from
    // the fresh one's. Not a secret, unlike the token. "" = not configured yet.
    std::string incarnation;

    std::string state = "idle";  // idle | configured | running | paused | finished | failed | stopped
    RunConfig cfg;
    NodeRole role;
    std::unique_ptr<Worker> worker;
    std::unique_ptr<QueueSink> sink;
    WorkerControl ctl;
    std::thread thread;
    std::atomic<bool> worker_done{false};
    // The node stopped its run itself: it heard nothing from its coordinator past the timeout. Its
    // end says so, so that a coordinator that did hear it (the link failed one way) counts it lost
    // rather than take the stop for one it asked for.
    std::atomic<bool> coordinator_lost{false};
    bool shutdown = false;
    double heartbeat_s = 0.5, heartbeat_timeout_s = 0;  // 0 = no coordinator watch before configure
    Clock::time_point last_heartbeat_sent = Clock::now(), coordinator_seen = Clock::now();

    void send(const zmq::message_t& identity, const Message& m) {
        auto frames = encode(m);
        router.send(zmq::buffer(identity.data(), identity.size()), zmq::send_flags::sndmore);
        for (size_t i = 0; i < frames.size(); ++i)
            router.send(frames[i], i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
    void publish(Message m) {
        if (!incarnation.empty()) m.body["incarnation"] = incarnation;
        auto frames = encode(m);
        for (size_t i = 0; i < frames.size(); ++i)
            pub.send(frames[i], i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
    void heartbeat() {
        Message m;
        m.kind = MsgKind::kHeartbeat;
        m.body = {{"name", role.name}, {"state", state}, {"step", ctl.step.load()}};
        publish(m);
        last_heartbeat_sent = Clock::now();
    }
    void join_worker() {
        if (thread.joinable()) thread.join();
    }

    void log(const std::string& text) {
        if (opts.log) opts.log(text);
        else std::fprintf(stderr, "thinwire node %s: %s\n", opts.listen.c_str(), text.c_str());
    }
    // The request's sender may drive the run: it holds the run token (and, with keys, the key).
    bool is_owner(const Message& req, const std::string& key) const {
        if (token.empty()) return false;
        const auto it = req.body.find("token");
        if (it == req.body.end() || !it->is_string() || it->get<std::string>() != token) return false;
        return opts.keys.empty() || key == owner_key;
    }

    // A prepare request runs off the control loop (a first preparation trains a tokenizer for
    // minutes): the loop keeps answering hellos, status and heartbeats meanwhile, so no request can
    // hold the node past a coordinator's deadline. One at a time; its reply goes to its requester.
    struct Preparation {
        std::thread thread;
        std::atomic<bool> done{false};
        Message reply;                  // written by the thread before `done`
        std::vector<uint8_t> identity;  // the requester's router identity
        nlohmann::json id;              // its request id, echoed (null: none)
    };
    std::unique_ptr<Preparation> prep;

    Message handle(const Message& req, const std::string& key);
    Message configure(const Message& req, const std::string& key);
    // Checks a prepare request and starts it on its own thread; an error reply when it cannot start.
    std::optional<Message> begin_prepare(const Message& req, const zmq::message_t& identity, const nlohmann::json& id);
    // Sends the finished preparation's reply; `wait` joins one still running (the node is ending).
    void pump_preparation(bool wait = false);
    Message start();
    void pump_worker();
};

// A number field of a request: absent (→ `fallback`) or a finite number within [lo, hi]; the
// error names the field.
Result<double> number_field(const nlohmann::json& body, const char* name, double lo, double hi, double fallback) {
    const auto it = body.find(name);
    if (it == body.end()) return fallback;
    if (!it->is_number()) return Result<double>::error(std::string("\"") + name + "\" must be a number");
    const double v = it->get<double>();
    if (!(v >= lo && v <= hi))
        return Result<double>::error(std::string("\"") + name + "\" must be within [" + std::to_string(lo) + ", " +
                                     std::to_string(hi) + "]");
    return v;
}

Message NodeServer::Impl::configure(const Message& req, const std::string& key) {
    if (state == "running" || state == "paused") return make_error("configure while a run is " + state);
    const auto& b = req.body;
    const auto toml = b.find("config_toml");
    if (toml == b.end() || !toml->is_string()) return make_error("configure: no config_toml string");
    if (!b.contains("role")) return make_error("configure: no \"role\"");
    auto parsed = parse_config(toml->get<std::string>(), "configure");
    if (!parsed) return make_error("configure: " + parsed.message());
    // Paths from a coordinator resolve under this node's data root, or the configure is refused.
    if (!opts.data_root.empty())
        if (Status s = confine_paths(*parsed, opts.data_root); !s) return make_error("configure: " + s.message());
    auto hb = number_field(b, "heartbeat_s", 0.01, 3600, parsed->cluster.heartbeat_s);
    if (!hb) return make_error("configure: " + hb.message());
    auto hb_timeout = number_field(b, "heartbeat_timeout_s", 0.05, 86400, parsed->cluster.heartbeat_timeout_s);
    if (!hb_timeout) return make_error("configure: " + hb_timeout.message());
    auto r = role_from_json(b["role"]);
    if (!r) return make_error("configure: " + r.message());
    // The previous run's worker holds its data port and store: release them before binding anew.
    join_worker();
    worker.reset();
    auto run_sink = std::make_unique<QueueSink>(r->name);
    NodeSite site;
    site.listen = opts.listen;
    site.data_root = opts.data_root;
    site.events = run_sink.get();
    site.heartbeat_s = *hb;
    site.heartbeat_timeout_s = *hb_timeout;
    if (!opts.keys.empty()) {
        site.public_key = opts.keys.public_key;
        site.secret_key = opts.keys.secret_key;
        site.allow_data_peers = [z = zap.get()](std::vector<std::string> keys) { z->allow(kZapData, std::move(keys)); };
    }
    Result<std::unique_ptr<Worker>> w = Status::error("worker not built");
    try {
        w = factory(*parsed, *r, site);
    } catch (const std::exception& e) {
        w = Status::error(e.what());
    } catch (...) {  // whatever a factory throws is its error, never the control loop's end
        w = Status::error("an exception that is not a std::exception");
    }
    if (!w) {
        state = "idle";
        return make_error("configure: " + w.message());
    }
    cfg = std::move(*parsed);
    role = std::move(*r);
    worker = std::move(*w);
    heartbeat_s = *hb;
    heartbeat_timeout_s = *hb_timeout;
    ctl.stop = false;
    ctl.paused = false;
    ctl.step = 0;
    worker_done = false;
    coordinator_lost = false;
    sink = std::move(run_sink);
    owner_key = key;
    token = token_to_hex(random_token());
    incarnation = token_to_hex(random_token()).substr(0, 16);
    state = "configured";
    Message ok;
    ok.kind = MsgKind::kOk;
    ok.body["token"] = token;
    ok.body["incarnation"] = incarnation;
    return ok;
}

std::optional<Message> NodeServer::Impl::begin_prepare(const Message& req, const zmq::message_t& identity,
                                                      const nlohmann::json& id) {
    if (prep) return make_error("prepare: this node is preparing data for an earlier request; ask again once it has answered");
    if (state == "running" || state == "paused") return make_error("prepare while a run is " + state);
    if (!opts.prepare_data) return make_error("prepare: this node cannot prepare data");
    const auto toml = req.body.find("config_toml");
    if (toml == req.body.end() || !toml->is_string()) return make_error("prepare: no config_toml string");
    auto parsed = parse_config(toml->get<std::string>(), "prepare");
    if (!parsed) return make_error("prepare: " + parsed.message());
    if (!opts.data_root.empty())
        if (Status s = confine_paths(*parsed, opts.data_root); !s) return make_error("prepare: " + s.message());
    NodeSite site;
    site.listen = opts.listen;
    site.data_root = opts.data_root;
    prep = std::make_unique<Preparation>();
    const auto* b = static_cast<const uint8_t*>(identity.data());
    prep->identity.assign(b, b + identity.size());
    prep->id = id;
    prep->thread = std::thread([p = prep.get(), cfg = std::move(*parsed), site, fn = opts.prepare_data] {
        Result<DataReport> r = Status::error("data not prepared");
        try {
            r = fn(cfg, site);
        } catch (const std::exception& e) {
            r = Status::error(e.what());
        } catch (...) {
            r = Status::error("an exception that is not a std::exception");
        }
        if (!r) {
            p->reply = make_error("prepare: " + r.message());
        } else {
            p->reply = prepared_message(*r);
        }
        p->done = true;
    });
    return std::nullopt;
}

void NodeServer::Impl::pump_preparation(bool wait) {
    if (!prep || !(wait || prep->done.load())) return;
    if (prep->thread.joinable()) prep->thread.join();
    Message reply = std::move(prep->reply);
    if (!prep->id.is_null()) reply.body["id"] = prep->id;
    try {
        send(zmq::message_t(prep->identity.data(), prep->identity.size()), reply);
    } catch (const zmq::error_t&) {  // the requester is gone: nobody to answer
    }
    prep.reset();
}

Message NodeServer::Impl::start() {
    if (state != "configured") return make_error("start needs a configured node (state is " + state + ")");
    state = "running";
    coordinator_seen = Clock::now();
    thread = std::thread([this] {
        Result<WorkerSummary> res = Status::error("worker did not run");
        try {
            res = worker->run(ctl, *sink);
        } catch (const std::exception& e) {
            res = Status::error(std::string("worker: ") + e.what());
        } catch (...) {  // escaping the thread would terminate the process, and the run with it
            res = Status::error("worker: an exception that is not a std::exception");
        }
        Message done;
        done.kind = MsgKind::kDone;
        done.body = {{"name", role.name}, {"ok", res.is_ok()}, {"error", res.is_ok() ? "" : res.message()},
                     {"stopped", ctl.stop.load()}, {"coordinator_lost", coordinator_lost.load()}};
        done.body["summary"] = res.is_ok() ? nlohmann::json(*res) : nlohmann::json::object();
        sink->push(std::move(done));
        worker_done = true;
    });
    return {};
}

Message NodeServer::Impl::handle(const Message& req, const std::string& key) {
    Message ok;
    ok.kind = MsgKind::kOk;
    // Commands that drive a run come only from its coordinator once the node has one.
    const bool drives = req.kind == MsgKind::kStart || req.kind == MsgKind::kPause || req.kind == MsgKind::kResume ||
                        req.kind == MsgKind::kStop || req.kind == MsgKind::kShutdown;
    if (drives && !token.empty() && !is_owner(req, key)) {
        log(std::string("refused \"") + to_string(req.kind) + "\" from " + sender_tag(key) +
            ": not the coordinator that configured this node");
        return make_error(std::string("\"") + to_string(req.kind) +
                          "\" refused: only the coordinator that configured this node may send it (missing or "
                          "wrong run token" +
                          (opts.keys.empty() ? std::string(")") : std::string(" or key)")));
    }
    if (req.kind == MsgKind::kStart && token.empty()) return make_error("start needs a configured node (state is idle)");
    switch (req.kind) {
        case MsgKind::kHello: {
            static const PlatformInfo platform = this_platform();  // after start-up: every library mapped
            Message caps;
            caps.kind = MsgKind::kCapabilities;
            caps.body = {{"node_version", opts.version}, {"protocol", kProtocolVersion},
                         {"threads", std::thread::hardware_concurrency()},
                         {"memory_bytes", static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                                              static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE))},
                         {"device", opts.device}, {"host", host_name()}, {"pid", static_cast<int64_t>(getpid())},
                         {"state", state}, {"cpu", platform.cpu}, {"blas", platform.blas}};
            return caps;
        }
        case MsgKind::kConfigure:
            return configure(req, key);
        case MsgKind::kStart: {
            Message m = start();
            return m.body.contains("error") ? m : ok;
        }
        case MsgKind::kPause:
            if (state != "running") return make_error("pause needs a running node (state is " + state + ")");
            ctl.paused = true;
            state = "paused";
            sink->event({0, role.name, EventLevel::kInfo, "pause", "paused by " + sender_tag(key)});
            return ok;
        case MsgKind::kResume:
            if (state != "paused") return make_error("resume needs a paused node (state is " + state + ")");
            ctl.paused = false;
            state = "running";
            return ok;
        case MsgKind::kStop:
            if (state == "running" || state == "paused") {
                ctl.stop = true;
                const auto r = req.body.find("reason");
                const std::string why = r != req.body.end() && r->is_string() ? r->get<std::string>() : "";
                sink->event({0, role.name, why.empty() ? EventLevel::kInfo : EventLevel::kWarning, "stop",
                             "stop requested by " + sender_tag(key) + (why.empty() ? "" : " (" + why.substr(0, 64) + ")")});
            }
            return ok;
        case MsgKind::kStatus: {
            Message s;
            s.kind = MsgKind::kStatus;
            s.body = {{"state", state}, {"step", ctl.step.load()}, {"name", role.name}};
            return s;
        }
        case MsgKind::kShutdown:
            shutdown = true;
            return ok;
        default:
            return make_error(std::string("a node does not accept \"") + to_string(req.kind) + "\" messages");
    }
}

// Publishes what the worker queued and notices its end.
void NodeServer::Impl::pump_worker() {
    if (sink)
        for (auto& m : sink->take()) {
            if (m.kind == MsgKind::kDone) {
                const bool ok_run = m.body.value("ok", false);
                state = !ok_run ? "failed" : (m.body.value("stopped", false) ? "stopped" : "finished");
            }
            publish(m);
        }
    if (worker_done.load() && thread.joinable()) {
        thread.join();
        worker.reset();  // closes the run's mesh and store: the node is ready for the next run
    }
}

NodeServer::~NodeServer() {
    if (!impl_) return;
    impl_->ctl.stop = true;
    impl_->join_worker();
    impl_->worker.reset();
    if (impl_->prep && impl_->prep->thread.joinable()) impl_->prep->thread.join();
    // bind() may fail before the sockets exist.
    if (impl_->router) impl_->router.set(zmq::sockopt::linger, 0);
    if (impl_->pub) impl_->pub.set(zmq::sockopt::linger, 200);
}

const std::string& NodeServer::endpoint() const { return impl_->opts.listen; }

Result<std::unique_ptr<NodeServer>> NodeServer::bind(NodeOptions opts, WorkerFactory factory) {
    using R = Result<std::unique_ptr<NodeServer>>;
    if (Status s = check_bind_allowed(opts.listen, !opts.keys.empty()); !s) return s;
    auto eps = derive_endpoints(opts.listen);
    if (!eps) return eps.status();
    std::unique_ptr<NodeServer> n(new NodeServer());
    n->impl_ = std::make_unique<Impl>();
    Impl& s = *n->impl_;
    s.ctx = opts.ctx ? opts.ctx : std::make_shared<zmq::context_t>();
    s.heartbeat_s = opts.heartbeat_s;
    s.opts = std::move(opts);
    s.factory = std::move(factory);
    s.eps = *eps;
    if (!s.opts.keys.empty()) {
        if (s.opts.listen.rfind("inproc://", 0) == 0)
            return R::error("node: CurveZMQ keys need a tcp:// or ipc:// endpoint (inproc:// is not encrypted)");
        if (s.opts.allowed_coordinators.empty())
            return R::error("node: CurveZMQ keys without --allow: no coordinator could ever drive this node");
        auto zap = ZapHandler::start(s.ctx, [impl = &s](const std::string& t) { impl->log(t); });
        if (!zap) return zap.status();
        s.zap = std::move(*zap);
        s.zap->allow(kZapControl, s.opts.allowed_coordinators);
        s.zap->allow(kZapData, {});
    }
    try {
        s.router = zmq::socket_t(*s.ctx, zmq::socket_type::router);
        s.pub = zmq::socket_t(*s.ctx, zmq::socket_type::pub);
        if (!s.opts.keys.empty()) {
            curve_server(s.router, s.opts.keys, kZapControl);
            curve_server(s.pub, s.opts.keys, kZapControl);
        }
        // Control messages carry no tensors: ZeroMQ refuses a larger frame before reading it.
        if (s.opts.listen.rfind("inproc://", 0) != 0)
            s.router.set(zmq::sockopt::maxmsgsize,
                         static_cast<int64_t>(std::min(s.opts.max_message_bytes, kMaxHeaderBytes + (64u << 10))));
        s.router.set(zmq::sockopt::router_mandatory, 0);
        // A connection that has not finished its ZeroMQ (and CURVE) handshake within this is
        // closed: idle connections cannot hold the node's descriptors for ZeroMQ's default 30 s.
        s.router.set(zmq::sockopt::handshake_ivl, kHandshakeMs);
        s.pub.set(zmq::sockopt::handshake_ivl, kHandshakeMs);
        s.router.bind(s.eps.control);
        s.pub.set(zmq::sockopt::sndhwm, 0);  // metrics are never dropped for a slow subscriber
        if (s.opts.listen.rfind("inproc://", 0) != 0) {
            s.pub.set(zmq::sockopt::maxmsgsize, int64_t{64} << 10);  // subscribers send subscriptions only
            s.router_log = std::make_unique<DisconnectLog>(s.router, "control socket",
                                                           [impl = &s](const std::string& t) { impl->log(t); });
        }
        s.pub.bind(s.eps.metrics);
    } catch (const zmq::error_t& e) {
        return R::error("node: cannot bind " + s.eps.control + " / " + s.eps.metrics + ": " + e.what());
    }
    return n;
}

Status NodeServer::serve(const std::atomic<bool>* interrupt) {
    Impl& s = *impl_;
    while (!s.shutdown && !(interrupt && interrupt->load())) {
        if (poll_in(s.router, 20)) {
            std::vector<zmq::message_t> frames;
            (void)zmq::recv_multipart(s.router, std::back_inserter(frames));
            if (frames.empty()) continue;
            zmq::message_t identity = std::move(frames.front());
            frames.erase(frames.begin());
            const std::string key = frames.empty() ? std::string() : peer_key(frames.front());
            auto req = decode(frames, s.opts.max_message_bytes);
            if (!req) {
                s.send(identity, make_error(req.message()));
                continue;
            }
            // Only the run's coordinator keeps the watchdog alive; anyone else's heartbeat is ignored.
            if (req->kind == MsgKind::kHeartbeat) {
                if (s.is_owner(*req, key)) s.coordinator_seen = Clock::now();
                continue;
            }
            // Without keys, the commands that take the node or end it come only from its own user's
            // processes (a loopback node: every peer is a process of this machine).
            if (s.opts.keys.empty() && s.opts.listen.rfind("tcp://", 0) == 0 &&
                (req->kind == MsgKind::kConfigure || req->kind == MsgKind::kShutdown ||
                 req->kind == MsgKind::kPrepare)) {
                const auto uid = tcp_peer_uid(static_cast<int>(frames.front().get(ZMQ_SRCFD)));
                if (!uid || *uid != geteuid()) {
                    const std::string who = uid ? "a process of uid " + std::to_string(*uid) : "a process whose user cannot be told";
                    s.log(std::string("refused \"") + to_string(req->kind) + "\" from " + who);
                    Message no = make_error(std::string("\"") + to_string(req->kind) + "\" refused: " + who +
                                            " is not of this node's user (uid " + std::to_string(geteuid()) +
                                            "); a node without keys obeys only its own user's processes "
                                            "(give it keys to serve others: thinwire keys)");
                    const auto rid = req->body.find("id");
                    if (rid != req->body.end() && rid->is_number_integer()) no.body["id"] = *rid;
                    s.send(identity, no);
                    continue;
                }
            }
            // Echo only a well-formed id: an integer.
            const auto id = req->body.find("id");
            nlohmann::json echo = id != req->body.end() && id->is_number_integer() ? *id : nlohmann::json();
            Message reply;
            try {
                if (req->kind == MsgKind::kPrepare) {
                    if (id != req->body.end() && !id->is_number_integer()) {
                        reply = make_error("\"id\" must be an integer");
                    } else {
                        auto refused = s.begin_prepare(*req, identity, echo);
                        if (!refused) continue;  // answered when it is done (pump_preparation)
                        reply = std::move(*refused);
                    }
                } else {
                    reply = s.handle(*req, key);
                }
            } catch (const std::exception& e) {
                reply = make_error(std::string("request failed: ") + e.what());
            } catch (...) {
                reply = make_error("request failed: an exception that is not a std::exception");
            }
            if (s.is_owner(*req, key)) s.coordinator_seen = Clock::now();
            if (id != req->body.end() && !id->is_number_integer())
                reply = make_error("\"id\" must be an integer");
            else if (!echo.is_null())
                reply.body["id"] = echo;
            s.send(identity, reply);
        }
        s.pump_worker();
        s.pump_preparation();
        if (s.router_log) s.router_log->poll();
        if (since_s(s.last_heartbeat_sent) >= s.heartbeat_s) s.heartbeat();
        // A coordinator that went silent cannot stop us any more: stop training rather than run forever.
        if ((s.state == "running" || s.state == "paused") && s.heartbeat_timeout_s > 0 && !s.ctl.stop &&
            since_s(s.coordinator_seen) > s.heartbeat_timeout_s) {
            s.coordinator_lost = true;
            s.ctl.stop = true;
            s.sink->event({0, s.role.name, EventLevel::kError, "coordinator-lost",
                           "no message from the coordinator for " + std::to_string(s.heartbeat_timeout_s) +
                               " s; stopping"});
        }
    }
    s.ctl.stop = true;
    s.join_worker();
    s.pump_worker();
    s.pump_preparation(/*wait=*/true);
    return Status::ok();
}

}  // namespace tw
