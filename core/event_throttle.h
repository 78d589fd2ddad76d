// Rate limit for repeated events: a flood of junk frames or refused connections must not become
// one stored row and one printed line each. Per (node, kind), the first `burst` events of a window
// pass as they are; later ones in the window are only counted, and when the window has passed one
// summary event says how many there were and quotes the last. Events of any other (node, kind) are
// unaffected, so a rare event (a lost node, the run's end) is never held back by a flood.
// Pure bookkeeping on a caller-supplied clock (seconds); not thread-safe (one owner).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/metrics.h"

namespace tw {

class EventThrottle {
public:
    // `window_s` > 0: the length of a window in seconds; `burst` ≥ 1: events passed per window.
    explicit EventThrottle(double window_s = 10.0, int burst = 5) : window_s_(window_s), burst_(burst) {}

    // The events to keep now for `e` arriving at `now_s`: `e` itself while its (node, kind) is
    // within its burst, nothing while it is over it; preceded by the summary of that key's
    // previous window when one ended with events held back.
    std::vector<EventRecord> admit(const EventRecord& e, double now_s);
    // Summaries of every window that has ended by `now_s` with events held back (call it now and
    // then, and with a large `now_s` at the end of a run, so no count is lost).
    std::vector<EventRecord> flush(double now_s);
    // Events held back so far, in all (the summaries count them; this is their total).
    uint64_t held_back() const { return held_total_; }

private:
    struct Window {
        double start_s = 0;
        int passed = 0;
        uint64_t held = 0;
        EventRecord last;  // the last event held back
    };
    EventRecord summary(const std::pair<std::string, std::string>& key, const Window& w) const;

    double window_s_;
    int burst_;
    std::map<std::pair<std::string, std::string>, Window> windows_;  // by (node, kind)
    uint64_t held_total_ = 0;
};

}  // namespace tw
