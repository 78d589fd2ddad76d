// ZeroMQ all-gather mesh; see zmq_collective.h for the behaviour and remote/wire_frame.h for the wire.
#include "remote/zmq_collective.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <zmq.hpp>

#include "remote/curve.h"
#include "remote/disconnect_log.h"
#include "remote/hub_relay.h"
#include "remote/link_shaper.h"
#include "remote/mesh_outbox.h"
#include "remote/poll.h"
#include "remote/wire_frame.h"
#include "remote/zmq_collective_internal.h"

namespace tw {

using namespace zmq_mesh;

// Sends a heartbeat frame to every peer each interval from its own thread and sockets.
struct ZmqCollective::Heartbeat {
    std::thread thread;
    std::mutex mu;
    std::condition_variable cv;
    bool stop = false;
    std::vector<zmq::socket_t> push;

    void run(int rank, uint64_t token, double interval_s) {
        std::unique_lock<std::mutex> lock(mu);
        uint8_t h[wire::kFrameHeaderBytes];
        wire::FrameHeader fh;
        fh.kind = wire::FrameKind::kHeartbeat;
        fh.counted = false;
        fh.rank = static_cast<uint16_t>(rank);
        fh.token = token;
        wire::encode_frame_header(fh, h);
        while (!stop) {
            for (auto& p : push) {
                if (!p) continue;
                try {
                    // dontwait: a peer not up yet or not reading must not hold the beat up.
                    if (p.send(zmq::const_buffer(h, sizeof h), zmq::send_flags::sndmore | zmq::send_flags::dontwait))
                        (void)p.send(zmq::const_buffer(h, 0), zmq::send_flags::dontwait);
                } catch (const zmq::error_t&) {
                }
            }
            cv.wait_for(lock, std::chrono::duration<double>(interval_s), [this] { return stop; });
        }
    }
};

Result<std::unique_ptr<ZmqCollective>> ZmqCollective::create(std::shared_ptr<zmq::context_t> ctx,
                                                              std::vector<std::string> endpoints, int rank,
                                                              int timeout_ms) {
    MeshOptions o;
    o.timeout_ms = timeout_ms;
    return create(std::move(ctx), std::move(endpoints), rank, std::move(o));
}

Result<std::unique_ptr<ZmqCollective>> ZmqCollective::create(std::shared_ptr<zmq::context_t> ctx,
                                                              std::vector<std::string> endpoints, int rank,
                                                              MeshOptions opts) {
    using R = Result<std::unique_ptr<ZmqCollective>>;
    if (rank < 0 || rank >= static_cast<int>(endpoints.size()))
        return R::error("collective: rank " + std::to_string(rank) + " outside 0.." + std::to_string(endpoints.size()));
    if (endpoints.size() > 65535) return R::error("collective: at most 65535 members");
    if (!opts.public_key.empty() && opts.member_keys.size() != endpoints.size())
        return R::error("collective: " + std::to_string(opts.member_keys.size()) + " member keys for " +
                        std::to_string(endpoints.size()) + " members");
    std::unique_ptr<ZmqCollective> c(new ZmqCollective());
    c->ctx_ = std::move(ctx);
    c->endpoints_ = std::move(endpoints);
    c->rank_ = rank;
    c->opts_ = std::move(opts);
    if (c->opts_.shape) c->shaper_ = std::make_unique<LinkShaper>(*c->opts_.shape);
    c->s_ = std::make_unique<Sockets>();
    auto& s = *c->s_;
    const int n = c->size();
    const std::string& own = c->endpoints_[static_cast<size_t>(rank)];
    try {
        s.pull = zmq::socket_t(*c->ctx_, zmq::socket_type::pull);
        if (!c->opts_.public_key.empty())
            curve_server(s.pull, {c->opts_.public_key, c->opts_.secret_key}, kZapData);
        // ZeroMQ drops a sender's connection whose frame exceeds this, before reading the frame.
        if (c->opts_.max_frame_bytes > 0 && is_stream_transport(own))
            s.pull.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(c->opts_.max_frame_bytes));
        s.pull.bind(own);
        if (c->opts_.max_frame_bytes > 0 && is_stream_transport(own) && c->opts_.on_event) {
            auto report = c->opts_.on_event;
            s.pull_log = std::make_unique<DisconnectLog>(
                s.pull, "data port", [report](const std::string& t) { report("connection-dropped", "data plane: " + t); });
        }
    } catch (const zmq::error_t& e) {
        return R::error("collective: cannot bind " + own + ": " + e.what());
    }
    // Members that joined a relay: where one side of a pair is reachable, the other dials it.
    const auto& relayed = c->opts_.relayed_members;
    const auto is_relayed = [&relayed](int r) { return std::binary_search(relayed.begin(), relayed.end(), r); };
    for (size_t i = 0; i < relayed.size(); ++i)
        if (relayed[i] < 0 || relayed[i] >= n || (i > 0 && relayed[i] <= relayed[i - 1]))
            return R::error("collective: relayed members must be ascending ranks below " + std::to_string(n));
    if (!relayed.empty() && c->opts_.public_key.empty())
        return R::error("collective: a mesh with members that joined a relay needs CurveZMQ keys");
    c->relayed_ = is_relayed(rank);
    // A reachable member sends every relayed member its messages through its outbox.
    const std::vector<int> served = c->relayed_ ? std::vector<int>{} : relayed;
    // Where this member's messages to `r` go: the outbox's pipe for a relayed member it serves, else
    // r's data endpoint (through the relay when r is relayed and so is this member).
    const auto target = [&](int r) -> std::pair<std::string, std::string> {
        if (c->outbox_ && is_relayed(r)) return {c->outbox_->sender_endpoint(r), ""};
        return {c->endpoints_[static_cast<size_t>(r)],
                c->opts_.public_key.empty() ? "" : c->opts_.member_keys[static_cast<size_t>(r)]};
    };
    try {
        if (!served.empty()) {
            auto at = mesh_outbox_endpoint(own);
            if (!at) return R::error("collective: " + at.message());
            MeshOutboxOptions oo;
            oo.bind = *at;
            oo.keys = {c->opts_.public_key, c->opts_.secret_key};
            oo.member_keys = c->opts_.member_keys;
            oo.relayed = served;
            oo.max_frame_bytes = 4096;  // diallers send only their probes (and the CURVE handshake)
            if (c->opts_.on_event) {
                auto report = c->opts_.on_event;
                oo.log = [report](const std::string& t) { report("connection-refused", t); };
            }
            auto ob = MeshOutbox::start(*c->ctx_, std::move(oo));
            if (!ob) return R::error("collective: " + ob.message());
            c->outbox_ = std::move(*ob);
        }
        s.push.resize(static_cast<size_t>(n));
        for (int r = 0; r < n; ++r)
            if (r != rank) {
                auto [ep, key] = target(r);
                s.push[static_cast<size_t>(r)] = make_push(*c->ctx_, c->opts_, ep, key, c->opts_.timeout_ms);
            }
        if (c->relayed_) {  // dial every reachable member's outbox: what they send comes in there
            s.inbox.resize(static_cast<size_t>(n));
            s.welcomed.assign(static_cast<size_t>(n), false);
            for (int r = 0; r < n; ++r) {
                if (r == rank || is_relayed(r)) continue;
                auto at = mesh_outbox_endpoint(c->endpoints_[static_cast<size_t>(r)]);
                if (!at) return R::error("collective: " + at.message());
                zmq::socket_t d(*c->ctx_, zmq::socket_type::dealer);
                d.set(zmq::sockopt::probe_router, 1);  // the outbox learns this connection from its probe
                d.set(zmq::sockopt::linger, 0);
                if (c->opts_.max_frame_bytes > 0)
                    d.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(c->opts_.max_frame_bytes));
                curve_client(d, {c->opts_.public_key, c->opts_.secret_key}, c->opts_.member_keys[static_cast<size_t>(r)]);
                d.connect(*at);
                s.inbox[static_cast<size_t>(r)] = std::move(d);
            }
        }
        c->members_ = std::make_unique<MeshMembership>(n, rank, c->opts_.silence_timeout_s, Clock::now());
        if (c->opts_.heartbeat_s > 0 && n > 1) {
            c->hb_ = std::make_unique<Heartbeat>();
            c->hb_->push.resize(static_cast<size_t>(n));
            for (int r = 0; r < n; ++r) {
                if (r == rank) continue;
                auto [ep, key] = target(r);
                auto p = make_push(*c->ctx_, c->opts_, ep, key, 0);
                p.set(zmq::sockopt::sndhwm, 4);  // a peer that is not reading gets no backlog of beats
                c->hb_->push[static_cast<size_t>(r)] = std::move(p);
            }
            Heartbeat* hb = c->hb_.get();
            c->hb_->thread = std::thread([hb, rank, token = c->opts_.token, every = c->opts_.heartbeat_s] {
                hb->run(rank, token, every);
            });
        }
    } catch (const zmq::error_t& e) {
        return R::error(std::string("collective: cannot connect the mesh: ") + e.what());
    }
    return c;
}

