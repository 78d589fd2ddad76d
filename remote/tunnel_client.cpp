// A node's side of the relay; see tunnel_client.h.
#include "remote/tunnel_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <deque>
#include <map>
#include <vector>
#include <zmq.hpp>

#include "remote/poll.h"
#include "remote/relay.h"
#include "remote/relay_wire.h"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;
double since_s(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A local dial that has not completed within this found no socket listening (a data port bound
// only once the run is configured, say): it is given up and the relay closes the dialer's
// connection, so the dialer's ZeroMQ socket redials, as it would after a refused connect. A dial
// on this machine that succeeds takes well under a millisecond.
constexpr double kLocalConnectTimeoutS = 0.25;

}  // namespace

struct TunnelClient::Impl {
    TunnelOptions o;
    std::atomic<int>* joins = nullptr;
    zmq::context_t ctx;
    std::array<zmq::socket_t, kRelayLanes> lanes;  // control (ports 0, 1), bulk (2, 3): relay.h
    sockaddr_in local_addr{};
    std::atomic<bool> stop{false};
    mutable std::mutex mu;  // guards endpoint
    std::string endpoint;

    // One carried connection: a plain non-blocking TCP socket to the node's own port.
    struct Conn {
        int fd = -1;
        int lane = 0;            // the lane the relay opened it on: all its bytes travel there
        bool connected = false;  // the dial completed
        Clock::time_point since;
        std::deque<std::string> out;  // bytes for the node's port not written yet
        size_t out_off = 0;
    };
    std::map<uint32_t, Conn> conns;  // by the relay's connection id
    bool joined = false;
    Clock::time_point heard, said;

    void log(const std::string& line) const {
        if (o.log) o.log(line);
    }
    void to_relay(int lane, std::vector<zmq::message_t> parts) {
        auto& s = lanes[static_cast<size_t>(lane)];
        for (size_t i = 0; i < parts.size(); ++i)
            s.send(parts[i], i + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
    void word(const char* kind) {
        std::vector<zmq::message_t> m;
        m.emplace_back(std::string(kind));
        to_relay(0, std::move(m));
    }
    void hello(int lane) {
        std::vector<zmq::message_t> m;
        m.emplace_back(std::string("hello"));
        const uint8_t l = static_cast<uint8_t>(lane);
        m.emplace_back(&l, 1);
        to_relay(lane, std::move(m));
    }
    void tell_closed(uint32_t sid, int lane) {
        std::vector<zmq::message_t> m;
        m.emplace_back(std::string("close"));
        m.emplace_back(relay_wire::sid_frame(sid));
        to_relay(lane, std::move(m));
    }
    // Ends connection `sid` on this side; `tell` says so to the relay (not when the relay said it).
    void end(uint32_t sid, bool tell) {
        auto it = conns.find(sid);
        if (it == conns.end()) return;
        const int lane = it->second.lane;
        ::close(it->second.fd);
        conns.erase(it);
        if (tell) tell_closed(sid, lane);
    }
    void drop_all() {
        for (auto& [sid, c] : conns) ::close(c.fd);
        conns.clear();
    }

    void open(uint32_t sid, int port, int lane) {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) return tell_closed(sid, lane);
        sockaddr_in a = local_addr;
        a.sin_port = htons(static_cast<uint16_t>(o.local_port + port));
        const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a));
        if (rc != 0 && errno != EINPROGRESS) {  // nothing listens there (yet): the dialer redials
            ::close(fd);
            return tell_closed(sid, lane);
        }
        Conn c;
        c.fd = fd;
        c.lane = lane;
        c.connected = rc == 0;
        c.since = Clock::now();
        conns[sid] = std::move(c);
    }
    // Writes what is queued for the node's port; false when the connection broke.
    bool flush(Conn& c) {
        while (!c.out.empty()) {
            const std::string& b = c.out.front();
            const ssize_t n = ::send(c.fd, b.data() + c.out_off, b.size() - c.out_off, MSG_NOSIGNAL);
            if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
            c.out_off += static_cast<size_t>(n);
            if (c.out_off == b.size()) c.out.pop_front(), c.out_off = 0;
        }
        return true;
    }

    void on_relay(int lane) {
        std::vector<zmq::message_t> parts;
        if (!relay_wire::recv_all(lanes[static_cast<size_t>(lane)], parts) || parts.empty()) return;
        if (lane == 0) heard = Clock::now();  // the control lane's pongs say the relay is there
        const std::string kind = parts[0].to_string();
        if (kind == "exposed" && parts.size() == 2) {
            if (lane != 0) return;  // the bulk lane named
            const std::string ep = parts[1].to_string();
            if (!joined) {
                joins->fetch_add(1);
                log("joined relay " + o.relay + ": dialers reach this node at " + ep);
                hello(1);  // the bulk lane at once, so that the run's data connections take it
            }
            joined = true;
            std::lock_guard<std::mutex> lock(mu);
            endpoint = ep;
            return;
        }
        if (kind == "pong") return;
        if (kind == "error" && parts.size() == 2) return log("relay " + o.relay + " refused: " + parts[1].to_string());
        const auto sid = parts.size() >= 2 ? relay_wire::sid_of(parts[1]) : std::nullopt;
        if (kind == "open" && parts.size() == 3 && sid && parts[2].size() == 1 &&
            *parts[2].data<uint8_t>() < kRelayPortsPerNode && !conns.count(*sid))
            return open(*sid, *parts[2].data<uint8_t>(), lane);
        if (kind == "close" && parts.size() == 2 && sid) return end(*sid, false);
        if (kind == "data" && parts.size() == 3 && sid) {
            auto it = conns.find(*sid);
            if (it == conns.end()) return;  // a connection this side ended already
            it->second.out.push_back(parts[2].to_string());
            if (it->second.connected && !flush(it->second)) end(*sid, true);
            return;
        }
        log("relay " + o.relay + ": a malformed or unknown message \"" + kind.substr(0, 32) + "\", ignored");
    }

    void on_local(uint32_t sid, short revents) {
        Conn& c = conns.at(sid);
        if (!c.connected && (revents & (ZMQ_POLLOUT | ZMQ_POLLERR))) {
            int err = 0;
            socklen_t len = sizeof(err);
            ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
            if (err != 0) return end(sid, true);
            c.connected = true;
        }
        if (!c.connected) return;
        if (!flush(c)) return end(sid, true);
        if (!(revents & (ZMQ_POLLIN | ZMQ_POLLERR))) return;
        char buf[65536];
        const ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return end(sid, true);
        if (n < 0) return;
        std::vector<zmq::message_t> m;
        m.emplace_back(std::string("data"));
        m.emplace_back(relay_wire::sid_frame(sid));
        m.emplace_back(buf, static_cast<size_t>(n));
        to_relay(c.lane, std::move(m));
    }

    void tick() {
        if (joined && since_s(heard) > o.timeout_s) {
            joined = false;
            drop_all();
            log("lost relay " + o.relay + ": silent for " + std::to_string(static_cast<int>(o.timeout_s)) +
                " s; saying hello until it answers");
        }
        if (since_s(said) >= 1.0) {
            if (joined) {
                word("ping");
                hello(1);  // names the bulk lane, again after any reconnect of it
            } else {
                hello(0);
            }
            said = Clock::now();
        }
        std::vector<uint32_t> stale;
        for (auto& [sid, c] : conns)
            if (!c.connected && since_s(c.since) > kLocalConnectTimeoutS) stale.push_back(sid);
        for (uint32_t sid : stale) end(sid, true);
    }

    void serve() {
        said = Clock::now() - std::chrono::seconds(2);
        while (!stop.load()) {
            std::vector<zmq::pollitem_t> items;
            for (auto& s : lanes) items.push_back({static_cast<void*>(s), 0, ZMQ_POLLIN, 0});
            std::vector<uint32_t> sids;
            for (auto& [sid, c] : conns) {
                const short want = static_cast<short>(ZMQ_POLLIN | (!c.connected || !c.out.empty() ? ZMQ_POLLOUT : 0));
                items.push_back({nullptr, c.fd, want, 0});
                sids.push_back(sid);
            }
            try {
                if (poll_items(items, 20) > 0) {
                    // The control lane first: a word from the coordinator never waits behind bulk bytes here.
                    for (int lane = 0; lane < kRelayLanes; ++lane)
                        for (int k = 0; k < 64 && (lanes[static_cast<size_t>(lane)].get(zmq::sockopt::events) & ZMQ_POLLIN); ++k)
                            on_relay(lane);
                    for (size_t i = kRelayLanes; i < items.size(); ++i)
                        if (items[i].revents && conns.count(sids[i - kRelayLanes]))
                            on_local(sids[i - kRelayLanes], items[i].revents);
                }
                tick();
            } catch (const zmq::error_t& e) {
                log(std::string("relay tunnel: ") + e.what());
            }
        }
        drop_all();
        for (auto& s : lanes) s.close();
    }
};

