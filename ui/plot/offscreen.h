// The plot widget without a window: drawn in a private ImGui context and rasterised on the CPU
// (soft_render.h), so `thinwire report` makes the workbench's plots on a machine with no display,
// GL or GLFW. Needs only ImGui.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "ui/plot/plot_widget.h"
#include "ui/plot/soft_render.h"

namespace tw::ui {

struct OffscreenOptions {
    int width = 960, height = 540;  // pixels of the picture; the plot fills it
    bool light = true;              // ImGui's light style on white (documents) or the workbench's dark one
};

// Draws `series` with `opt` exactly as tw::ui::plot does in the workbench (auto-fit view, no hover)
// and returns the picture. Uses a context of its own: the caller's current ImGui context, if any,
// is current again afterwards. Clears the widget's process-wide cache before and after (its
// entries are tied to a context's frame count), so call it from the ImGui thread only.
RgbaImage render_plot_image(std::vector<PlotSeries>& series, const PlotOptions& opt, const OffscreenOptions& off);

// The same, written to `path` as a PNG.
Status render_plot_png(const std::string& path, std::vector<PlotSeries>& series, const PlotOptions& opt,
                       const OffscreenOptions& off);

}  // namespace tw::ui
