// The what-if replays (run_cache.h retime_run) on background tasks, so no frame waits for one: a
// long run re-timed for other hardware copies and replays every node's trace, tens of
// milliseconds and more. The Bytes and time panel and the plots ask for the same (run, what-if)
// and share one replay.
//
// Not thread-safe: call from the UI thread only. Each replay runs on its own thread that holds the
// run's snapshot (a shared_ptr), so dropping an entry never waits for it; finished threads are
// joined on later calls, and the destructor waits for the ones still running (at exit only).
#pragma once

#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ui/data/run_cache.h"

namespace tw::ui {

class RetimeTasks {
public:
    RetimeTasks() = default;
    RetimeTasks(const RetimeTasks&) = delete;
    RetimeTasks& operator=(const RetimeTasks&) = delete;
    ~RetimeTasks();

    // The replay of `data` (run `id`'s snapshot) for `w` (an empty WhatIf: the run's own network and
    // compute): nullptr while it runs — the first call starts it — then the result, the same object
    // until the snapshot or the what-if changes. A new snapshot of the run (a running run is reloaded
    // every second) starts a new replay.
    std::shared_ptr<const Result<RetimedRun>> get(int64_t id, const std::shared_ptr<const RunData>& data, const WhatIf& w);
    // Forgets the replays of runs not in `keep` (runs no longer overlaid).
    template <class Set>
    void keep_only(const Set& keep) {
        for (auto it = entries_.begin(); it != entries_.end();)
            it = keep.count(it->first.first) ? std::next(it) : entries_.erase(it);
    }

private:
    struct Entry {
        std::shared_ptr<const RunData> data;
        WhatIf what_if;
        std::shared_future<std::shared_ptr<const Result<RetimedRun>>> pending;  // Future
        std::shared_ptr<const Result<RetimedRun>> done;
    };
    using Future = std::shared_future<std::shared_ptr<const Result<RetimedRun>>>;
    std::map<std::pair<int64_t, std::string>, Entry> entries_;  // (run, what-if label) → replay
    std::vector<std::pair<Future, std::thread>> workers_;         // replays started, until joined
};

}  // namespace tw::ui
