// The workbench: one ImGui frame of every panel — nodes, layout editor, run control and
// log on the left; live plots, bytes and time, the plan of the editor's layout, and history on the right. It only draws and reacts:
// runs go through a RunDriver (the coordinator on its own thread), the store is read by a RunCache
// on its own thread, so no frame waits for the network or the database.
#pragma once

#include <memory>
#include <utility>
#include <set>
#include <string>

#include "ui/data/run_cache.h"
#include "ui/panels/bytes_panel.h"
#include "ui/panels/history_panel.h"
#include "ui/panels/layout_panel.h"
#include "ui/panels/nodes_panel.h"
#include "ui/panels/plan_panel.h"
#include "ui/panels/plots_panel.h"
#include "ui/panels/run_panel.h"
#include "ui/run_driver.h"
#include "ui/view_state.h"

namespace tw::ui {

struct WorkbenchOptions {
    std::string db_path = "thinwire.db";
    std::set<int64_t> open_runs;  // runs overlaid from the start (--open)
    std::string tab = "Plots";    // the right-hand tab shown first: Plots, Bytes and time, Plan, History
    XAxis x_axis = XAxis::kStep;  // the plots' first x-axis
    bool log_x = false;
    bool show_train = true;       // training-loss curves (validation curves are always offered)
    float smoothing = 0.8f;       // debiased EMA weight of the plots
    WhatIf what_if;               // a what-if (network, hardware) set on every --open run from the start
    std::string history_sort;     // History's first sort: a column name ("val loss", "bytes/replica", ...)
    bool history_ascending = true;
};

class Workbench {
public:
    Workbench(WorkbenchOptions opts, RunDriver& driver);

    // Draws the whole UI for this frame into the current ImGui context, filling the viewport.
    void frame();
    // Loads a layout file into the editor (as the Load button does); the error names file and key.
    Status load_layout(const std::string& path);
    // Starts the editor's layout (as the Start button does).
    Status start();
    // Loads the wanted runs synchronously (headless screenshots want the data in the first frame).
    void load_now();
    // Where the loss plot was drawn last frame (ImGui screen coordinates), e.g. for PNG export.
    PlotRect plot_rect() const { return plots_.last_rect(); }
    // A run of this window is in progress: its plots change every refresh, so the window redraws
    // more often than when it only waits for the user.
    bool live() const { return view_.driver.active && !view_.driver.done; }
    // Something to draw without input: a live run, or the store's view changed since last frame.
    bool needs_frame() const { return live() || cache_.state() != view_.cache; }
    // The run ids in History's table as shown last frame, top to bottom (screenshot tests).
    const std::vector<int64_t>& history_order() const { return history_.shown_order; }
    size_t plot_curves() const { return plots_.curves(); }
    size_t legend_rows() const { return plots_.legend_rows(); }

private:
    WorkbenchOptions opts_;
    RunDriver& driver_;
    RunCache cache_;
    ViewState view_;
    NodesPanel nodes_;
    LayoutPanel layout_;
    RunPanel run_;
    PlotsPanel plots_;
    BytesPanel bytes_;
    PlanPanel plan_;
    HistoryPanel history_;
    std::set<int64_t> started_runs_;
    int frames_ = 0;  // runs of this session already added to the overlay
};

}  // namespace tw::ui