ZmqCollective::~ZmqCollective() {
    if (hb_) {
        {
            std::lock_guard<std::mutex> lock(hb_->mu);
            hb_->stop = true;
        }
        hb_->cv.notify_all();
        if (hb_->thread.joinable()) hb_->thread.join();
        for (auto& p : hb_->push)
            if (p) p.set(zmq::sockopt::linger, 0);
    }
    if (!s_) return;
    // Bye: a peer waiting for this member learns at once that it will not come.
    wire::FrameHeader fh;
    fh.kind = wire::FrameKind::kBye;
    fh.counted = false;
    fh.rank = static_cast<uint16_t>(rank_);
    fh.token = opts_.token;
    fh.aux = abort_ && abort_() ? MeshMembership::kByeStopped : MeshMembership::kByeEnded;
    uint8_t h[wire::kFrameHeaderBytes];
    wire::encode_frame_header(fh, h);
    for (auto& p : s_->push) {
        if (!p) continue;
        try {
            if (p.send(zmq::const_buffer(h, sizeof h), zmq::send_flags::sndmore | zmq::send_flags::dontwait))
                (void)p.send(zmq::const_buffer(h, 0), zmq::send_flags::dontwait);
        } catch (const zmq::error_t&) {
        }
        p.set(zmq::sockopt::linger, 200);
    }
    if (s_->pull) s_->pull.set(zmq::sockopt::linger, 0);  // closed already when it went quiet
    s_->inbox.clear();
    // The pushes into the outbox's pipes linger (the bye) while its thread still forwards them.
    for (auto& p : s_->push)
        if (p) p.close();
    outbox_.reset();
}

