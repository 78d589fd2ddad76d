// ZeroMQ all-gather mesh; see zmq_collective.h for the wire layout.
#include "remote/zmq_collective.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <zmq.hpp>

#include "remote/poll.h"

namespace tw {
namespace {

constexpr char kMagic[4] = {'T', 'W', 'A', 'G'};
constexpr uint8_t kVersion = 2;
constexpr size_t kHeader = 24;

void put_header(uint8_t* h, LinkClass link, int rank, uint64_t round, double clock) {
    std::memcpy(h, kMagic, 4);
    h[4] = kVersion;
    h[5] = static_cast<uint8_t>(link);
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
        if (!s_->connected) {
            s_->push.resize(static_cast<size_t>(n));
            for (int r = 0; r < n; ++r) {
                if (r == rank_) continue;
                auto& p = s_->push[static_cast<size_t>(r)];
                p = zmq::socket_t(*ctx_, zmq::socket_type::push);
                p.set(zmq::sockopt::sndtimeo, timeout_ms_);
                p.connect(endpoints_[static_cast<size_t>(r)]);
            }
            s_->connected = true;
        }
        const uint64_t round = round_++;
        uint8_t header[kHeader];
        put_header(header, link, rank_, round, sim_clock_s);
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
        auto& got = s_->early[round];
        while (static_cast<int>(got.size()) < expected) {
            zmq::message_t h, body;
            if (!recv_abortable(s_->pull, h, timeout_ms_, abort_))
                return R::error(abort_ && abort_() ? "collective: aborted (stop requested)"
                                                   : "collective: round " + std::to_string(round) + " timed out");
            if (!h.more() || !s_->pull.recv(body)) return R::error("collective: message without a payload frame");
            const auto* hb = static_cast<const uint8_t*>(h.data());
            if (h.size() != kHeader || std::memcmp(hb, kMagic, 4) != 0)
                return R::error("collective: malformed header (" + std::to_string(h.size()) + " bytes)");
            if (hb[4] != kVersion)
                return R::error("collective: peer speaks version " + std::to_string(hb[4]) + ", this node " +
                                std::to_string(kVersion));
            uint16_t from;
            uint64_t their_round;
            std::memcpy(&from, hb + 6, 2);
            std::memcpy(&their_round, hb + 8, 8);
            if (from >= n || from == rank_) return R::error("collective: message from unknown rank " + std::to_string(from));
            const auto* bb = static_cast<const uint8_t*>(body.data());
            s_->early[their_round][from] = std::vector<uint8_t>(bb, bb + body.size());
            double their_clock;
            std::memcpy(&their_clock, hb + 16, 8);
            s_->early_clocks[their_round][from] = their_clock;
            counters_.recv_bytes[hb[5] < 3 ? hb[5] : li] += body.size();
            counters_.recv_msgs[hb[5] < 3 ? hb[5] : li] += 1;
        }
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

}  // namespace tw
