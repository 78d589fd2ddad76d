// What-if replays on background tasks; see retime_tasks.h.
#include "ui/data/retime_tasks.h"

namespace tw::ui {

RetimeTasks::~RetimeTasks() {
    for (auto& [done, t] : workers_) t.join();
}

std::shared_ptr<const Result<RetimedRun>> RetimeTasks::get(int64_t id, const std::shared_ptr<const RunData>& data,
                                                           const WhatIf& w) {
    // The label names network, hardware, efficiency and peak, so equal labels are equal what-ifs
    // (operator== checks the rest); "" is the recorded replay.
    const std::string label = w.label();
    if (!label.empty() && !entries_.count({id, label}))  // one what-if per run besides the recorded replay
        for (auto it = entries_.lower_bound({id, std::string()}); it != entries_.end() && it->first.first == id;)
            it = it->first.second.empty() ? std::next(it) : entries_.erase(it);
    Entry& e = entries_[{id, label}];
    if (e.data != data || e.what_if != w) {
        e = Entry{data, w, {}, nullptr};
        // A packaged task on a thread of its own: its future's destructor does not wait, unlike
        // std::async's, so replacing an entry mid-replay never blocks the frame.
        std::packaged_task<std::shared_ptr<const Result<RetimedRun>>()> task(
            [data, w] { return std::make_shared<const Result<RetimedRun>>(retime_run(*data, w)); });
        e.pending = task.get_future().share();
        workers_.emplace_back(e.pending, std::thread(std::move(task)));
    }
    // Join the replays that have ended (instant), so threads do not pile up.
    for (auto it = workers_.begin(); it != workers_.end();) {
        if (it->first.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
            ++it;
            continue;
        }
        it->second.join();
        it = workers_.erase(it);
    }
    if (!e.done && e.pending.valid() && e.pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready)
        e.done = e.pending.get();
    return e.done;
}

}  // namespace tw::ui