std::vector<int> ZmqCollective::all_ranks() const {
    std::vector<int> ranks(static_cast<size_t>(size()));
    for (int r = 0; r < size(); ++r) ranks[static_cast<size_t>(r)] = r;
    return ranks;
}

std::string ZmqCollective::member(int r) const {
    return "mesh member " + std::to_string(r) + " (" + endpoints_[static_cast<size_t>(r)] + ")";
}

Status ZmqCollective::drop(const std::string& why) {
    ++dropped_;
    if (opts_.on_event) opts_.on_event("dropped-frame", "data plane: dropped a frame: " + why);
    return Status::ok();  // a dropped frame is not an error of the wait
}

void ZmqCollective::own_pause_check(std::chrono::steady_clock::time_point& last_pass) {
    // A pass of a wait comes every 100 ms at most. A longer gap means this process did not run
    // (SIGSTOP, a VM stall, swapping): silence measured across it says nothing about the peers, who
    // were awake and may have counted *this* process out meanwhile — their words are queued on the
    // socket and say so. Silence counts only time this process was awake.
    const auto now = Clock::now();
    if (now - last_pass > kOwnPause) {
        const auto gap = now - last_pass;
        members_->own_pause(gap, now);
        if (opts_.on_event) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%.1f", std::chrono::duration<double>(gap).count());
            opts_.on_event("own-pause", std::string("this process did not run for ") + buf +
                                            " s; peers' silence is counted from when it ran again");
        }
    }
    last_pass = now;
}

Result<std::vector<std::vector<uint8_t>>> ZmqCollective::all_gather(const std::vector<uint8_t>& mine, LinkClass link,
                                                                   double sim_clock_s, std::vector<double>* clocks) {
    return exchange(all_ranks(), mine, link, sim_clock_s, clocks);
}

