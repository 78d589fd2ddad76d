// Fault events on the plots; see fault_events.h.
#include "ui/logic/fault_events.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace tw::ui {
namespace {

// The number that starts at `pos` of `s`, or -1 (no digit there, or too long to be a step).
int64_t number_at(const std::string& s, size_t pos) {
    size_t end = pos;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
    if (end == pos || end - pos > 15) return -1;
    return std::stoll(s.substr(pos, end - pos));
}

}  // namespace

const std::vector<std::string>& fault_kinds() {
    static const std::vector<std::string> kinds = {"fault", "node-lost", "member-lost", "rejoin",
                                                   "recovery", "late", "members", "spare", "leave"};
    return kinds;
}

int fault_kind_index(const std::string& kind) {
    const auto& k = fault_kinds();
    const auto it = std::find(k.begin(), k.end(), kind);
    return it == k.end() ? -1 : static_cast<int>(it - k.begin());
}

int64_t step_named(const EventRecord& e) {
    // A scheduled fault's text starts with its schedule entry, "KIND R at S ...", and may name a
    // later step after it (a disconnect: "... after the round at step 50"): S is where it happens.
    if (e.kind == "fault") {
        static const std::string kAt = " at ";
        const size_t p = e.text.find(kAt);
        return p == std::string::npos ? -1 : number_at(e.text, p + kAt.size());
    }
    static const std::string kAtStep = "at step ";
    const size_t p = e.text.find(kAtStep);
    return p == std::string::npos ? -1 : number_at(e.text, p + kAtStep.size());
}

namespace {

// The index of the value of `v` (the first n, non-decreasing) nearest `t`, the earlier on a tie.
size_t nearest(const std::vector<double>& v, size_t n, double t) {
    const auto begin = v.begin(), end = v.begin() + static_cast<std::ptrdiff_t>(n);
    const size_t i = static_cast<size_t>(std::lower_bound(begin, end, t) - begin);
    if (i == 0) return 0;
    if (i == n) return n - 1;
    return t - v[i - 1] <= v[i] - t ? i - 1 : i;
}

}  // namespace

std::optional<EventPlace> place_event(const EventRecord& e, const std::vector<double>& step,
                                      const std::vector<double>& wall_s, bool same_clock) {
    const size_t n = std::min(step.size(), wall_s.size());
    if (n == 0) return std::nullopt;
    if (const int64_t s = step_named(e); s >= 0) {
        const double at = static_cast<double>(s);
        return EventPlace{nearest(step, n, at), at};
    }
    if (same_clock && e.wall_s > 0 && std::isfinite(e.wall_s)) {
        const size_t i = nearest(wall_s, n, e.wall_s);
        return EventPlace{i, step[i]};
    }
    return std::nullopt;
}

std::string short_label(const EventRecord& e) {
    if (e.kind == "fault") {
        // The schedule entry's first two words: "kill 2", "slow 1", "disconnect 3".
        size_t end = e.text.find(' ');
        if (end != std::string::npos) end = e.text.find(' ', end + 1);
        return e.text.substr(0, std::min(end, e.text.find(':')));
    }
    if (e.kind == "node-lost") return "lost " + e.node;
    if (e.kind == "member-lost") return "lost";
    if (e.kind == "recovery") return "state sent";
    if (e.kind == "spare") return e.node + " in";
    if (e.kind == "leave") return "left";
    return e.kind;  // rejoin, late, members
}

namespace {

// Whether `part` is one of the `sep`-separated parts of `joined`.
bool has_part(const std::string& joined, const std::string& part, const std::string& sep) {
    for (size_t p = 0; p <= joined.size();) {
        const size_t q = std::min(joined.find(sep, p), joined.size());
        if (joined.compare(p, q - p, part) == 0) return true;
        p = q + sep.size();
    }
    return false;
}

}  // namespace

std::vector<FaultMark> merge_marks(std::vector<FaultMark> marks) {
    // NaN first out: it would break the sort's ordering.
    marks.erase(std::remove_if(marks.begin(), marks.end(), [](const FaultMark& m) { return !std::isfinite(m.x); }),
                marks.end());
    std::stable_sort(marks.begin(), marks.end(), [](const FaultMark& a, const FaultMark& b) {
        return a.x != b.x ? a.x < b.x : a.kind < b.kind;
    });
    std::vector<FaultMark> out;
    for (FaultMark& m : marks) {
        if (out.empty() || out.back().x != m.x) {
            out.push_back(std::move(m));
            continue;
        }
        // Each label and text once: "lost" from three survivors is still one "lost".
        FaultMark& o = out.back();
        if (!has_part(o.label, m.label, ", ")) o.label += ", " + m.label;
        if (!has_part(o.text, m.text, "\n")) o.text += "\n" + m.text;
    }
    return out;
}

}  // namespace tw::ui
