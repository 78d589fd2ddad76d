// Live plots: training and validation loss of the overlaid runs against step, tokens, cumulative
// bytes sent, simulated time (re-timed for a what-if network when one is set, and the axis says
// so) or wall time, in human units. A run is one line: the mean over its replicas (the nodes that
// report a training loss) with a band across them (min–max or ± standard deviation), expandable to
// each replica; its validation loss (the evaluating node's, one point per round) as dots, never
// smoothed. Runs are coloured by run or by a setting, and can be grouped by a setting into one
// line per value (mean and band across the group's runs). One legend row per run or group; the
// runs' fault events as vertical markers (docs/faults.md); export of the plotted data as CSV or
// JSON and of the plot area as PNG.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ui/data/run_faults.h"
#include "ui/logic/mean_band.h"
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
    // The run store's path: exports never write over it (core/output_file.h check_output_target).
    void set_store_path(std::string path) { store_path_ = std::move(path); }
    void draw(ViewState& v);
    PlotRect last_rect() const { return rect_; }
    // Last frame's curves and legend rows (screenshot tests: a run is one row, whatever its replicas).
    size_t curves() const { return series_.size(); }
    size_t legend_rows() const {
        size_t n = 0;
        for (const PlotSeries& s : series_) n += s.in_legend ? 1 : 0;
        return n;
    }

private:
    // One node's curve, rebuilt when its run's data, the x-axis or the what-if replay change: its
    // points by step (for the means) and as a Series (for its own line).
    struct Built {
        const RunData* from = nullptr;
        int axis = -1;
        WhatIf what_if;
        const void* replay = nullptr;  // the what-if's replay it was built with (null: recorded axis)
        MemberCurve member;
        Series data;
    };
    // A mean line with its band (a run over its replicas, a group over its runs), remade when the
    // signature of what it averages changes. Map entries keep their address: the widget caches by it.
    struct Line {
        std::string signature;
        MeanBand band;
    };
    // One run's fault markers, rebuilt when its data, the x-axis or the what-if replay change.
    struct BuiltMarks {
        const RunData* from = nullptr;
        int axis = -1;
        const void* replay = nullptr;
        std::vector<FaultMark> marks;
    };
    void rebuild(ViewState& v);
    // The node curve `key` of run `d`, brought up to date.
    Built& node_curve(const std::string& key, const RunData& d, const NodeData& nd, bool val, const WhatIf& what_if,
                      const void* replay, const RetimedRun* retimed, const std::string& node);
    // The line `key`, remade from `members()` only when `signature` changed (frames are cheap).
    Line& line(const std::string& key, const std::string& signature,
               const std::function<std::vector<MemberCurve>()>& members);
    // A run's setting for colour and grouping: "run" (its id), or a dotted config key's value.
    std::string setting(const RunData& d, int64_t id, const std::string& key);
    void export_data(ViewState& v, bool json) const;
    void export_png(ViewState& v, const PlotOptions& opt);

    std::string store_path_;
    int axis_ = 0;
    bool log_x_ = false, log_y_ = false, show_train_ = true, show_val_ = true, show_faults_ = true;
    bool replicas_ = false;  // each replica's own curve under its run's mean
    int band_ = 0;           // BandKind: 0 min–max, 1 ± standard deviation
    int bands_asked_ = -1;   // bands: -1 by default (ui/logic/plot_fit.h bands_shown), 0 off, 1 on
    float smoothing_ = 0.8f;
    char colour_by_[64] = "run";  // "run" or a dotted config key (outer.algorithm, outer.topk_density, ...)
    char group_by_[64] = "";      // "" or a dotted config key: runs sharing its value become one line
    char export_path_[256] = "thinwire-plot";
    std::string x_label_;
    PlotView view_;
    std::map<std::string, Built> built_;    // "RUN/node/train|val" → curve
    std::map<std::string, Line> lines_;     // "RUN/train", "G:value/val", ... → mean and band
    std::map<const RunData*, std::map<std::string, std::string>> settings_;  // a run's config, key → value
    std::map<int64_t, BuiltMarks> marks_;   // run → its fault markers on the current axis
    std::vector<PlotMarker> markers_;       // this frame's markers of every overlaid run
    std::vector<PlotSeries> series_;
    std::vector<std::string> owners_;       // the legend row each entry of series_ belongs to ("3", "G:diloco")
    PlotRect rect_{};
};

}  // namespace tw::ui
