// The relay; see relay.h.
#include "remote/relay.h"

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "remote/poll.h"
#include "remote/relay_wire.h"

namespace tw {

const char* to_string(RelayClass c) {
    switch (c) {
        case RelayClass::kControl: return "control";
        case RelayClass::kData: return "data";
        case RelayClass::kStore: return "store";
    }
    return "?";
}

RelayClass relay_class_of_port(int offset) {
    if (offset == 2) return RelayClass::kData;
    if (offset == 3) return RelayClass::kStore;
    return RelayClass::kControl;
}

int relay_lane_of_port(int offset) { return relay_class_of_port(offset) == RelayClass::kControl ? 0 : 1; }

namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

json count_json(const ZmtpCount& c) { return {{"bytes", c.bytes}, {"payload", c.payload}, {"frames", c.frames}}; }

Result<ZmtpCount> count_from(const json& j) {
    if (!j.is_object()) return Result<ZmtpCount>::error("not an object");
    ZmtpCount c;
    for (auto [name, field] : {std::pair{"bytes", &c.bytes}, {"payload", &c.payload}, {"frames", &c.frames}}) {
        auto it = j.find(name);
        if (it == j.end() || !it->is_number_unsigned()) return Result<ZmtpCount>::error(std::string(name) + " missing");
        *field = it->get<uint64_t>();
    }
    return c;
}

}  // namespace

std::string counters_to_json(const RelayCounters& c) {
    json j{{"connections", c.connections}, {"bulk_connections", c.bulk_connections}, {"joins", c.joins}};
    for (int k = 0; k < kRelayClasses; ++k) {
        const char* name = to_string(static_cast<RelayClass>(k));
        j["to_node"][name] = count_json(c.to_node[static_cast<size_t>(k)]);
        j["from_node"][name] = count_json(c.from_node[static_cast<size_t>(k)]);
    }
    return j.dump();
}

Result<RelayCounters> counters_from_json(const std::string& text) {
    using R = Result<RelayCounters>;
    const json j = json::parse(text, nullptr, false);
    if (!j.is_object()) return R::error("relay counters: not a JSON object");
    RelayCounters c;
    for (auto [name, field] : {std::pair{"connections", &c.connections}, {"bulk_connections", &c.bulk_connections},
                               {"joins", &c.joins}}) {
        if (!j.contains(name) || !j[name].is_number_unsigned())
            return R::error(std::string("relay counters: ") + name + " missing");
        *field = j[name].get<uint64_t>();
    }
    for (int k = 0; k < kRelayClasses; ++k) {
        const char* name = to_string(static_cast<RelayClass>(k));
        for (auto [way, dst] : {std::pair{"to_node", &c.to_node}, {"from_node", &c.from_node}}) {
            if (!j.contains(way) || !j[way].is_object() || !j[way].contains(name))
                return R::error(std::string("relay counters: ") + way + "." + name + " missing");
            auto v = count_from(j[way][name]);
            if (!v) return R::error(std::string("relay counters: ") + way + "." + name + ": " + v.message());
            (*dst)[static_cast<size_t>(k)] = *v;
        }
    }
    return c;
}

struct Relay::Impl {
    RelayOptions o;
    std::shared_ptr<zmq::context_t> ctx;
    std::unique_ptr<ZapHandler> zap;
    zmq::socket_t tunnel;
    std::string bind_host, public_host;
    int next_port = 0;
    std::atomic<bool> stop{false};

    struct Node {
        std::string key;
        std::array<std::string, kRelayLanes> rid;  // each lane's routing id on the tunnel socket now ("" = none)
        std::array<std::unique_ptr<zmq::socket_t>, kRelayPortsPerNode> ports;
        std::array<std::map<std::string, uint32_t>, kRelayPortsPerNode> open;  // a port's connections by routing id
        int q = 0;
        std::string endpoint;  // tcp://PUBLIC:Q, what dialers use
        bool online = false;
        Clock::time_point heard;
    };
    struct Conn {
        std::string key, rid;
        int port = 0;
        int lane = 0;  // the lane it was opened on, for its whole life (one lane keeps its bytes in order)
        ZmtpMeter to_node, from_node;
    };
    std::map<std::string, Node> nodes;
    std::map<uint32_t, Conn> conns;
    uint32_t next_sid = 1;

