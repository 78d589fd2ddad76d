// Live plots: training and validation loss of the overlaid runs against step, tokens, cumulative
// bytes sent, simulated time (re-timed for a what-if network when one is set) or wall time;
// linear or log axes, smoothing, per-run and per-node toggles; the runs' fault events as vertical
// markers (docs/faults.md; a checkbox hides them); export of the plotted data as CSV or JSON and of
// the plot area as PNG.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ui/data/run_faults.h"
#include "ui/plot/plot_widget.h"
#include "ui/view_state.h"

namespace tw::ui {

class PlotsPanel {
public:
    // The first x-axis and its scale (e.g. --x-axis bytes --log-x for a loss-per-byte screenshot).
    void set_axis(XAxis axis, bool log_x) { axis_ = static_cast<int>(axis), log_x_ = log_x; }
    void set_show_train(bool on) { show_train_ = on; }
    void set_smoothing(float alpha) { smoothing_ = alpha; }
    void set_show_faults(bool on) { show_faults_ = on; }
    void draw(ViewState& v);
    PlotRect last_rect() const { return rect_; }

private:
    // One curve, rebuilt when its run's data, the x-axis or the what-if network change.
    struct Built {
        const RunData* from = nullptr;
        int axis = -1;
        WhatIf what_if;
        const void* replay = nullptr;  // the what-if's replay it was built with (null: recorded axis)
        Series data;
    };
    // One run's fault markers, rebuilt when its data, the x-axis or the what-if replay change.
    struct BuiltMarks {
        const RunData* from = nullptr;
        int axis = -1;
        const void* replay = nullptr;
        std::vector<FaultMark> marks;
    };
    void rebuild(ViewState& v);
    void export_data(ViewState& v, bool json) const;

    int axis_ = 0;
    bool log_x_ = false, log_y_ = false, show_train_ = true, show_val_ = true, show_faults_ = true;
    float smoothing_ = 0.8f;
    char export_path_[256] = "thinwire-plot";
    PlotView view_;
    std::map<std::string, Built> built_;   // "RUN/node/train|val" → curve
    std::map<int64_t, BuiltMarks> marks_;   // run → its fault markers on the current axis
    std::vector<PlotMarker> markers_;       // this frame's markers of every overlaid run
    std::vector<PlotSeries> series_;
    std::vector<std::string> series_keys_;  // "RUN/node/train|val" of each entry of series_
    PlotRect rect_{};
};

}  // namespace tw::ui
