// What the source files of ZmqCollective share (zmq_collective.cpp: the mesh, its waits and
// point-to-point messages; zmq_collective_words.cpp: agreements and membership words;
// zmq_collective_hub.cpp: the hub round): the buffers of received frames and a few helpers.
// Internal to remote/: nothing outside those files includes it. One thread, the transport's.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "remote/curve.h"
#include "remote/disconnect_log.h"
#include "remote/poll.h"
#include "remote/zmq_collective.h"

namespace tw::zmq_mesh {

using Clock = std::chrono::steady_clock;
inline double since_s(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Rounds further ahead than this are not buffered: no honest member runs that far ahead.
constexpr uint64_t kRoundWindow = 1024;
// Rounds a process awaiting admission keeps beyond the window (await_admission): its peers' next round
// has a few (a gather, an agreement, the payloads), so this is room for a few attempts of it.
constexpr size_t kAdmissionRounds = 64;
// A wait's passes are at most ~100 ms apart; a gap ten times that is a pause of this process.
constexpr std::chrono::milliseconds kOwnPause{1000};

// Wall-clock time in ns since the Unix epoch: comparable between the processes of one machine
// and, as far as their clocks are synchronised, between machines.
inline uint64_t wall_ns() {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

inline bool is_stream_transport(const std::string& ep) { return ep.rfind("inproc://", 0) != 0; }

// A PUSH to `endpoint`, a CURVE client of `peer_key` when this member has keys and the key is not
// "" (an outbox's inproc pipe has none).
inline zmq::socket_t make_push(zmq::context_t& ctx, const MeshOptions& o, const std::string& endpoint,
                               const std::string& peer_key, int sndtimeo_ms) {
    zmq::socket_t p(ctx, zmq::socket_type::push);
    p.set(zmq::sockopt::sndtimeo, sndtimeo_ms);
    if (!o.public_key.empty() && !peer_key.empty()) curve_client(p, {o.public_key, o.secret_key}, peer_key);
    p.connect(endpoint);
    return p;
}

// Ascending ranks below n, this member among them.
inline Status check_group(const std::vector<int>& group, int n, int rank) {
    bool mine = false;
    for (size_t i = 0; i < group.size(); ++i) {
        if (group[i] < 0 || group[i] >= n || (i > 0 && group[i] <= group[i - 1]))
            return Status::error("collective: group must hold ascending ranks below " + std::to_string(n));
        mine = mine || group[i] == rank;
    }
    if (!mine) return Status::error("collective: rank " + std::to_string(rank) + " is not in its own group");
    return Status::ok();
}

// The members of `group` other than `rank` that `got` (a map keyed by rank: the round's payloads or
// words heard so far) does not hold yet, in the group's order: what a round still waits for.
template <class Map>
std::vector<int> awaited_members(const std::vector<int>& group, int rank, const Map& got) {
    std::vector<int> out;
    for (int r : group)
        if (r != rank && !got.count(r)) out.push_back(r);
    return out;
}

}  // namespace tw::zmq_mesh

namespace tw {

struct ZmqCollective::Sockets {
    zmq::socket_t pull;
    std::unique_ptr<DisconnectLog> pull_log;  // tcp/ipc with a frame limit: dropped connections
    std::vector<zmq::socket_t> push;  // indexed by rank; own slot unused
    // A relayed member's DEALERs to the reachable members' outboxes, indexed by rank; empty slots
    // for itself and the other relayed members (empty vector when this member is reachable).
    std::vector<zmq::socket_t> inbox;
    std::vector<bool> welcomed;  // by rank: the outbox of that member welcomed the newest inbox connection
    size_t next_source = 0;      // poll_data's turn

    // The rank whose outbox `from` is connected to; −1 for the data port (or anything else).
    int inbox_owner(const zmq::socket_t* from) const {
        for (size_t r = 0; r < inbox.size(); ++r)
            if (&inbox[r] == from) return static_cast<int>(r);
        return -1;
    }

    // A relayed member's wait: polls the data port and the outboxes it dialled (sockets closed are
    // skipped) for up to `timeout_ms`; the socket to read next, or null when none has a message. The
    // first one looked at turns with each call, so that no source is starved by a busy other.
    zmq::socket_t* poll_data(int timeout_ms) {
        std::vector<zmq::socket_t*> socks;
        if (pull) socks.push_back(&pull);
        for (auto& d : inbox)
            if (d) socks.push_back(&d);
        if (socks.empty()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
            return nullptr;
        }
        std::vector<zmq::pollitem_t> items;
        for (auto* z : socks) items.push_back({z->handle(), 0, ZMQ_POLLIN, 0});
        if (poll_items(items, timeout_ms) <= 0) return nullptr;
        const size_t first = next_source++ % socks.size();
        for (size_t i = 0; i < socks.size(); ++i) {
            const size_t j = (first + i) % socks.size();
            if (items[j].revents & ZMQ_POLLIN) return socks[j];
        }
        return nullptr;
    }
    std::map<uint64_t, std::map<int, std::vector<uint8_t>>> early;  // payloads of rounds not yet gathered
    std::map<uint64_t, std::map<int, double>> early_clocks;
    std::map<uint64_t, std::map<int, uint64_t>> early_starts;        // senders' wall_ns() at their round's start
    std::map<uint64_t, std::map<int, uint64_t>> early_hashes;        // agreement rounds
    std::map<uint64_t, std::map<int, uint64_t>> commits;  // agreement rounds peers took (kCommit) → their hash
    struct Message {
        std::vector<uint8_t> payload;
        double clock_s;
        uint64_t epoch_base;  // the sender's attempt (begin_epoch), for discarding a failed attempt's messages
    };
    std::map<int, std::deque<Message>> p2p;  // point-to-point messages not yet received, per sender
    uint64_t taken = 0;                      // messages read off the socket (heard_live drains until none)
};

}  // namespace tw
