// The membership state of one mesh member (core/membership.h), apart from the sockets: when it
// last heard each peer, which peers said bye and how, which gave up which attempt, whom it counts
// lost, whether a peer counted it out, and the words of restarted processes. ZmqCollective feeds
// it every frame it reads and asks it, on every pass of a wait, whether an awaited member is out;
// the rules of who is in a round live here and nowhere else:
//
//   * Silence counts only time this process ran: a pause of its own (own_pause) moves every peer's
//     last-heard time past the gap, so a process woken from SIGSTOP does not find everyone lost.
//   * Whom a peer's abandon word names lost is taken only from a member still counted in, about the
//     current attempt or a later one (fencing): a member counted lost here, or a word of an attempt
//     already given up, changes nobody's membership. Being named out oneself always counts.
//   * A process admitted after a restart ignores abandon words of attempts before its admission:
//     they told its predecessor, or its absence, out.
//   * A member whose process is killed to be replaced by a fresh one (a scheduled kill with a
//     rejoin) says so in its bye; for kRestartAllowanceS after that word its silence does not make
//     it lost: the fresh process loads its libraries, data and model before it can say anything,
//     which on a loaded machine takes longer than a heartbeat timeout.
//
// Ranks are mesh ranks 0..members−1; masks are 64-bit (ranks ≥ 64 are never named in a word).
// Not thread-safe: the transport's one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace tw {

class MeshMembership {
public:
    using Clock = std::chrono::steady_clock;
    // What a bye frame says (its aux): the member's run ended, or it was stopped on request.
    static constexpr uint64_t kByeEnded = 0, kByeStopped = 1, kByeRestarting = 2;
    // How long a restarting member's silence is excused (s): longer than a coordinator waits for a
    // node's answer (20 s, remote/coordinator.h), so that a fresh process that never comes up is
    // named by the coordinator that started it.
    static constexpr double kRestartAllowanceS = 30;

    // `silence_timeout_s` ≤ 0: silence never makes a member lost.
    MeshMembership(int members, int rank, double silence_timeout_s, Clock::time_point now);

    // ---- words from peers (already checked: a member of the run, not this one) ----
    // Any frame from `from`: it is alive now.
    void heard(int from, Clock::time_point now);
    // An abandon word for the attempt beginning at round `round`, naming the members in `mask` lost.
    void on_abandon(int from, uint64_t round, uint64_t mask);
    void on_ready(int from, uint64_t step);
    void on_bye(int from, uint64_t said, Clock::time_point now);

    // ---- waits ----
    // Why an awaited member is out of a wait that began at `wait_start`, or kIn. kLeft and kSilent
    // count the member lost from now on; a member that was stopped on request (its bye) is kStopping
    // for a silence timeout — this member's own stop is on its way — and kLeft after.
    enum class Out { kIn, kLost, kGaveUp, kStopping, kLeft, kSilent };
    Out check(int r, Clock::time_point wait_start, Clock::time_point now, double* silent_s = nullptr);
    // This process did not run for `gap` (found by the transport's waits): peers' silence is counted
    // from when it ran again.
    void own_pause(Clock::duration gap, Clock::time_point now);

    // ---- attempts ----
    // Starts the attempt whose first round is `base` (> every earlier one). A process awaiting
    // admission is admitted by it: no longer counted out, and earlier abandon words are ignored.
    void begin_epoch(uint64_t base);
    uint64_t epoch_base() const { return epoch_base_; }  // 0 = no attempt yet
    void await_admission() { awaiting_admission_ = true; }
    bool awaiting_admission() const { return awaiting_admission_; }

    // ---- what this member holds ----
    bool is_lost(int r) const { return lost_.count(r) > 0; }
    std::vector<int> lost_members() const { return {lost_.begin(), lost_.end()}; }
    uint64_t lost_mask() const;  // the lost members below 64, as a word names them
    void declare_lost(int r);    // ignored for this member and ranks out of range
    bool gave_up(int r) const;   // r's abandon word for the current attempt has arrived
    bool counted_out() const { return counted_out_; }
    bool said_bye(int r) const { return bye_.count(r) > 0; }
    std::optional<uint64_t> ready_step(int r) const;
    // r is back as a new incarnation: not lost, no bye, no give-up, no word, heard now.
    void forgive(int r, Clock::time_point now);
    // Abandon words whose names were refused (from a fenced member or a given-up attempt).
    uint64_t fenced() const { return fenced_; }

private:
    int members_ = 0, rank_ = 0;
    double silence_timeout_s_ = 0;
    std::vector<Clock::time_point> heard_;   // per member: last frame of any kind
    std::map<int, uint64_t> bye_;            // members whose run ended → what they said
    std::vector<Clock::time_point> bye_at_;
    std::map<int, Clock::time_point> restarting_until_;  // members whose silence is excused until then
    std::set<int> lost_;
    std::map<int, uint64_t> abandoned_;      // members that gave up an attempt → its first round
    bool counted_out_ = false;               // a peer's abandon word named this member
    std::map<int, uint64_t> ready_;          // joiners' words → the step they wait after
    uint64_t epoch_base_ = 0;
    bool awaiting_admission_ = false;
    uint64_t admitted_from_ = 0;  // a restarted process's first attempt after admission; else 0
    uint64_t fenced_ = 0;
};

}  // namespace tw
