// The hub topology's round through the relay, read alongside the data plane; see zmq_collective.h.
#include "remote/zmq_collective.h"

#include "remote/hub_relay.h"

#include "remote/zmq_collective_internal.h"
#include "remote/wire_frame.h"

namespace tw {

using namespace zmq_mesh;

Result<std::vector<std::vector<uint8_t>>> ZmqCollective::hub_round(const std::vector<uint8_t>& mine,
                                                                    double sim_clock_s, std::vector<double>* clocks) {
    return hub_round_among(all_ranks(), mine, sim_clock_s, clocks);
}

Result<std::vector<std::vector<uint8_t>>> ZmqCollective::hub_round_among(const std::vector<int>& members,
                                                                          const std::vector<uint8_t>& mine,
                                                                          double sim_clock_s,
                                                                          std::vector<double>* clocks) {
    using R = Result<std::vector<std::vector<uint8_t>>>;
    if (opts_.hub_endpoint.empty()) return R::error("hub: this member's role names no relay");
    if (Status st = check_group(members, size(), rank_); !st) return st;
    if (members.back() >= kMaxHubMembers)
        return R::error("hub: a round names its members in a 64-bit mask; rank " + std::to_string(members.back()) +
                        " is beyond it");
    if (!hub_) {
        HubClientOptions ho;
        ho.endpoint = opts_.hub_endpoint;
        ho.rank = rank_;
        ho.members = size();
        ho.token = opts_.token;
        if (!opts_.public_key.empty()) ho.own = {opts_.public_key, opts_.secret_key};
        ho.relay_key = opts_.hub_key;
        auto c = HubClient::connect(ctx_, std::move(ho));
        if (!c) return c.status();
        hub_ = std::move(c).value();
    }
    uint64_t mask = 0;
    for (int r : members) mask |= uint64_t{1} << r;
    // The round's bytes move from the client's counters to this transport's as they are sent and
    // received: an upload of an attempt given up counts, as a mesh round's sends do.
    ByteCounters before = hub_->counters();
    auto absorb = [&] {
        const ByteCounters& now = hub_->counters();
        for (int k = 0; k < 3; ++k) {
            counters_.sent_bytes[k] += now.sent_bytes[k] - before.sent_bytes[k];
            counters_.recv_bytes[k] += now.recv_bytes[k] - before.recv_bytes[k];
            counters_.sent_msgs[k] += now.sent_msgs[k] - before.sent_msgs[k];
            counters_.recv_msgs[k] += now.recv_msgs[k] - before.recv_msgs[k];
        }
        before = now;
    };
    const uint64_t round = round_++;
    const std::string what = "hub round " + std::to_string(round);
    std::vector<int> others;
    for (int r : members)
        if (r != rank_) others.push_back(r);
    const auto awaited = [&others] { return others; };
    try {
        const auto wait_start = Clock::now();
        Status up = hub_->begin_round(round, mask, mine, sim_clock_s, opts_.timeout_ms, abort_);
        absorb();
        if (!up) return up;
        // The relay's answer, or a member of the round lost or giving up: whichever comes first.
        // A round the relay gave up (a member moved on without it) waits on the data plane for
        // that member's abandon frame, which names whom it found lost.
        std::string given_up;
        for (;;) {
            if (given_up.empty()) {
                auto p = hub_->poll_round(10, clocks);
                if (!p) return p.status();
                if (p->state == HubPoll::kDone) {
                    absorb();
                    return std::move(p->all);
                }
                if (p->state == HubPoll::kGivenUp) given_up = p->why;
            }
            if (Status st = pump_until(what, awaited, wait_start, given_up.empty() ? 10 : 20); !st)
                return given_up.empty() ? st : Status::error(st.message() + "; " + given_up);
        }
    } catch (const zmq::error_t& e) {
        return R::error(std::string("hub: ") + e.what());
    }
}

}  // namespace tw
