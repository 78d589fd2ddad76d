// The mesh's framing-only words: round agreements with their verdict, and the membership's words
// (attempts, give-ups, who is out, restarted processes); see zmq_collective.h and core/membership.h.
#include "remote/zmq_collective.h"

#include <algorithm>
#include <cstdio>

#include "remote/zmq_collective_internal.h"
#include "remote/wire_frame.h"

namespace tw {

using namespace zmq_mesh;

Result<std::vector<uint64_t>> ZmqCollective::gather_words(const std::vector<int>& group, uint64_t word) {
    using R = Result<std::vector<uint64_t>>;
    if (Status st = check_group(group, size(), rank_); !st) return st;
    try {
        const uint64_t round = round_++;
        uint8_t header[wire::kFrameHeaderBytes];
        encode_word_header(wire::FrameKind::kAgree, round, word, header);
        static const std::vector<uint8_t> kEmpty;
        for (int r : group)
            if (r != rank_)
                if (Status st = send_frame(r, header, kEmpty); !st) return st;
        auto missing = [&] { return awaited_members(group, rank_, s_->early_hashes[round]); };
        const auto wait_start = Clock::now();
        while (!missing().empty())
            if (Status st = pump_until("agreement round " + std::to_string(round), missing, wait_start, -1); !st) return st;
        std::map<int, uint64_t> words = std::move(s_->early_hashes[round]);
        s_->early_hashes.erase(round);
        s_->early.erase(round);
        s_->early_clocks.erase(round);
        words[rank_] = word;
        gathered_ = std::max(gathered_, round + 1);
        std::vector<uint64_t> out;
        for (int r : group) out.push_back(words[r]);
        return out;
    } catch (const zmq::error_t& e) {
        return R::error(std::string("collective: ") + e.what());
    }
}

Status ZmqCollective::agree(const std::vector<int>& group, uint64_t state_hash) {
    const uint64_t round = round_;  // gather_words takes it
    auto& commits = s_->commits;
    commits.erase(commits.begin(), commits.lower_bound(round));
    auto got = gather_words(group, state_hash);
    if (!got) {
        // A member was lost while the hashes went round. It sent its hash to some peers and not to
        // others, so a peer that heard every hash may have taken the round and gone on: this member
        // holds the same state (every payload was in before any hash left), so it takes the round
        // too instead of redoing it alone — which would leave the two waiting in different rounds.
        auto taken = await_verdict(group, round, state_hash);
        if (!taken) return taken.status();
        if (!*taken) return got.status();
        if (opts_.on_event)
            opts_.on_event("round-taken", "agreement round " + std::to_string(round) +
                                              ": a peer heard every hash and took the round (" + got.message() +
                                              "); this member holds the same state and takes it too");
        return Status::ok();
    }
    std::map<uint64_t, int> votes;
    for (uint64_t h : *got) votes[h] += 1;
    if (votes.size() == 1) {
        post_word(wire::FrameKind::kCommit, round, state_hash, group, /*to_lost=*/false);
        return Status::ok();
    }
    // The majority's hash when there is a strict one, otherwise this member's own.
    uint64_t ref = state_hash;
    for (auto& [h, n] : votes)
        if (2 * n > static_cast<int>(group.size())) ref = h;
    std::string who;
    for (size_t i = 0; i < group.size(); ++i)
        if ((*got)[i] != ref) who += (who.empty() ? "" : ", ") + member(group[i]);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(ref));
    return Status::error("round hash mismatch after round " + std::to_string(round) + ": " + who +
                         " holds a state that differs from " + buf + " (the others')");
}

void ZmqCollective::encode_word_header(wire::FrameKind kind, uint64_t round, uint64_t aux, uint8_t* out) const {
    wire::FrameHeader fh;
    fh.kind = kind;
    fh.counted = false;
    fh.rank = static_cast<uint16_t>(rank_);
    fh.round = round;
    fh.token = opts_.token;
    fh.aux = aux;
    wire::encode_frame_header(fh, out);
}

void ZmqCollective::post_word(wire::FrameKind kind, uint64_t round, uint64_t aux, const std::vector<int>& peers,
                              bool to_lost) {
    uint8_t h[wire::kFrameHeaderBytes];
    encode_word_header(kind, round, aux, h);
    for (int r : peers)
        if (r != rank_ && r >= 0 && r < size() && (to_lost || !members_->is_lost(r))) post(r, h);
}

Result<bool> ZmqCollective::await_verdict(const std::vector<int>& group, uint64_t round, uint64_t state_hash) {
    auto& s = *s_;
    bool any_lost = false;
    for (int r : group) any_lost = any_lost || (r != rank_ && members_->is_lost(r));
    if (!any_lost || (abort_ && abort_())) return false;
    // This member's word first: peers in the same place wait for it as it waits for theirs.
    abandon(group);
    const auto taken_by = [&]() -> int {
        if (auto c = s.commits.find(round); c != s.commits.end())
            for (auto& [from, h] : c->second)
                if (h == state_hash) return from;
        return -1;
    };
    const auto undecided = [&] {
        std::vector<int> out;
        const auto c = s.commits.find(round);
        for (int r : group) {
            if (r == rank_ || members_->is_lost(r) || members_->said_bye(r) || gave_up(r)) continue;
            if (c != s.commits.end() && c->second.count(r)) continue;
            out.push_back(r);
        }
        return out;
    };
    const auto wait_start = Clock::now();
    try {
        for (;;) {
            if (taken_by() >= 0) return true;
            if (auto c = s.commits.find(round); c != s.commits.end() && !c->second.empty()) {
                const auto& [from, h] = *c->second.begin();
                char buf[64];
                std::snprintf(buf, sizeof buf, "%016llx, this member's %016llx", static_cast<unsigned long long>(h),
                              static_cast<unsigned long long>(state_hash));
                return Result<bool>::error("round hash mismatch after round " + std::to_string(round) + ": " + member(from) +
                                     " took the round with hash " + buf);
            }
            const auto open = undecided();
            if (open.empty()) return false;
            // Each open peer decides promptly: it took the round (its commit is on the way) or it
            // misses the lost member's hash too and gives the attempt up. Its loss ends the wait.
            if (Status st = pump_until("the verdict of agreement round " + std::to_string(round),
                                       [&open] { return open; }, wait_start, 100);
                !st) {
                if (abort_ && abort_()) return false;
                if (since_s(wait_start) * 1000 > opts_.timeout_ms) return false;
            }
        }
    } catch (const zmq::error_t&) {
        return false;
    }
}

