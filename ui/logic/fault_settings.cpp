// The layout editor's [faults] section; see fault_settings.h.
#include "ui/logic/fault_settings.h"

#include <algorithm>

#include "core/fault_schedule.h"

namespace tw::ui {

std::string new_fault_event(const RunConfig& c) {
    const int64_t period = round_period(c);
    const int64_t at = std::max<int64_t>(1, std::min(period, c.train.steps - 1));
    const int64_t replica = std::max<int64_t>(0, c.outer.replicas - 1);
    return "kill " + std::to_string(replica) + " at " + std::to_string(at) + " rejoin " + std::to_string(at + period);
}

void remove_fault_event(RunConfig& c, size_t i) {
    auto& e = c.faults.events;
    if (i < e.size()) e.erase(e.begin() + static_cast<std::ptrdiff_t>(i));
}

std::vector<std::string> fault_event_problems(const RunConfig& c, size_t i) {
    std::vector<std::string> out;
    if (i >= c.faults.events.size()) return out;
    // The entry alone, churn off: only its own lines come back (the section-wide ones, e.g. a
    // hub topology, are shown once for the whole section from the model's errors).
    RunConfig one = c;
    one.faults.events = {c.faults.events[i]};
    one.faults.churn_mtbf_steps = 0;
    std::vector<std::string> all;
    FaultSchedule::problems(one, all);
    const std::string prefix = "faults.events \"" + c.faults.events[i] + "\": ";
    for (auto& p : all)
        if (p.rfind(prefix, 0) == 0) out.push_back(p.substr(prefix.size()));
    return out;
}

Result<std::vector<std::string>> schedule_lines(const RunConfig& c, size_t max_lines) {
    auto s = FaultSchedule::create(c);
    if (!s) return s.status();
    std::vector<std::string> out;
    const auto& events = s->events();
    for (size_t i = 0; i < events.size() && i < max_lines; ++i)
        out.push_back(events[i].text() + (events[i].churn ? " (churn)" : ""));
    if (events.size() > max_lines) out.push_back("... and " + std::to_string(events.size() - max_lines) + " more");
    return out;
}

}  // namespace tw::ui
