// ZeroMQ all-gather mesh; see zmq_collective.h for the wire layout.
#include "remote/zmq_collective.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <zmq.hpp>

#include "remote/poll.h"

namespace tw {
namespace {

constexpr char kMagic[4] = {'T', 'W', 'A', 'G'};
constexpr uint8_t kVersion = 3;  // 3: point-to-point messages, uncounted flag
constexpr size_t kHeader = 24;

constexpr uint64_t kPointToPoint = ~uint64_t{0};  // the round of a point-to-point message

void put_header(uint8_t* h, uint8_t link, int rank, uint64_t round, double clock) {
    std::memcpy(h, kMagic, 4);
    h[4] = kVersion;
    h[5] = link;
    const uint16_t r = static_cast<uint16_t>(rank);
    std::memcpy(h + 6, &r, 2);
    std::memcpy(h + 8, &round, 8);
    std::memcpy(h + 16, &clock, 8);
}

// Waits for one frame in 100 ms slices so `abort` is honoured; false on timeout or abort.
bool recv_abortable(zmq::socket_t& s, zmq::message_t& m, int timeout_ms, const std::function<bool()>& abort) {
    for (int waited = 0; waited < timeout_ms; waited += 100) {
        if (abort && abort()) return false;
        if (poll_in(s, std::min(100, timeout_ms - waited))) return s.recv(m, zmq::recv_flags::dontwait).has_value();
    }
    return false;
}

}  // namespace

struct ZmqCollective::Sockets {
    zmq::socket_t pull;
    std::vector<zmq::socket_t> push;  // indexed by rank; own slot unused
    bool connected = false;
    std::map<uint64_t, std::map<int, std::vector<uint8_t>>> early;  // payloads of rounds not yet gathered
    std::map<uint64_t, std::map<int, double>> early_clocks;
    struct Message {
        std::vector<uint8_t> payload;
        double clock_s;
    };
    std::map<int, std::deque<Message>> p2p;  // point-to-point messages not yet received, per sender
};

Result<std::unique_ptr<ZmqCollective>> ZmqCollective::create(std::shared_ptr<zmq::context_t> ctx,
                                                              std::vector<std::string> endpoints, int rank,
                                                              int timeout_ms) {
    using R = Result<std::unique_ptr<ZmqCollective>>;
    if (rank < 0 || rank >= static_cast<int>(endpoints.size()))
        return R::error("collective: rank " + std::to_string(rank) + " outside 0.." + std::to_string(endpoints.size()));
    if (endpoints.size() > 65535) return R::error("collective: at most 65535 members");
    std::unique_ptr<ZmqCollective> c(new ZmqCollective());
    c->ctx_ = std::move(ctx);
    c->endpoints_ = std::move(endpoints);
    c->rank_ = rank;
    c->timeout_ms_ = timeout_ms;
    c->s_ = std::make_unique<Sockets>();
    try {
        c->s_->pull = zmq::socket_t(*c->ctx_, zmq::socket_type::pull);
        c->s_->pull.set(zmq::sockopt::rcvtimeo, timeout_ms);
        c->s_->pull.bind(c->endpoints_[static_cast<size_t>(rank)]);
    } catch (const zmq::error_t& e) {
        return R::error("collective: cannot bind " + c->endpoints_[static_cast<size_t>(rank)] + ": " + e.what());
    }
    return c;
}

ZmqCollective::~ZmqCollective() {
    if (!s_) return;
    for (auto& p : s_->push)
        if (p) p.set(zmq::sockopt::linger, 0);
    s_->pull.set(zmq::sockopt::linger, 0);
}

Result<std::vector<std::vector<uint8_t>>> ZmqCollective::all_gather(const std::vector<uint8_t>& mine, LinkClass link,
                                                                   double sim_clock_s, std::vector<double>* clocks) {
    std::vector<int> everyone(static_cast<size_t>(size()));
    for (int r = 0; r < size(); ++r) everyone[static_cast<size_t>(r)] = r;
    return exchange(everyone, mine, link, sim_clock_s, clocks);
}

Status ZmqCollective::connect_once() {
    if (s_->connected) return Status::ok();
    const int n = size();
    s_->push.resize(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
        if (r == rank_) continue;
        auto& p = s_->push[static_cast<size_t>(r)];
        p = zmq::socket_t(*ctx_, zmq::socket_type::push);
        p.set(zmq::sockopt::sndtimeo, timeout_ms_);
        p.connect(endpoints_[static_cast<size_t>(r)]);
    }
    s_->connected = true;
    return Status::ok();
}

Status ZmqCollective::pump(const std::string& what) {
    zmq::message_t h, body;
    if (!recv_abortable(s_->pull, h, timeout_ms_, abort_))
        return Status::error(abort_ && abort_() ? "collective: aborted (stop requested)"
                                                : "collective: " + what + " timed out");
    if (!h.more() || !s_->pull.recv(body)) return Status::error("collective: message without a payload frame");
    const auto* hb = static_cast<const uint8_t*>(h.data());
    if (h.size() != kHeader || std::memcmp(hb, kMagic, 4) != 0)
        return Status::error("collective: malformed header (" + std::to_string(h.size()) + " bytes)");
    if (hb[4] != kVersion)
        return Status::error("collective: peer speaks version " + std::to_string(hb[4]) + ", this node " +
                             std::to_string(kVersion));
    uint16_t from;
    uint64_t their_round;
    double their_clock;
    std::memcpy(&from, hb + 6, 2);
    std::memcpy(&their_round, hb + 8, 8);
    std::memcpy(&their_clock, hb + 16, 8);
    if (from >= size() || from == rank_)
        return Status::error("collective: message from unknown rank " + std::to_string(from));
    const int li = hb[5] & 0x7f;
    if (li >= 3) return Status::error("collective: unknown link class " + std::to_string(li));
    if ((hb[5] & 0x80) == 0) {
        counters_.recv_bytes[li] += body.size();
        counters_.recv_msgs[li] += 1;
    }
    const auto* bb = static_cast<const uint8_t*>(body.data());
    std::vector<uint8_t> payload(bb, bb + body.size());
    if (their_round == kPointToPoint) {
        s_->p2p[from].push_back({std::move(payload), their_clock});
        return Status::ok();
    }
    s_->early[their_round][from] = std::move(payload);
    s_->early_clocks[their_round][from] = their_clock;
    return Status::ok();
}

Result<std::vector<std::vector<uint8_t>>> ZmqCollective::exchange(const std::vector<int>& group,
                                                                 const std::vector<uint8_t>& mine, LinkClass link,
                                                                 double sim_clock_s, std::vector<double>* clocks) {
    using R = Result<std::vector<std::vector<uint8_t>>>;
    const int n = size();
    int my_pos = -1;
    for (size_t i = 0; i < group.size(); ++i) {
        if (group[i] < 0 || group[i] >= n || (i > 0 && group[i] <= group[i - 1]))
            return R::error("collective: group must hold ascending ranks below " + std::to_string(n));
        if (group[i] == rank_) my_pos = static_cast<int>(i);
    }
    if (my_pos < 0) return R::error("collective: rank " + std::to_string(rank_) + " is not in its own group");
    const int li = static_cast<int>(link);
    try {
        connect_once();
        const uint64_t round = round_++;
        uint8_t header[kHeader];
        put_header(header, static_cast<uint8_t>(link), rank_, round, sim_clock_s);
        for (int r : group) {
            if (r == rank_) continue;
            auto& p = s_->push[static_cast<size_t>(r)];
            if (!p.send(zmq::const_buffer(header, kHeader), zmq::send_flags::sndmore) ||
                !p.send(zmq::const_buffer(mine.data(), mine.size()), zmq::send_flags::none))
                return R::error("collective: send to rank " + std::to_string(r) + " timed out");
            counters_.sent_bytes[li] += mine.size();
            counters_.sent_msgs[li] += 1;
            header_bytes_ += kHeader;
        }

        const int expected = static_cast<int>(group.size()) - 1;
        while (static_cast<int>(s_->early[round].size()) < expected)
            if (Status st = pump("round " + std::to_string(round)); !st) return st;
        auto& got = s_->early[round];
        // Only the group's payloads count for this round: a message from outside it is a protocol error.
        std::vector<std::vector<uint8_t>> out(group.size());
        if (clocks) clocks->assign(group.size(), sim_clock_s);
        for (size_t i = 0; i < group.size(); ++i) {
            if (group[i] == rank_) {
                out[i] = mine;
                continue;
            }
            auto it = got.find(group[i]);
            if (it == got.end())
                return R::error("collective: round " + std::to_string(round) + " got a payload from outside the group");
            out[i] = std::move(it->second);
            if (clocks) (*clocks)[i] = s_->early_clocks[round][group[i]];
        }
        s_->early.erase(round);
        s_->early_clocks.erase(round);
        return out;
    } catch (const zmq::error_t& e) {
        return R::error(std::string("collective: ") + e.what());
    }
}

Status ZmqCollective::send(int peer, const std::vector<uint8_t>& payload, LinkClass link, double sim_clock_s,
                           bool count) {
    if (peer < 0 || peer >= size() || peer == rank_)
        return Status::error("collective: cannot send to rank " + std::to_string(peer) + " from rank " +
                             std::to_string(rank_));
    try {
        connect_once();
        uint8_t header[kHeader];
        put_header(header, static_cast<uint8_t>(static_cast<uint8_t>(link) | (count ? 0 : 0x80)), rank_,
                   kPointToPoint, sim_clock_s);
        auto& p = s_->push[static_cast<size_t>(peer)];
        if (!p.send(zmq::const_buffer(header, kHeader), zmq::send_flags::sndmore) ||
            !p.send(zmq::const_buffer(payload.data(), payload.size()), zmq::send_flags::none))
            return Status::error("collective: send to rank " + std::to_string(peer) + " timed out");
        if (count) {
            counters_.sent_bytes[static_cast<int>(link)] += payload.size();
            counters_.sent_msgs[static_cast<int>(link)] += 1;
        }
        header_bytes_ += kHeader;
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
        connect_once();
        auto& q = s_->p2p[peer];
        while (q.empty())
            if (Status st = pump("message from rank " + std::to_string(peer)); !st) return st;
        auto m = std::move(q.front());
        q.pop_front();
        if (sender_clock_s) *sender_clock_s = m.clock_s;
        return std::move(m.payload);
    } catch (const zmq::error_t& e) {
        return R::error(std::string("collective: ") + e.what());
    }
}

}  // namespace tw