std::vector<int> ZmqCollective::lost_members() const { return members_->lost_members(); }

void ZmqCollective::begin_epoch(uint64_t epoch) {
    auto& s = *s_;
    const uint64_t base = epoch * kEpochRounds;
    members_->begin_epoch(base);
    round_ = base;
    gathered_ = base;
    const auto erase_before = [base](auto& m) { m.erase(m.begin(), m.lower_bound(base)); };
    erase_before(s.early);
    erase_before(s.early_clocks);
    erase_before(s.early_starts);
    erase_before(s.early_hashes);
    erase_before(s.commits);
    for (auto& [from, q] : s.p2p)
        q.erase(std::remove_if(q.begin(), q.end(), [base](const Sockets::Message& m) { return m.epoch_base < base; }),
                q.end());
}

void ZmqCollective::abandon(const std::vector<int>& peers) {
    post_word(wire::FrameKind::kAbandon, members_->epoch_base(), members_->lost_mask(), peers, /*to_lost=*/false);
}

bool ZmqCollective::gave_up(int r) const { return members_->gave_up(r); }

void ZmqCollective::tell_out(const std::vector<int>& peers) {
    uint64_t mask = members_->lost_mask();
    for (int r : peers)
        if (r >= 0 && r < 64 && r != rank_) mask |= uint64_t{1} << r;
    post_word(wire::FrameKind::kAbandon, members_->epoch_base(), mask, peers, /*to_lost=*/true);
}

bool ZmqCollective::counted_out() const { return members_->counted_out(); }

void ZmqCollective::tell_ready(int peer, uint64_t step) {
    // A relayed member asks a reachable one for state only once that member's outbox has welcomed
    // its newest connection: the answer then cannot go to a connection of an earlier process or
    // line that the outbox has not yet seen close. A few heartbeat timeouts at most; a peer that
    // never welcomes is counted lost by the waits that follow.
    if (relayed_ && peer >= 0 && static_cast<size_t>(peer) < s_->inbox.size() && s_->inbox[static_cast<size_t>(peer)]) {
        const auto start = Clock::now();
        const double limit_s = std::max(10.0, 3 * opts_.silence_timeout_s);
        try {
            while (!s_->welcomed[static_cast<size_t>(peer)] && since_s(start) < limit_s && !(abort_ && abort_()))
                (void)pump_until("the welcome of rank " + std::to_string(peer) + "'s outbox",
                                 [] { return std::vector<int>{}; }, Clock::now(), 100);
        } catch (const zmq::error_t&) {
        }
    }
    post_word(wire::FrameKind::kReady, 0, step, {peer}, /*to_lost=*/true);
}

Status ZmqCollective::wait_ready(int peer, uint64_t step) {
    if (peer == rank_ || peer < 0 || peer >= size())
        return Status::error("collective: no member " + std::to_string(peer) + " to wait for");
    const auto wait_start = Clock::now();
    const std::string what = "the word of rank " + std::to_string(peer) + " that it waits for the state after step " +
                             std::to_string(step);
    try {
        for (;;) {
            if (members_->ready_step(peer) == step) return Status::ok();
            if (Status st = pump_until(what, [peer] { return std::vector<int>{peer}; }, wait_start, 100, /*backstop=*/false);
                !st)
                return st;
        }
    } catch (const zmq::error_t& e) {
        return Status::error(std::string("collective: ") + e.what());
    }
}

bool ZmqCollective::heard_live(int r) {
    if (r == rank_ || r < 0 || r >= size()) return false;
    try {
        // What has arrived so far, about a millisecond's wait at most once the socket is drained
        // (silence is judged by the waits, not here).
        for (int i = 0; i < 100000; ++i) {
            const uint64_t before = s_->taken;
            if (Status st = pump_until("the restarted members' words", [] { return std::vector<int>{}; }, Clock::now(), 1); !st)
                return false;
            if (s_->taken == before) break;
        }
    } catch (const zmq::error_t&) {
        return false;
    }
    return members_->ready_step(r) == kReadyLive;
}

void ZmqCollective::go_quiet(bool restarting) {
    if (!s_ || !s_->pull) return;
    // A bye that names the restart: peers give the fresh process time to start (mesh_membership.h).
    if (restarting) post_word(wire::FrameKind::kBye, 0, MeshMembership::kByeRestarting, all_ranks(), /*to_lost=*/true);
    // Closing the data port drops the peers' connections: what they send from now on waits in
    // their own queues and reaches the process that binds this endpoint next.
    s_->pull_log.reset();  // it watches the socket
    s_->pull.close();
    s_->inbox.clear();  // and the outboxes dialled: what they hold for this member waits for the next process
}

void ZmqCollective::declare_lost(int r) {
    members_->declare_lost(r);
}

void ZmqCollective::forgive(int r) {
    members_->forgive(r, Clock::now());
}

}  // namespace tw
