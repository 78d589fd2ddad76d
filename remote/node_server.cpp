// Node server: control loop, worker thread, metric stream. See node_server.h.
#include "remote/node_server.h"

#include <unistd.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <zmq.hpp>

#include "remote/poll.h"
#include <zmq_addon.hpp>

#include "core/config_io.h"
#include "core/layout.h"
#include "remote/protocol.h"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;
double since_s(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

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
    const std::string host = endpoint.substr(6, endpoint.rfind(':') - 6);
    if (host.rfind("127.", 0) == 0 || host == "localhost" || host == "[::1]") return Status::ok();
    if (have_curve_keys)
        return Status::error("endpoint " + endpoint +
                             ": CurveZMQ authentication is not implemented yet, so keys cannot be honoured; "
                             "bind 127.0.0.1 and reach the node through an SSH tunnel");
    return Status::error("endpoint " + endpoint +
                         ": refusing to bind a non-loopback address without CurveZMQ keys (anyone could drive this "
                         "node); bind tcp://127.0.0.1:PORT and forward ports PORT..PORT+3 over SSH instead");
}

struct NodeServer::Impl {
    NodeOptions opts;
    WorkerFactory factory;
    std::shared_ptr<zmq::context_t> ctx;
    zmq::socket_t router, pub;
    NodeEndpoints eps;

    std::string state = "idle";  // idle | configured | running | paused | finished | failed | stopped
    RunConfig cfg;
    NodeRole role;
    std::unique_ptr<Worker> worker;
    std::unique_ptr<QueueSink> sink;
    WorkerControl ctl;
    std::thread thread;
    std::atomic<bool> worker_done{false};
    bool shutdown = false;
    double heartbeat_s = 0.5, heartbeat_timeout_s = 0;  // 0 = no coordinator watch before configure
    Clock::time_point last_heartbeat_sent = Clock::now(), coordinator_seen = Clock::now();

    void send(const zmq::message_t& identity, const Message& m) {
        auto frames = encode(m);
        router.send(zmq::buffer(identity.data(), identity.size()), zmq::send_flags::sndmore);
        for (size_t i = 0; i < frames.size(); ++i)
            router.send(frames[i], i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
    void publish(const Message& m) {
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

    Message handle(const Message& req);
    Message configure(const Message& req);
    Message start();
    void pump_worker();
};

Message NodeServer::Impl::configure(const Message& req) {
    if (state == "running" || state == "paused") return make_error("configure while a run is " + state);
    join_worker();
    const auto& b = req.body;
    if (!b.contains("config_toml") || !b["config_toml"].is_string()) return make_error("configure: no config_toml");
    if (!b.contains("role")) return make_error("configure: no role");
    auto parsed = parse_config(b["config_toml"].get<std::string>(), "configure");
    if (!parsed) return make_error("configure: " + parsed.message());
    auto r = role_from_json(b["role"]);
    if (!r) return make_error("configure: " + r.message());
    auto w = factory(*parsed, *r, opts.listen);
    if (!w) return make_error("configure: " + w.message());
    cfg = std::move(*parsed);
    role = std::move(*r);
    worker = std::move(*w);
    heartbeat_s = b.value("heartbeat_s", cfg.cluster.heartbeat_s);
    heartbeat_timeout_s = b.value("heartbeat_timeout_s", cfg.cluster.heartbeat_timeout_s);
    ctl.stop = false;
    ctl.paused = false;
    ctl.step = 0;
    worker_done = false;
    sink = std::make_unique<QueueSink>(role.name);
    state = "configured";
    return {};
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
        }
        Message done;
        done.kind = MsgKind::kDone;
        done.body = {{"name", role.name}, {"ok", res.is_ok()}, {"error", res.is_ok() ? "" : res.message()},
                     {"stopped", ctl.stop.load()}};
        done.body["summary"] = res.is_ok() ? nlohmann::json(*res) : nlohmann::json::object();
        sink->push(std::move(done));
        worker_done = true;
    });
    return {};
}

Message NodeServer::Impl::handle(const Message& req) {
    Message ok;
    ok.kind = MsgKind::kOk;
    switch (req.kind) {
        case MsgKind::kHello: {
            Message caps;
            caps.kind = MsgKind::kCapabilities;
            caps.body = {{"node_version", opts.version}, {"protocol", kProtocolVersion},
                         {"threads", std::thread::hardware_concurrency()},
                         {"memory_bytes", static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                                              static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE))},
                         {"device", opts.device}, {"host", host_name()}, {"pid", static_cast<int64_t>(getpid())},
                         {"state", state}};
            return caps;
        }
        case MsgKind::kConfigure: {
            Message m = configure(req);
            return m.body.contains("error") ? m : ok;
        }
        case MsgKind::kStart: {
            Message m = start();
            return m.body.contains("error") ? m : ok;
        }
        case MsgKind::kPause:
            if (state != "running") return make_error("pause needs a running node (state is " + state + ")");
            ctl.paused = true;
            state = "paused";
            return ok;
        case MsgKind::kResume:
            if (state != "paused") return make_error("resume needs a paused node (state is " + state + ")");
            ctl.paused = false;
            state = "running";
            return ok;
        case MsgKind::kStop:
            if (state == "running" || state == "paused") ctl.stop = true;
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
    if (worker_done.load() && thread.joinable()) thread.join();
}

NodeServer::~NodeServer() {
    if (!impl_) return;
    impl_->ctl.stop = true;
    impl_->join_worker();
    impl_->router.set(zmq::sockopt::linger, 0);
    impl_->pub.set(zmq::sockopt::linger, 200);
}

const std::string& NodeServer::endpoint() const { return impl_->opts.listen; }

Result<std::unique_ptr<NodeServer>> NodeServer::bind(NodeOptions opts, WorkerFactory factory) {
    using R = Result<std::unique_ptr<NodeServer>>;
    if (Status s = check_bind_allowed(opts.listen, !opts.curve_secret_key.empty()); !s) return s;
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
    try {
        s.router = zmq::socket_t(*s.ctx, zmq::socket_type::router);
        s.router.bind(s.eps.control);
        s.pub = zmq::socket_t(*s.ctx, zmq::socket_type::pub);
        s.pub.set(zmq::sockopt::sndhwm, 0);  // metrics are never dropped for a slow subscriber
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
            s.coordinator_seen = Clock::now();
            auto req = decode(frames, s.opts.max_message_bytes);
            if (!req) {
                s.send(identity, make_error(req.message()));
                continue;
            }
            if (req->kind == MsgKind::kHeartbeat) continue;
            Message reply = s.handle(*req);
            if (req->body.contains("id")) reply.body["id"] = req->body["id"];
            s.send(identity, reply);
        }
        s.pump_worker();
        if (since_s(s.last_heartbeat_sent) >= s.heartbeat_s) s.heartbeat();
        // A coordinator that went silent cannot stop us any more: stop training rather than run forever.
        if ((s.state == "running" || s.state == "paused") && s.heartbeat_timeout_s > 0 && !s.ctl.stop &&
            since_s(s.coordinator_seen) > s.heartbeat_timeout_s) {
            s.ctl.stop = true;
            s.sink->event({0, s.role.name, EventLevel::kError, "coordinator-lost",
                           "no message from the coordinator for " + std::to_string(s.heartbeat_timeout_s) +
                               " s; stopping"});
        }
    }
    s.ctl.stop = true;
    s.join_worker();
    s.pump_worker();
    return Status::ok();
}

}  // namespace tw
