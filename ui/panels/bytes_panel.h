// Bytes and time: cumulative bytes per link class and per node of the overlaid runs, per-round
// compute against exposed communication (utilisation), and a what-if that re-times a finished run
// for another network profile and/or other hardware (ui/logic/hardware_retime.h) and redraws its
// simulated-time axis in the plots. The per-round plot marks the run's fault events, as the loss
// plot does.
#pragma once

#include <map>
#include <memory>
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
    void draw_what_if(ViewState& v, const std::shared_ptr<const RunData>& data, int64_t id);

    std::map<int64_t, PlotView> rounds_views_;  // one per run's plot
    std::map<std::string, Series> rounds_;  // "RUN/node/compute|exposed" → per-round seconds
    struct RoundMarks {
        const RunData* from = nullptr;
        std::vector<PlotMarker> markers;  // the run's fault events on the step axis
    };
    std::map<int64_t, RoundMarks> round_marks_;
};

}  // namespace tw::ui
