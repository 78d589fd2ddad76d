// Failures as an experiment variable ([faults], docs/faults.md): the config's events and its seeded
// churn, expanded into one list and answered by round. Pure data, no LibTorch; every function is
// const and thread-safe.
//
// Events (faults.events, one per string; R a replica, S and T steps, K a factor > 0):
//   "kill R at S rejoin T"        R's worker stops after step S, its state gone; a fresh one rejoins
//   "disconnect R at S rejoin T"  R is cut off after step S; it trains on alone and rejoins
//   "pause R at S until T"        R stalls after step S for T − S steps' worth of its own compute time
//   "slow R at S until T x K"     R's steps S+1..T take K times their time
// "rejoin T" may be left out (R stays away). A replica that is down takes part in no round after
// step S; it rejoins at the first round boundary at or after T (a multiple of round_period, the
// algorithm's round schedule in core/algorithm.h), after that round, receiving the state from a
// live peer (docs/faults.md "Rejoin"). So membership is a function of the round, the same on every
// node, and scheduled runs stay deterministic.
//
// Churn (faults.churn.*): for each replica in turn, failures at exponential gaps of mean
// mtbf_steps (at least one step), each a kill that rejoins down_steps later, drawn from a
// generator of its own (mt19937_64 seeded with churn.seed and the replica; the gap from the top 53
// bits, so every platform draws the same steps). A failure that would leave fewer than
// cluster.min_replicas replicas in some round is skipped: churn never ends a run by itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/algorithm.h"  // round_period: the algorithm's round schedule
#include "core/config.h"
#include "core/status.h"

namespace tw {

// The event a node of a child-process run sends when it reaches a scheduled `kill` and waits for
// its coordinator to kill it (coordinator/scheduled_kills.h): its text is the kill's index in the
// schedule (FaultSchedule::index_of), nothing else. The "fault" event beside it is for people.
inline constexpr const char* kProcessKillEvent = "process-kill";

enum class FaultKind : uint8_t { kKill, kDisconnect, kPause, kSlow };
const char* to_string(FaultKind k);

struct FaultEvent {
    FaultKind kind = FaultKind::kKill;
    int replica = 0;
    int64_t at_step = 0;     // S: after this step
    int64_t until_step = 0;  // T: rejoin (kill, disconnect; 0 = never) or end (pause, slow)
    double factor = 1;       // slow: compute × factor
    bool churn = false;      // drawn by the churn, not written in the config
    std::string text() const;  // as the config would write it
    // The texts of the events a worker stores when a pause or a slow-down begins, the same on every
    // kind of node: "<entry>[ (churn)]: stalls for S simulated s" / ": its steps take Kx their time".
    std::string stall_text(double stall_s) const;
    std::string slow_text() const;
};

class FaultSchedule {
public:
    // Parses cfg.faults and expands its churn. Errors name the entry and what is wrong.
    static Result<FaultSchedule> create(const RunConfig& cfg);
    // The problems of cfg.faults (and of the run kind it is used with), for validate_config.
    static void problems(const RunConfig& cfg, std::vector<std::string>& out);

    const std::vector<FaultEvent>& events() const { return events_; }
    // The index in events() of `e`, one of this schedule's events. The coordinator and every node
    // expand the same schedule from the same config, so an index names the same entry on each.
    size_t index_of(const FaultEvent& e) const { return static_cast<size_t>(&e - events_.data()); }
    bool empty() const { return events_.empty(); }
    // Whether replica r takes part in the round at step `round_step` (a multiple of the period).
    bool in_round(int r, int64_t round_step) const;
    // How many round boundaries after step `from` up to `to` (every `period` steps) replica r took
    // part in: a process restarted after a kill counts its outer steps on from the killed one's.
    int64_t rounds_taken(int r, int64_t from, int64_t to, int64_t period) const;
    // The replicas taking part in that round, ascending.
    std::vector<int> members(int64_t round_step) const;
    // The down event (kill or disconnect) that replica r is in after step `step`, or nullptr.
    const FaultEvent* down_at(int r, int64_t step) const;
    // Whether replica r is killed for good by step `step` (no rejoin within the run): its place is
    // free for a spare (cluster.spares).
    bool gone_for_good(int r, int64_t step) const;
    // The round after which a replica down by `e` rejoins (its boundary ≥ until_step); −1 = never
    // within the run's steps.
    int64_t rejoin_round(const FaultEvent& e) const;
    // The replicas that rejoin after the round at `round_step` (down until then, in it from the next).
    std::vector<int> rejoining(int64_t round_step) const;
    // The events that start right after step `step` for replica r.
    std::vector<const FaultEvent*> starting(int r, int64_t step) const;
    // The compute factor of replica r's step `step` (slow), 1 when none.
    double compute_factor(int r, int64_t step) const;

private:
    std::vector<FaultEvent> events_;  // sorted by (at_step, replica)
    int64_t period_ = 1, steps_ = 0;
    int replicas_ = 1;
};

}  // namespace tw