    mutable std::mutex mu;  // guards counters
    std::map<std::string, RelayCounters> counters;

    void log(const std::string& line) const {
        if (o.log) o.log("relay: " + line);
    }

    Status bind_ports(Node& n) {
        for (int attempt = 0; attempt < 200; ++attempt) {
            std::array<std::unique_ptr<zmq::socket_t>, kRelayPortsPerNode> socks;
            int q = 0;
            try {
                for (int k = 0; k < kRelayPortsPerNode; ++k) {
                    socks[static_cast<size_t>(k)] = std::make_unique<zmq::socket_t>(*ctx, zmq::socket_type::stream);
                    auto& s = *socks[static_cast<size_t>(k)];
                    s.set(zmq::sockopt::linger, 0);
                    s.set(zmq::sockopt::sndhwm, 0);
                    s.set(zmq::sockopt::rcvhwm, 0);
                    if (k == 0) {
                        const std::string port = o.first_port > 0 ? std::to_string(next_port) : "*";
                        s.bind("tcp://" + bind_host + ":" + port);
                        const std::string ep = s.get(zmq::sockopt::last_endpoint);
                        q = std::stoi(ep.substr(ep.rfind(':') + 1));
                    } else {
                        s.bind("tcp://" + bind_host + ":" + std::to_string(q + k));
                    }
                }
            } catch (const zmq::error_t& e) {
                if (o.first_port > 0) next_port += kRelayPortsPerNode;
                if (o.first_port > 0 && next_port + kRelayPortsPerNode > 65536)
                    return Status::error("no four free ports left from " + std::to_string(o.first_port));
                continue;
            }
            if (o.first_port > 0) next_port += kRelayPortsPerNode;
            n.ports = std::move(socks);
            n.q = q;
            return Status::ok();
        }
        return Status::error("found no four consecutive free ports on " + bind_host);
    }