Status ZmqCollective::pump_until(const std::string& what, const std::function<std::vector<int>()>& awaited,
                                 std::chrono::steady_clock::time_point wait_start, int max_ms, bool backstop) {
    auto& s = *s_;
    const auto call_start = Clock::now();
    Clock::time_point last_pass = call_start;
    zmq::message_t h;
    zmq::socket_t* from_socket = nullptr;  // the data port, or an outbox dialled (a relayed member's inbox)
    for (;;) {
        if (abort_ && abort_()) return Status::error("collective: aborted (stop requested)");
        own_pause_check(last_pass);
        if (backstop && since_s(wait_start) * 1000 > opts_.timeout_ms)
            return Status::error("collective: " + what + " timed out");
        for (int r : awaited()) {
            double silent = 0;
            switch (members_->check(r, wait_start, Clock::now(), &silent)) {
                case MeshMembership::Out::kIn:
                case MeshMembership::Out::kStopping:  // stopped on request: our own stop is on its way
                    break;
                case MeshMembership::Out::kLost:
                    return Status::error("collective: " + member(r) + " is lost (" + what + ")");
                case MeshMembership::Out::kGaveUp:
                    return Status::error("collective: " + member(r) + " gave up this round attempt (" + what + ")");
                case MeshMembership::Out::kLeft:
                    return Status::error("collective: " + member(r) + " left the run while " + what + " waited for it");
                case MeshMembership::Out::kSilent: {
                    char buf[32];
                    std::snprintf(buf, sizeof buf, "%.1f", silent);
                    // A relayed member hears a public one only over its outbox: one that never
                    // welcomed this member is most likely a port its firewall keeps closed.
                    std::string hint;
                    if (static_cast<size_t>(r) < s.inbox.size() && s.inbox[static_cast<size_t>(r)] &&
                        !s.welcomed[static_cast<size_t>(r)]) {
                        auto at = mesh_outbox_endpoint(endpoints_[static_cast<size_t>(r)]);
                        hint = "; its outbox at " + (at ? *at : std::string("?")) +
                               " never answered this member (is that port open to it?)";
                    }
                    if (opts_.on_event) opts_.on_event("member-lost", member(r) + " silent for " + buf + " s" + hint);
                    return Status::error("collective: " + member(r) + " is lost: silent for " + buf +
                                         " s (no heartbeat, no traffic) while " + what + " waited" + hint);
                }
            }
        }
        if (s.pull_log) s.pull_log->poll();
        if (max_ms >= 0 && since_s(call_start) * 1000 >= max_ms) return Status::ok();  // nothing came
        const int wait_ms = max_ms >= 0 ? std::min(max_ms, 20) : 100;
        from_socket = s.inbox.empty() ? (poll_in(s.pull, wait_ms) ? &s.pull : nullptr) : s.poll_data(wait_ms);
        own_pause_check(last_pass);
        if (from_socket && from_socket->recv(h, zmq::recv_flags::dontwait)) break;
    }
    ++s.taken;
    const int outbox_owner = s.inbox_owner(from_socket);  // −1: the data port
    if (outbox_owner >= 0 && h.size() == 0 && !h.more()) {  // an outbox's welcome (mesh_outbox.h)
        s.welcomed[static_cast<size_t>(outbox_owner)] = true;
        return Status::ok();
    }
    // The rest of a multi-part message is in already (ZeroMQ delivers messages whole).
    std::vector<zmq::message_t> rest;
    for (bool more = h.more(); more;) {
        zmq::message_t part;
        if (!from_socket->recv(part, zmq::recv_flags::dontwait)) break;
        more = part.more();
        rest.push_back(std::move(part));
    }
    if (rest.size() != 1)
        return drop("a message of " + std::to_string(1 + rest.size()) + " frames (expected header + payload)");
    auto fh = wire::parse_frame_header(static_cast<const uint8_t*>(h.data()), h.size(), size());
    if (!fh) return drop(fh.message());
    if (relayed_ && outbox_owner < 0) {  // all the relay carried in, whatever this member makes of it
        counters_.relayed_recv_bytes[static_cast<int>(fh->link)] += rest.front().size();
        counters_.relayed_recv_msgs[static_cast<int>(fh->link)] += 1;
    }
    const int from = fh->rank;
    if (fh->token != opts_.token) return drop("from rank " + std::to_string(from) + ": not this run's token");
    if (from == rank_) return drop("claims this member's own rank " + std::to_string(from));
    if (!opts_.public_key.empty()) {
        if (outbox_owner < 0) {
            const std::string key = peer_key(h);
            if (key != opts_.member_keys[static_cast<size_t>(from)])
                return drop("claims rank " + std::to_string(from) + " but was sent with key " + key_tag(key));
        } else if (outbox_owner != from) {  // each outbox is its owner's, by its key
            return drop("claims rank " + std::to_string(from) + " but came from another member's outbox");
        }
    }
    const zmq::message_t& body = rest.front();
    members_->heard(from, Clock::now());
    switch (fh->kind) {
        case wire::FrameKind::kHeartbeat:
            return Status::ok();
        case wire::FrameKind::kAbandon: {
            // Its attempt failed: whoever waits for it there fails too, and learns whom it found lost.
            if (!body.empty()) return drop("an abandon frame with a payload");
            members_->on_abandon(from, fh->round, fh->aux);  // fenced there when it may not decide
            return Status::ok();
        }
        case wire::FrameKind::kCommit: {
            if (!body.empty()) return drop("a commit frame with a payload");
            if (fh->round < members_->epoch_base() || fh->round + 1 < round_) return Status::ok();  // a round decided here already
            if (fh->round > round_ + kRoundWindow)
                return drop("from rank " + std::to_string(from) + ": a commit of round " + std::to_string(fh->round) +
                            ", too far ahead");
            s.commits[fh->round][from] = fh->aux;
            return Status::ok();
        }
        case wire::FrameKind::kReady:
            if (!body.empty()) return drop("a ready frame with a payload");
            members_->on_ready(from, fh->aux);
            return Status::ok();
        case wire::FrameKind::kBye:
            members_->on_bye(from, fh->aux, Clock::now());
            return Status::ok();
        case wire::FrameKind::kPointToPoint: {
            if (fh->round < members_->epoch_base()) return Status::ok();  // from an attempt given up: discarded, not counted
            if (fh->counted) {
                counters_.recv_bytes[static_cast<int>(fh->link)] += body.size();
                counters_.recv_msgs[static_cast<int>(fh->link)] += 1;
            }
            const auto* bb = static_cast<const uint8_t*>(body.data());
            s.p2p[from].push_back({std::vector<uint8_t>(bb, bb + body.size()), fh->clock_s, fh->round});
            return Status::ok();
        }
        case wire::FrameKind::kRound:
        case wire::FrameKind::kAgree: {
            const bool agree = fh->kind == wire::FrameKind::kAgree;
            if (fh->round < members_->epoch_base()) return Status::ok();  // an attempt given up: discarded quietly
            if (fh->round < gathered_)
                return drop("from rank " + std::to_string(from) + ": round " + std::to_string(fh->round) +
                            " is over (a replayed or repeated frame)");
            // Awaiting admission, a restarted process keeps a few rounds from wherever its peers are.
            const bool kept = members_->awaiting_admission() && s.early.size() < kAdmissionRounds;
            if (fh->round > round_ + kRoundWindow && !kept)
                return drop("from rank " + std::to_string(from) + ": round " + std::to_string(fh->round) +
                            " is too far ahead");
            auto& slot = s.early[fh->round];
            if (slot.count(from) || s.early_hashes[fh->round].count(from))
                return drop("from rank " + std::to_string(from) + ": a second message for round " +
                            std::to_string(fh->round));
            if (agree) {
                if (!body.empty()) return drop("an agreement frame with a payload");
                s.early_hashes[fh->round][from] = fh->aux;
            } else {
                if (fh->counted) {
                    counters_.recv_bytes[static_cast<int>(fh->link)] += body.size();
                    counters_.recv_msgs[static_cast<int>(fh->link)] += 1;
                }
                const auto* bb = static_cast<const uint8_t*>(body.data());
                slot[from] = std::vector<uint8_t>(bb, bb + body.size());
                s.early_starts[fh->round][from] = fh->aux;
            }
            s.early_clocks[fh->round][from] = fh->clock_s;
            return Status::ok();
        }
    }
    return Status::ok();
}

