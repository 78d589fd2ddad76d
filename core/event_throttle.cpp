// See event_throttle.h.
#include "core/event_throttle.h"

#include <cstdio>

namespace tw {

EventRecord EventThrottle::summary(const std::pair<std::string, std::string>& key, const Window& w) const {
    EventRecord s = w.last;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f", window_s_);
    s.text = std::to_string(w.held) + " more \"" + key.second + "\" event" + (w.held == 1 ? "" : "s") + " from " +
             key.first + " within " + buf + " s, not stored one by one; the last: " + w.last.text;
    return s;
}

std::vector<EventRecord> EventThrottle::admit(const EventRecord& e, double now_s) {
    std::vector<EventRecord> out;
    const auto key = std::make_pair(e.node, e.kind);
    auto [it, fresh] = windows_.try_emplace(key);
    Window& w = it->second;
    if (fresh) w.start_s = now_s;
    if (now_s - w.start_s >= window_s_) {
        if (w.held > 0) out.push_back(summary(key, w));
        w = Window{};
        w.start_s = now_s;
    }
    if (w.passed < burst_) {
        ++w.passed;
        out.push_back(e);
    } else {
        ++w.held;
        ++held_total_;
        w.last = e;
    }
    return out;
}

std::vector<EventRecord> EventThrottle::flush(double now_s) {
    std::vector<EventRecord> out;
    for (auto it = windows_.begin(); it != windows_.end();) {
        Window& w = it->second;
        if (now_s - w.start_s < window_s_) {
            ++it;
            continue;
        }
        if (w.held > 0) out.push_back(summary(it->first, w));
        it = windows_.erase(it);  // a key quiet for a whole window starts afresh
    }
    return out;
}

}  // namespace tw
