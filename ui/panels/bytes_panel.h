// Bytes and time: cumulative bytes per link class and per node of the overlaid runs, per-round
// compute against exposed communication (utilisation), and a network what-if that re-times a
// finished run for another profile and redraws its simulated-time axis in the plots.
#pragma once

#include <map>
#include <string>

#include "ui/plot/plot_widget.h"
#include "ui/view_state.h"

namespace tw::ui {

class BytesPanel {
public:
    void draw(ViewState& v);

private:
    void draw_bytes_table(const RunData& d, int64_t id);
    void draw_rounds(const RunData& d, int64_t id);
    void draw_what_if(ViewState& v, const RunData& d, int64_t id);

    std::map<int64_t, PlotView> rounds_views_;  // one per run's plot
    std::map<std::string, Series> rounds_;  // "RUN/node/compute|exposed" → per-round seconds
    std::map<std::string, std::pair<std::string, double>> retimed_total_;  // run → (profile, final sim s; NaN: refused)
    std::map<std::string, std::string> retime_error_;                      // run → why it cannot be re-timed
};

}  // namespace tw::ui