Status ZmqCollective::shape_wait(LinkClass link, size_t bytes) {
    if (!shaper_) return Status::ok();
    const auto release = shaper_->release_at(link, bytes, Clock::now());
    // Waiting is reading: peers' frames, byes and silences are noticed while the uplink is busy.
    const auto none = [] { return std::vector<int>{}; };
    for (;;) {
        const auto left_us = std::chrono::duration_cast<std::chrono::microseconds>(release - Clock::now()).count();
        if (left_us <= 0) return Status::ok();
        const int64_t left = (left_us + 999) / 1000;  // whole ms, rounded up: never before the release
        if (Status st = pump_until("the shaped uplink", none, Clock::now(), static_cast<int>(std::min<int64_t>(left, 20)));
            !st)
            return st;
    }
}

Status ZmqCollective::send_frame(int peer, const uint8_t* header, const std::vector<uint8_t>& payload) {
    auto& p = s_->push[static_cast<size_t>(peer)];
    // A peer that is gone (or not yet there) has no pipe to queue into: while the send waits, keep
    // reading, so its bye or its silence ends the wait instead of the send timeout.
    const auto start = Clock::now();
    const std::string what = "a send to " + member(peer);
    while (!p.send(zmq::const_buffer(header, wire::kFrameHeaderBytes), zmq::send_flags::sndmore | zmq::send_flags::dontwait))
        if (Status st = pump_until(what, [peer] { return std::vector<int>{peer}; }, start, 20); !st) return st;
    // Once the first frame is queued the rest of the message is too.
    if (!p.send(zmq::const_buffer(payload.data(), payload.size()), zmq::send_flags::none))
        return Status::error("collective: send to " + member(peer) + " timed out");
    header_bytes_ += wire::kFrameHeaderBytes;
    return Status::ok();
}


