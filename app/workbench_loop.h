// The workbench's frame loop over a GLFW window with an ImGui context (both set up by
// app/workbench_main.cpp), including the headless modes tests and the README use: a screenshot
// after N frames (and a minimum wait for live runs), a mouse placed over the plot for tooltips,
// the idle-CPU benchmark; an interactive window sleeps while nothing changes. Runs on the main thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

struct GLFWwindow;

namespace tw::cli {

struct WorkbenchArgs {
    std::string db = "thinwire.db";
    std::vector<int64_t> open;
    std::string screenshot;
    int frames = 0;
    int bench_frames = 0;
    int width = 1600, height = 900;
    std::string hover;  // "FX,FY": mouse at this fraction of the plot area (headless tooltips)
    std::string tab = "Plots";
    std::string x_axis = "step";  // step | tokens | bytes | sim | wall
    bool log_x = false;
    bool val_only = false;
    std::string layout; // load this layout into the editor
    bool start = false; // and start it
    int64_t resume = 0; // continue this interrupted run at once (History's Resume button)
    double wait_s = 0;  // with --screenshot: keep rendering at least this long (a live run's progress)
    std::string data_root;  // "" = the working directory (coordinator/run_session.h coordinator_data_root)
    std::string what_if_network;   // --what-if-network: re-time the --open runs for this network profile
    std::string what_if_hardware;  // --what-if-hardware: ... and this hardware profile
    double what_if_efficiency = 0; // --what-if-efficiency (0 = the profile's)
    double bench_idle_s = 0;       // --bench-idle: measure the idle window's CPU for this long, then exit
    std::string history_sort;      // --history-sort COLUMN[:desc]: History's first sort
};

// Checks the options before any window opens; every problem is a clear error: a --tab that is not
// a tab (the tabs listed), a --db that does not exist when the options read it (--open, --resume,
// or a headless --screenshot / --frames without --start: a missing store is never created
// empty), a --db that is no run store, an --open or --resume run the store does not have.
tw::Status check_workbench_args(const WorkbenchArgs& a);

// Runs until the window closes, --frames frames have been drawn, or the screenshot is saved.
// Returns the process exit code.
int workbench_loop(const WorkbenchArgs& a, GLFWwindow* window);

}  // namespace tw::cli