    void send_tunnel(const std::string& rid, std::vector<zmq::message_t> parts) {
        try {
            // Never a blocking send: a peer's pipe that is closing answers EAGAIN for good, and a
            // blocking send would wait on it forever with every other node behind it.
            if (!tunnel.send(zmq::buffer(rid), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) return;
            for (size_t i = 0; i < parts.size(); ++i)
                (void)tunnel.send(parts[i], i + 1 < parts.size() ? zmq::send_flags::sndmore | zmq::send_flags::dontwait
                                                                 : zmq::send_flags::dontwait);
        } catch (const zmq::error_t&) {
            // EHOSTUNREACH: the peer left between its message and this reply; its liveness handles it
        }
    }
    void refuse(const std::string& rid, const std::string& key, const std::string& why) {
        log("refused a message from " + key_tag(key) + ": " + why);
        std::vector<zmq::message_t> m;
        m.emplace_back(std::string("error"));
        m.emplace_back(why);
        send_tunnel(rid, std::move(m));
    }

    void close_public(Node& n, int port, const std::string& rid) {
        try {
            if (n.ports[static_cast<size_t>(port)]->send(zmq::buffer(rid), zmq::send_flags::sndmore | zmq::send_flags::dontwait))
                (void)n.ports[static_cast<size_t>(port)]->send(zmq::message_t(), zmq::send_flags::dontwait);
        } catch (const zmq::error_t&) {
        }
    }

    // The lane a connection to `port` of node `n` opens on: its port's, or the control lane while
    // the bulk lane has not said hello.
    static int lane_for(const Node& n, int port) {
        const int lane = relay_lane_of_port(port);
        return n.rid[static_cast<size_t>(lane)].empty() ? 0 : lane;
    }

    // Closes the node's carried connections (of one lane's ports, or all with lane < 0).
    void drop_connections(Node& n, int lane = -1) {
        for (auto it = conns.begin(); it != conns.end();) {
            if (it->second.key == n.key && (lane < 0 || it->second.lane == lane)) {
                close_public(n, it->second.port, it->second.rid);
                n.open[static_cast<size_t>(it->second.port)].erase(it->second.rid);
                it = conns.erase(it);
            } else {
                ++it;
            }
        }
    }

    // Tells a lane of node `n` its public control endpoint (the answer to every hello).
    void send_exposed(const std::string& rid, const Node& n) {
        std::vector<zmq::message_t> m;
        m.emplace_back(std::string("exposed"));
        m.emplace_back(n.endpoint);
        send_tunnel(rid, std::move(m));
    }

    void on_hello(const std::string& rid, const std::string& key, int lane) {
        auto it = nodes.find(key);
        if (lane == 1) {
            // The bulk lane: only beside a joined control lane; a new connection there ends what it carried.
            if (it == nodes.end() || !it->second.online) return refuse(rid, key, "the bulk lane before hello");
            Node& n = it->second;
            if (!n.rid[1].empty() && n.rid[1] != rid) drop_connections(n, 1);
            if (n.rid[1] != rid) log(key_tag(key) + " named its bulk lane");
            n.rid[1] = rid;
            n.heard = Clock::now();
            return send_exposed(rid, n);
        }
        if (it == nodes.end()) {
            Node n;
            n.key = key;
            if (Status s = bind_ports(n); !s) return refuse(rid, key, "cannot expose the node: " + s.message());
            n.endpoint = "tcp://" + public_host + ":" + std::to_string(n.q);
            it = nodes.emplace(key, std::move(n)).first;
        }
        Node& n = it->second;
        if (n.online && n.rid[0] != rid) drop_connections(n);  // the same key from a new connection: it rejoined
        const bool was_online = n.online && n.rid[0] == rid;
        if (!was_online) n.rid[1].clear();  // a rejoining node names its bulk lane again
        n.rid[0] = rid;
        n.online = true;
        n.heard = Clock::now();
        if (!was_online) {
            std::lock_guard<std::mutex> lock(mu);
            counters[key].joins += 1;
        }
        if (!was_online) log(key_tag(key) + " joined: " + n.endpoint + " (ports " + std::to_string(n.q) + ".." +
                             std::to_string(n.q + kRelayPortsPerNode - 1) + ")");
        send_exposed(rid, n);
    }

    // A message on the tunnel socket from a node that joined: which node, or nullptr (refused).
    Node* joined(const std::string& rid, const std::string& key, const char* what) {
        auto it = nodes.find(key);
        if (it == nodes.end() || !it->second.online || (it->second.rid[0] != rid && it->second.rid[1] != rid)) {
            refuse(rid, key, std::string(what) + " before hello");
            return nullptr;
        }
        it->second.heard = Clock::now();
        return &it->second;
    }
    Conn* conn_of(Node& n, const std::string& rid, const zmq::message_t& sid_frame) {
        auto sid = relay_wire::sid_of(sid_frame);
        auto it = sid ? conns.find(*sid) : conns.end();
        if (it == conns.end() || it->second.key != n.key) {
            // A connection that just ended on the public side is not an error on the node's side.
            if (!sid) refuse(rid, n.key, "a connection id of " + std::to_string(sid_frame.size()) + " bytes, not 4");
            return nullptr;
        }
        return &it->second;
    }

    void on_tunnel() {
        std::vector<zmq::message_t> parts;
        if (!relay_wire::recv_all(tunnel, parts) || parts.size() < 2) return;
        const std::string rid = parts[0].to_string();
        const std::string key = peer_key(parts[1]);
        const std::string kind = parts[1].to_string();
        if (kind == "hello" && parts.size() == 2) return on_hello(rid, key, 0);
        if (kind == "hello" && parts.size() == 3) {
            if (parts[2].size() != 1 || *parts[2].data<uint8_t>() >= kRelayLanes)
                return refuse(rid, key, "a hello naming no lane (0 or 1)");
            return on_hello(rid, key, *parts[2].data<uint8_t>());
        }
        if (kind == "ping" && parts.size() == 2) {
            if (!joined(rid, key, "ping")) return;
            std::vector<zmq::message_t> m;
            m.emplace_back(std::string("pong"));
            return send_tunnel(rid, std::move(m));
        }
        if (kind == "data" && parts.size() == 4) {
            Node* n = joined(rid, key, "data");
            Conn* c = n ? conn_of(*n, rid, parts[2]) : nullptr;
            if (!c) return;
            const ZmtpCount got = c->from_node.feed(parts[3].data<uint8_t>(), parts[3].size());
            {
                std::lock_guard<std::mutex> lock(mu);
                counters[key].from_node[static_cast<size_t>(relay_class_of_port(c->port))] += got;
            }
            try {
                auto& port = *n->ports[static_cast<size_t>(c->port)];
                if (port.send(zmq::buffer(c->rid), zmq::send_flags::sndmore | zmq::send_flags::dontwait))
                    (void)port.send(parts[3], zmq::send_flags::dontwait);
            } catch (const zmq::error_t&) {
            }
            return;
        }
        if (kind == "close" && parts.size() == 3) {
            Node* n = joined(rid, key, "close");
            Conn* c = n ? conn_of(*n, rid, parts[2]) : nullptr;
            if (!c) return;
            close_public(*n, c->port, c->rid);
            n->open[static_cast<size_t>(c->port)].erase(c->rid);
            conns.erase(*relay_wire::sid_of(parts[2]));
            return;
        }
        if ((kind == "lookup" || kind == "stats") && parts.size() == 3) {
            const std::string asked = parts[2].to_string();
            auto it = nodes.find(asked);
            std::vector<zmq::message_t> m;
            m.emplace_back(kind == "lookup" ? std::string("found") : std::string("stats"));
            m.emplace_back(asked);
            if (kind == "lookup") {
                m.emplace_back(it != nodes.end() && it->second.online ? it->second.endpoint : std::string());
            } else {
                std::lock_guard<std::mutex> lock(mu);
                auto c = counters.find(asked);
                m.emplace_back(counters_to_json(c == counters.end() ? RelayCounters{} : c->second));
            }
            return send_tunnel(rid, std::move(m));
        }
        refuse(rid, key, "unknown message \"" + kind.substr(0, 32) + "\" of " + std::to_string(parts.size() - 1) + " frames");
    }

    void on_public(Node& n, int port) {
        std::vector<zmq::message_t> parts;
        if (!relay_wire::recv_all(*n.ports[static_cast<size_t>(port)], parts) || parts.size() != 2) return;
        const std::string rid = parts[0].to_string();
        auto& open = n.open[static_cast<size_t>(port)];
        auto it = open.find(rid);
        if (it == open.end()) {
            if (parts[1].size() != 0) return;  // bytes of a connection already closed
            if (!n.online) return close_public(n, port, rid);  // nobody to carry it to
            const uint32_t sid = next_sid++;
            open.emplace(rid, sid);
            Conn& c = conns[sid];
            c.key = n.key, c.rid = rid, c.port = port, c.lane = lane_for(n, port);
            {
                std::lock_guard<std::mutex> lock(mu);
                counters[n.key].connections += 1;
                if (c.lane == 1) counters[n.key].bulk_connections += 1;
            }
            std::vector<zmq::message_t> m;
            m.emplace_back(std::string("open"));
            m.emplace_back(relay_wire::sid_frame(sid));
            const uint8_t p = static_cast<uint8_t>(port);
            m.emplace_back(&p, 1);
            return send_tunnel(n.rid[static_cast<size_t>(c.lane)], std::move(m));
        }
        const uint32_t sid = it->second;
        auto ci = conns.find(sid);
        if (ci == conns.end()) {  // ended on the node's side meanwhile
            open.erase(it);
            return;
        }
        const int lane = ci->second.lane;
        std::vector<zmq::message_t> m;
        if (parts[1].size() == 0) {  // the dialer hung up
            open.erase(it);
            conns.erase(sid);
            m.emplace_back(std::string("close"));
            m.emplace_back(relay_wire::sid_frame(sid));
        } else {
            Conn& c = ci->second;
            const ZmtpCount got = c.to_node.feed(parts[1].data<uint8_t>(), parts[1].size());
            {
                std::lock_guard<std::mutex> lock(mu);
                counters[n.key].to_node[static_cast<size_t>(relay_class_of_port(port))] += got;
            }
            m.emplace_back(std::string("data"));
            m.emplace_back(relay_wire::sid_frame(sid));
            m.emplace_back(std::move(parts[1]));
        }
        send_tunnel(n.rid[static_cast<size_t>(lane)], std::move(m));
    }

    void check_liveness() {
        const auto now = Clock::now();
        for (auto& [key, n] : nodes) {
            if (!n.online || std::chrono::duration<double>(now - n.heard).count() <= o.timeout_s) continue;
            n.online = false;
            drop_connections(n);
            log(key_tag(key) + " is offline: silent for " + std::to_string(static_cast<int>(o.timeout_s)) +
                " s; its ports wait for it");
        }
    }

    void serve() {
        while (!stop.load()) {
            std::vector<zmq::pollitem_t> items{{static_cast<void*>(tunnel), 0, ZMQ_POLLIN, 0}};
            std::vector<std::pair<Node*, int>> who;
            for (auto& [key, n] : nodes)
                for (int k = 0; k < kRelayPortsPerNode; ++k) {
                    items.push_back({static_cast<void*>(*n.ports[static_cast<size_t>(k)]), 0, ZMQ_POLLIN, 0});
                    who.emplace_back(&n, k);
                }
            if (poll_items(items, 100) > 0) {
                // Drain what is ready, a bounded number per socket so no socket starves the others.
                for (int round = 0; round < 64 && (items[0].revents & ZMQ_POLLIN); ++round) {
                    on_tunnel();
                    if (!(tunnel.get(zmq::sockopt::events) & ZMQ_POLLIN)) break;
                }
                for (size_t i = 1; i < items.size(); ++i) {
                    if (!(items[i].revents & ZMQ_POLLIN)) continue;
                    auto [n, k] = who[i - 1];
                    for (int round = 0; round < 64; ++round) {
                        on_public(*n, k);
                        if (!(n->ports[static_cast<size_t>(k)]->get(zmq::sockopt::events) & ZMQ_POLLIN)) break;
                    }
                }
            }
            check_liveness();
        }
        for (auto& [key, n] : nodes)
            for (auto& s : n.ports) s->close();
        tunnel.close();
    }
};

Result<std::unique_ptr<Relay>> Relay::start(RelayOptions opts) {
    using R = Result<std::unique_ptr<Relay>>;
    if (opts.keys.empty()) return R::error("relay: keys are required (thinwire keys new DIR; --curve-secret-key)");
    if (opts.listen.rfind("tcp://", 0) != 0) return R::error("relay: --listen must be tcp://ADDRESS:PORT, not " + opts.listen);
    const std::string hostport = opts.listen.substr(6);
    const size_t colon = hostport.rfind(':');
    if (colon == std::string::npos) return R::error("relay: --listen " + opts.listen + " has no port");
    std::unique_ptr<Relay> r(new Relay());
    r->impl_ = std::make_unique<Impl>();
    Impl& m = *r->impl_;
    m.bind_host = hostport.substr(0, colon);
    m.public_host = opts.public_host.empty() ? m.bind_host : opts.public_host;
    if (m.public_host == "*" || m.public_host == "0.0.0.0")
        return R::error("relay: listening on every address, it needs --public-host: the address dialers use");
    if (m.bind_host == "*") m.bind_host = "0.0.0.0";
    m.next_port = opts.first_port;
    m.o = std::move(opts);
    m.ctx = std::make_shared<zmq::context_t>();
    auto zap = ZapHandler::start(m.ctx, [log = m.o.log](const std::string& t) {
        if (log) log("relay: " + t);
    });
    if (!zap) return R::error("relay: " + zap.message());
    m.zap = std::move(*zap);
    m.zap->allow(kZapRelay, m.o.allowed);
    try {
        m.tunnel = zmq::socket_t(*m.ctx, zmq::socket_type::router);
        m.tunnel.set(zmq::sockopt::linger, 0);
        m.tunnel.set(zmq::sockopt::sndhwm, 0);
        m.tunnel.set(zmq::sockopt::rcvhwm, 0);
        m.tunnel.set(zmq::sockopt::router_mandatory, 1);
        m.tunnel.set(zmq::sockopt::maxmsgsize, m.o.max_message_bytes);
        curve_server(m.tunnel, m.o.keys, kZapRelay);
        m.tunnel.bind(m.o.listen);
        r->endpoint_ = m.tunnel.get(zmq::sockopt::last_endpoint);
    } catch (const zmq::error_t& e) {
        return R::error("relay: cannot bind " + m.o.listen + ": " + e.what());
    }
    Impl* raw = r->impl_.get();
    r->thread_ = std::thread([raw] { raw->serve(); });
    return r;
}

Relay::~Relay() {
    if (impl_) impl_->stop = true;
    if (thread_.joinable()) thread_.join();
}

std::map<std::string, RelayCounters> Relay::counters() const {
    std::lock_guard<std::mutex> lock(impl_->mu);
    return impl_->counters;
}

}  // namespace tw