Result<std::vector<std::vector<uint8_t>>> ZmqCollective::exchange(const std::vector<int>& group,
                                                                 const std::vector<uint8_t>& mine, LinkClass link,
                                                                 double sim_clock_s, std::vector<double>* clocks) {
    using R = Result<std::vector<std::vector<uint8_t>>>;
    if (Status st = check_group(group, size(), rank_); !st) return st;
    const int li = static_cast<int>(link);
    try {
        const uint64_t round = round_++;
        const uint64_t start_ns = wall_ns();
        wire::FrameHeader fh;
        fh.aux = start_ns;
        fh.kind = wire::FrameKind::kRound;
        fh.link = link;
        fh.rank = static_cast<uint16_t>(rank_);
        fh.round = round;
        fh.clock_s = sim_clock_s;
        fh.token = opts_.token;
        uint8_t header[wire::kFrameHeaderBytes];
        wire::encode_frame_header(fh, header);
        for (int r : group) {
            if (r == rank_) continue;
            if (Status st = shape_wait(link, mine.size()); !st) return st;
            if (Status st = send_frame(r, header, mine); !st) return st;
            counters_.sent_bytes[li] += mine.size();
            counters_.sent_msgs[li] += 1;
        }
        auto missing = [&] { return awaited_members(group, rank_, s_->early[round]); };
        // Silence and the backstop count from the start of the whole wait: peers' heartbeats end
        // single pumps, and a member silent through many of them is still lost.
        const auto wait_start = Clock::now();
        while (!missing().empty())
            if (Status st = pump_until("round " + std::to_string(round), missing, wait_start, -1); !st) return st;
        // The exchange's real time for this member: from the moment the last member began sending
        // (its start stamp; a stamp from the future — unsynchronised clocks — counts as now) until
        // every payload is here.
        const uint64_t done_ns = wall_ns();
        uint64_t latest_ns = start_ns;
        for (auto& [r, t] : s_->early_starts[round])
            if (std::find(group.begin(), group.end(), r) != group.end()) latest_ns = std::max(latest_ns, std::min(t, done_ns));
        if (done_ns > latest_ns) real_exchange_s_ += static_cast<double>(done_ns - latest_ns) * 1e-9;  // a clock step back: 0
        auto& got = s_->early[round];
        std::vector<std::vector<uint8_t>> out(group.size());
        if (clocks) clocks->assign(group.size(), sim_clock_s);
        for (size_t i = 0; i < group.size(); ++i) {
            if (group[i] == rank_) {
                out[i] = mine;
                continue;
            }
            out[i] = std::move(got[group[i]]);
            if (clocks) (*clocks)[i] = s_->early_clocks[round][group[i]];
            got.erase(group[i]);
        }
        // Only the group's payloads count for this round: one from outside it is dropped.
        for (auto& [r, payload] : got)
            (void)drop("from rank " + std::to_string(r) + ": not in round " + std::to_string(round) + "'s group");
        s_->early.erase(round);
        s_->early_clocks.erase(round);
        s_->early_starts.erase(round);
        gathered_ = std::max(gathered_, round + 1);
        return out;
    } catch (const zmq::error_t& e) {
        return R::error(std::string("collective: ") + e.what());
    }
}

