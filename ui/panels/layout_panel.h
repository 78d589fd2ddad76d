// Layout editor: the run layout as fields (replicas and their nodes, the outer algorithm and its
// knobs, the cluster, the network's link classes), validated as `thinwire run` validates the TOML,
// each error shown next to its field; load any file the CLI runs (a picker chooses among its
// [variants] and [sweep] points), save as a new file (an existing one only after a question). The [faults]
// section (docs/faults.md): the schedule's entries as editable rows, the churn, the quorum and the
// round deadline, and the schedule the layout expands to.
#pragma once

#include <string>
#include <vector>

#include "ui/logic/layout_model.h"
#include "ui/view_state.h"

namespace tw::ui {

struct LayoutPanel {
    LayoutModel model;
    char path[512] = "experiments/diloco_threads.toml";
    char save_path[512] = "";
    int nodes_available = -1;  // from the nodes panel's remote endpoints; −1 = let the cluster decide

    void draw(ViewState& v);

private:
    void draw_faults();
    void draw_file_runs(ViewState& v);
    void draw_save_as(ViewState& v);
    std::string confirm_path_;  // the existing file "Save as" asks about
    // The expanded schedule shown under [faults], remade when the layout's TOML changes (churn can
    // draw many events, so not every frame).
    std::string schedule_toml_;
    std::vector<std::string> schedule_;
    std::string schedule_error_;
};

}  // namespace tw::ui
