// Plan: the layout in the editor planned before it runs — per node its step, rounds, bytes per
// round and in all, compute and exposed communication per round and in all, utilisation, and the
// simulated wall-clock — from the planner `thinwire plan` uses (through RunDriver::plan), or the
// planner's refusal / the layout's errors as text. The planner runs on a background task whenever
// the layout's TOML changes (one at a time; a change during a plan starts the next when it ends),
// so a frame never waits for it. Layouts of many steps × replicas (the planner keeps per-step
// traces) are planned only when asked, with a button.
#pragma once

#include <chrono>
#include <future>
#include <optional>
#include <string>

#include "ui/layout_plan.h"
#include "ui/logic/layout_model.h"
#include "ui/run_driver.h"

namespace tw::ui {

class PlanPanel {
public:
    void draw(const RunDriver& driver, const LayoutModel& layout);

private:
    void start(const RunDriver& driver, const RunConfig& cfg, const std::string& toml);
    void draw_plan(const LayoutPlan& p) const;

    std::string toml_;          // the layout the shown (or pending) plan is of
    std::string pending_toml_;  // the layout being planned
    std::future<Result<LayoutPlan>> pending_;
    std::chrono::steady_clock::time_point started_;
    std::optional<Result<LayoutPlan>> shown_;
    double took_ms_ = 0;
};

}  // namespace tw::ui