void ZmqCollective::post(int peer, const uint8_t* header) {
    auto& p = s_->push[static_cast<size_t>(peer)];
    try {
        if (p.send(zmq::const_buffer(header, wire::kFrameHeaderBytes), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
            (void)p.send(zmq::const_buffer(header, 0), zmq::send_flags::dontwait);
            header_bytes_ += wire::kFrameHeaderBytes;
        }
    } catch (const zmq::error_t&) {
    }
}

Status ZmqCollective::send(int peer, const std::vector<uint8_t>& payload, LinkClass link, double sim_clock_s,
                           bool count) {
    if (peer < 0 || peer >= size() || peer == rank_)
        return Status::error("collective: cannot send to rank " + std::to_string(peer) + " from rank " +
                             std::to_string(rank_));
    try {
        wire::FrameHeader fh;
        fh.kind = wire::FrameKind::kPointToPoint;
        fh.link = link;
        fh.counted = count;
        fh.rank = static_cast<uint16_t>(rank_);
        fh.round = members_->epoch_base();
        fh.clock_s = sim_clock_s;
        fh.token = opts_.token;
        uint8_t header[wire::kFrameHeaderBytes];
        wire::encode_frame_header(fh, header);
        if (count)
            if (Status st = shape_wait(link, payload.size()); !st) return st;
        if (Status st = send_frame(peer, header, payload); !st) return st;
        if (count) {
            counters_.sent_bytes[static_cast<int>(link)] += payload.size();
            counters_.sent_msgs[static_cast<int>(link)] += 1;
        }
        return Status::ok();
    } catch (const zmq::error_t& e) {
        return Status::error(std::string("collective: ") + e.what());
    }
}

Result<std::vector<uint8_t>> ZmqCollective::recv(int peer, double* sender_clock_s) {
    using R = Result<std::vector<uint8_t>>;
    if (peer < 0 || peer >= size() || peer == rank_)
        return R::error("collective: cannot receive from rank " + std::to_string(peer) + " at rank " +
                        std::to_string(rank_));
    try {
        auto& q = s_->p2p[peer];
        auto awaited = [peer] { return std::vector<int>{peer}; };
        const auto wait_start = Clock::now();
        while (q.empty())
            if (Status st = pump_until("message from rank " + std::to_string(peer), awaited, wait_start, -1); !st) return st;
        auto m = std::move(q.front());
        q.pop_front();
        if (sender_clock_s) *sender_clock_s = m.clock_s;
        return std::move(m.payload);
    } catch (const zmq::error_t& e) {
        return R::error(std::string("collective: ") + e.what());
    }
}

Result<std::vector<uint8_t>> ZmqCollective::recv_any(const std::vector<int>& peers, int* from, double* sender_clock_s) {
    using R = Result<std::vector<uint8_t>>;
    for (int p : peers)
        if (p < 0 || p >= size() || p == rank_)
            return R::error("collective: cannot receive from rank " + std::to_string(p) + " at rank " + std::to_string(rank_));
    try {
        // Silence counts from the start of the whole wait, as in recv (heartbeats end single pumps).
        const auto wait_start = Clock::now();
        for (;;) {
            std::vector<int> alive;
            for (int p : peers) {
                auto& q = s_->p2p[p];
                if (!q.empty()) {
                    auto m = std::move(q.front());
                    q.pop_front();
                    if (from) *from = p;
                    if (sender_clock_s) *sender_clock_s = m.clock_s;
                    return std::move(m.payload);
                }
                if (!members_->is_lost(p)) alive.push_back(p);
            }
            if (alive.empty()) return R::error("collective: every peer awaited is lost or gone");
            Status st = pump_until("a message from any of " + std::to_string(alive.size()) + " peer(s)",
                                   [&alive] { return alive; }, wait_start, -1, /*backstop=*/false);
            if (st) continue;
            if (abort_ && abort_()) return st;
            // A peer found lost or gone ends one pump; the others are still awaited.
            bool newly_lost = false;
            for (int p : alive) newly_lost = newly_lost || members_->is_lost(p);
            if (!newly_lost) return st;
        }
    } catch (const zmq::error_t& e) {
        return R::error(std::string("collective: ") + e.what());
    }
}

}  // namespace tw
