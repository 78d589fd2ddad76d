// What the workbench needs from whoever runs a layout: start it, steer it, and look at it without
// waiting. app/ implements it with the same Session the CLI uses (the coordinator library), so the
// GUI and `thinwire run` drive runs identically; ui/ stays free of LibTorch.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"
#include "core/metrics.h"
#include "core/status.h"
#include "remote/coordinator.h"
#include "ui/layout_plan.h"

namespace tw::ui {

struct DriverSnapshot {
    bool active = false;            // a session exists (running or just ended)
    bool done = true;               // it has ended (or never started)
    std::string phase = "idle";     // preparing data, starting nodes, running, paused, stopping, finished, ...
    int64_t run_id = 0;             // 0 until the run is recorded
    RunStatus status = RunStatus::kRunning;
    std::string reason;             // why it failed or was interrupted
    std::vector<NodeInfo> nodes;    // the coordinator's view: state, step, heartbeat age, capabilities
    std::vector<std::string> log;   // coordinator and node events, oldest first
};

class RunDriver {
public:
    virtual ~RunDriver() = default;
    // Starts a run of `cfg` in the background; an error if one is still running.
    virtual Status start(const RunConfig& cfg) = 0;
    virtual void pause() = 0;
    virtual void resume() = 0;
    virtual void stop() = 0;
    // Continues interrupted or failed run `id` of the store from its nodes' latest common
    // checkpoint with its stored layout (`thinwire run --resume ID`); an error if a run is still
    // in progress here, or the resume is refused (coordinator/resume_plan.h says why).
    virtual Status continue_run(int64_t id) = 0;
    // Never blocks on the network or the database.
    virtual DriverSnapshot snapshot() = 0;
    // Spawns `n` `thinwire node` processes on loopback (the "spawn" button); their endpoints.
    virtual Result<std::vector<std::string>> spawn_processes(int n) = 0;
    // The plan of `cfg` as `thinwire plan` makes it (the planner, under the flops compute model),
    // or the reason it is not planned: the layout's config errors or the planner's refusal.
    // Touches no session state, so it is safe from any thread (the Plan view calls it on a
    // background task).
    virtual Result<LayoutPlan> plan(const RunConfig& cfg) const = 0;
};

}  // namespace tw::ui
