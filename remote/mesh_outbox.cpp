// A reachable member's outbox for relayed members; see mesh_outbox.h.
#include "remote/mesh_outbox.h"

#include <atomic>
#include <cerrno>
#include <map>
#include <set>
#include <zmq.hpp>

#include "remote/poll.h"

namespace tw {

Result<std::string> mesh_outbox_endpoint(const std::string& data_endpoint) {
    using R = Result<std::string>;
    const std::string scheme = "tcp://";
    if (data_endpoint.rfind(scheme, 0) != 0) return R::error("mesh outbox: " + data_endpoint + " is not a tcp:// endpoint");
    const size_t colon = data_endpoint.rfind(':');
    const std::string digits = colon == std::string::npos ? "" : data_endpoint.substr(colon + 1);
    if (colon < scheme.size() || digits.empty() || digits.size() > 5 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
        return R::error("mesh outbox: " + data_endpoint + " has no port");
    const int port = std::stoi(digits);
    if (port < 1 || port > 65534) return R::error("mesh outbox: " + data_endpoint + ": port " + digits + " has no next port");
    return data_endpoint.substr(0, colon + 1) + std::to_string(port + 1);
}

struct MeshOutbox::Impl {
    struct Member {
        int rank = 0;
        std::string endpoint;                 // inproc://, where this member's senders to `rank` connect
        zmq::socket_t pipe;                   // PULL bound there
        std::string rid;                      // the routing id of its newest connection; "" = none
        std::vector<zmq::message_t> pending;  // a message read from the pipe and not sent yet
    };
    zmq::socket_t router;
    std::vector<Member> members;
    std::map<std::string, size_t> member_of_key;  // relayed members' keys → index into members
    std::set<std::string> strangers;              // keys already logged
    std::function<void(const std::string&)> log;

    // Takes every probe waiting on the ROUTER: a relayed member's names its newest connection.
    void read_router() {
        for (;;) {
            zmq::message_t rid;
            if (!router.recv(rid, zmq::recv_flags::dontwait)) return;
            std::vector<zmq::message_t> rest;
            for (bool more = rid.more(); more;) {
                zmq::message_t part;
                if (!router.recv(part, zmq::recv_flags::dontwait)) break;
                more = part.more();
                rest.push_back(std::move(part));
            }
            if (rest.size() != 1 || rest.front().size() != 0) continue;  // only probes mean anything here
            const std::string key = peer_key(rest.front());
            auto it = member_of_key.find(key);
            if (it == member_of_key.end()) {
                if (strangers.insert(key).second && log)
                    log("mesh outbox: a connection with key " + key_tag(key) + ", not a relayed member's: it gets nothing");
                continue;
            }
            Member& m = members[it->second];
            m.rid.assign(static_cast<const char*>(rid.data()), rid.size());
            // The welcome: the member knows that from now on this member's messages come over this
            // connection (a rejoiner waits for it before it asks for state).
            try {
                if (router.send(zmq::buffer(m.rid), zmq::send_flags::sndmore | zmq::send_flags::dontwait))
                    (void)router.send(zmq::message_t(), zmq::send_flags::none);
            } catch (const zmq::error_t&) {  // gone already: its next probe gets the welcome
                m.rid.clear();
            }
        }
    }

    // Sends m's pending message to its connection; false when it must wait (no connection yet, the
    // connection gone, or its queue full), the message kept.
    bool flush(Member& m) {
        if (m.pending.empty()) return true;
        if (m.rid.empty()) return false;
        try {
            if (!router.send(zmq::buffer(m.rid), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) return false;
        } catch (const zmq::error_t& e) {
            if (e.num() == EHOSTUNREACH) m.rid.clear();  // that connection is gone: wait for the next probe
            return false;
        }
        for (size_t i = 0; i < m.pending.size(); ++i)
            (void)router.send(m.pending[i], i + 1 < m.pending.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
        m.pending.clear();
        return true;
    }

    // Moves m's messages from its pipe to its connection until the pipe is empty or one must wait.
    void forward(Member& m) {
        for (;;) {
            if (!flush(m) || m.rid.empty()) return;
            zmq::message_t part;
            if (!m.pipe.recv(part, zmq::recv_flags::dontwait)) return;
            bool more = part.more();
            m.pending.push_back(std::move(part));
            while (more) {  // ZeroMQ hands a message over whole: its other parts are in
                zmq::message_t next;
                if (!m.pipe.recv(next, zmq::recv_flags::dontwait)) break;
                more = next.more();
                m.pending.push_back(std::move(next));
            }
        }
    }

    void serve(const ServeThread& t) {
        for (;;) {
            // Stopping: one last pass, so the owner's last words (its bye) still leave.
            const bool last = t.stopping();
            std::vector<zmq::pollitem_t> items{{router.handle(), 0, ZMQ_POLLIN, 0}};
            bool waiting = false;  // a message held back: try it again soon
            for (auto& m : members) {
                if (!m.pending.empty()) waiting = true;
                else if (!m.rid.empty()) items.push_back({m.pipe.handle(), 0, ZMQ_POLLIN, 0});
            }
            try {
                poll_items(items, last ? 0 : waiting ? 5 : 50);
                read_router();
                for (auto& m : members) forward(m);
            } catch (const zmq::error_t&) {
                if (t.stopping()) return;
            }
            if (last) return;
        }
    }
};

Result<std::unique_ptr<MeshOutbox>> MeshOutbox::start(zmq::context_t& ctx, MeshOutboxOptions opts) {
    using R = Result<std::unique_ptr<MeshOutbox>>;
    static std::atomic<uint64_t> next_id{0};
    const uint64_t id = next_id++;
    std::unique_ptr<MeshOutbox> o(new MeshOutbox());
    o->impl_ = std::make_unique<Impl>();
    Impl& im = *o->impl_;
    im.log = std::move(opts.log);
    try {
        im.router = zmq::socket_t(ctx, zmq::socket_type::router);
        im.router.set(zmq::sockopt::router_mandatory, 1);  // a send to a connection that is gone fails, and waits
        im.router.set(zmq::sockopt::linger, 200);  // as the mesh's own pushes: the last words may leave
        if (opts.max_frame_bytes > 0) im.router.set(zmq::sockopt::maxmsgsize, opts.max_frame_bytes);
        if (!opts.keys.empty()) curve_server(im.router, opts.keys, kZapData);
        im.router.bind(opts.bind);
        o->endpoint_ = im.router.get(zmq::sockopt::last_endpoint);
        for (int r : opts.relayed) {
            if (r < 0 || static_cast<size_t>(r) >= opts.member_keys.size())
                return R::error("mesh outbox: relayed rank " + std::to_string(r) + " has no key");
            Impl::Member m;
            m.rank = r;
            m.endpoint = "inproc://tw-mesh-outbox-" + std::to_string(id) + "-" + std::to_string(r);
            m.pipe = zmq::socket_t(ctx, zmq::socket_type::pull);
            m.pipe.set(zmq::sockopt::linger, 0);
            m.pipe.bind(m.endpoint);
            im.member_of_key[opts.member_keys[static_cast<size_t>(r)]] = im.members.size();
            im.members.push_back(std::move(m));
        }
    } catch (const zmq::error_t& e) {
        return R::error("mesh outbox: cannot bind " + opts.bind + ": " + e.what());
    }
    o->serving_.start([&im, t = &o->serving_] { im.serve(*t); });
    return o;
}

MeshOutbox::~MeshOutbox() { serving_.stop(); }

std::string MeshOutbox::sender_endpoint(int rank) const {
    for (const auto& m : impl_->members)
        if (m.rank == rank) return m.endpoint;
    return "";
}

}  // namespace tw