Result<std::unique_ptr<TunnelClient>> TunnelClient::start(TunnelOptions opts) {
    using R = Result<std::unique_ptr<TunnelClient>>;
    if (opts.keys.empty() || opts.relay_key.empty())
        return R::error("--join needs this node's keys (--curve-secret-key) and the relay's public key (--relay-key)");
    if (opts.local_port <= 0 || opts.local_port + kRelayPortsPerNode - 1 > 65535)
        return R::error("--join: the node's ports " + std::to_string(opts.local_port) + ".. are out of range");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    if (::inet_pton(AF_INET, opts.local_host.c_str(), &addr.sin_addr) != 1)
        return R::error("--join: the node listens on " + opts.local_host + ", not an IPv4 address this node can dial");
    std::unique_ptr<TunnelClient> t(new TunnelClient());
    t->impl_ = std::make_unique<Impl>();
    Impl& m = *t->impl_;
    m.o = std::move(opts);
    m.joins = &t->joins_;
    m.local_addr = addr;
    try {
        for (auto& s : m.lanes) {
            s = zmq::socket_t(m.ctx, zmq::socket_type::dealer);
            s.set(zmq::sockopt::linger, 0);
            s.set(zmq::sockopt::sndhwm, 0);
            s.set(zmq::sockopt::rcvhwm, 0);
            s.set(zmq::sockopt::reconnect_ivl, 200);
            s.set(zmq::sockopt::reconnect_ivl_max, 2000);
            curve_client(s, m.o.keys, m.o.relay_key);
            s.connect(m.o.relay);
        }
    } catch (const zmq::error_t& e) {
        return R::error("--join " + m.o.relay + ": " + e.what());
    }
    Impl* raw = t->impl_.get();
    t->thread_ = std::thread([raw] { raw->serve(); });
    return t;
}

TunnelClient::~TunnelClient() {
    if (impl_) impl_->stop = true;
    if (thread_.joinable()) thread_.join();
}

std::string TunnelClient::public_endpoint() const {
    std::lock_guard<std::mutex> lock(impl_->mu);
    return impl_->endpoint;
}

}  // namespace tw
