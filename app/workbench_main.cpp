// thinwire-workbench: the desktop GUI (ImGui + GLFW + OpenGL 3) over the same coordinator the CLI
// uses. Headless modes for tests and the README:
//   thinwire-workbench --db FILE --open RUN --screenshot out.png --frames N   (under xvfb-run)
//   thinwire-workbench --bench-frames N      (10 runs × 100k points, CPU ms per frame)
//   thinwire-workbench --bench-idle S        (CPU the idle window uses per second)
#include <CLI/CLI.hpp>
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <malloc.h>

#include <cstdio>

#include "app/workbench_loop.h"
#include "ui/plot/frame_bench.h"
#include "ui/plot/gl_window.h"

int main(int argc, char** argv) {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // as in the CLI: keep freed tensor memory in the heap
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    CLI::App app{"thinwire-workbench — lay out a cluster, run it, plot loss against bytes and time"};
    tw::cli::WorkbenchArgs a;
    app.add_option("--db", a.db, "SQLite run store")->capture_default_str();
    app.add_option("--open", a.open, "overlay these runs from the start (repeatable)");
    app.add_option("--screenshot", a.screenshot, "render --frames frames, save the window as PNG, exit");
    app.add_option("--frames", a.frames, "frames to render before exiting (0 = until closed)");
    app.add_option("--bench-frames", a.bench_frames, "time N frames of 10 runs × 100k points and exit");
    app.add_option("--bench-idle", a.bench_idle_s, "measure the CPU the idle window uses over S seconds and exit");
    app.add_option("--width", a.width)->capture_default_str();
    app.add_option("--height", a.height)->capture_default_str();
    app.add_option("--tab", a.tab, "first tab: Plots, \"Bytes and time\", Plan or History")->capture_default_str();
    app.add_option("--x-axis", a.x_axis, "plots' x-axis: step, tokens, bytes, sim or wall")
        ->check(CLI::IsMember({"step", "tokens", "bytes", "sim", "wall"}))->capture_default_str();
    app.add_flag("--log-x", a.log_x, "log x-axis");
    app.add_flag("--val-only", a.val_only, "plot validation loss only");
    app.add_option("--layout", a.layout, "load this layout (TOML) into the editor");
    app.add_flag("--start", a.start, "start the loaded layout at once");
    app.add_option("--resume", a.resume, "continue this interrupted or failed run at once (as History's Resume button)");
    app.add_option("--wait-s", a.wait_s, "with --screenshot: render at least this many seconds first (a live run)");
    app.add_option("--data-root", a.data_root,
                   "the folder runs and the nodes started here read and write (default: $XDG_CACHE_HOME/thinwire or ~/.cache/thinwire)");
    app.add_option("--what-if-network", a.what_if_network, "re-time the --open runs for this network profile (Bytes and time)");
    app.add_option("--what-if-hardware", a.what_if_hardware, "re-time the --open runs' compute for this hardware profile");
    app.add_option("--what-if-efficiency", a.what_if_efficiency, "with --what-if-hardware: its efficiency (0 = the profile's)");
    app.add_option("--history-sort", a.history_sort,
                   "History's first sort: a column (\"val loss\", \"bytes/replica\", \"sim time\", ...), :desc for descending");
    app.add_option("--hover", a.hover, "FX,FY: place the mouse at this fraction of the plot (tooltip screenshots)");
    CLI11_PARSE(app, argc, argv);
    if (!a.screenshot.empty() && a.frames <= 0) a.frames = 5;
    // Before any window: a bad option fails at once, with no display needed.
    if (tw::Status s = tw::cli::check_workbench_args(a); !s) {
        std::fprintf(stderr, "thinwire-workbench: error: %s\n", s.message().c_str());
        return 2;
    }

    GLFWwindow* window = tw::ui::start_imgui_window(a.width, a.height, "thinwire workbench", "thinwire-workbench",
                                                    a.screenshot.empty() && a.bench_frames == 0 ? 1 : 0);
    if (!window) return 1;
    int rc = 0;
    try {
        if (a.bench_frames > 0) {
            const tw::ui::FrameBenchResult r = tw::ui::bench_frames(window, 10, 100000, a.bench_frames);
            std::fputs(tw::ui::format_bench(r).c_str(), stdout);
        } else {
            rc = tw::cli::workbench_loop(a, window);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "thinwire-workbench: error: %s\n", e.what());
        rc = 1;
    }
    tw::ui::end_imgui_window(window);
    return rc;
}
