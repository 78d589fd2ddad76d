// Frame-time benchmark of the plot widget: full ImGui frames with many long series, against a
// reference frame that draws an empty window, measured in the same run so the ratio is meaningful.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ui/logic/series.h"

struct GLFWwindow;

namespace tw::ui {

// ---------------------------------------------------------------------------------------------
// Synthetic data
// ---------------------------------------------------------------------------------------------

// `runs` loss-like curves of `points` points each: x = step 1..points, y = a power-law decay to a
// per-run floor (2.2 + 0.15·run) plus Gaussian noise that shrinks with the loss, and the odd spike.
// Deterministic for a seed on every platform (mt19937_64 and our own Box–Muller, not <random>'s
// distributions, whose output is implementation-defined).
std::vector<Series> synthetic_loss_curves(int runs, int points, uint64_t seed = 1337);

// ---------------------------------------------------------------------------------------------
// Benchmark
// ---------------------------------------------------------------------------------------------

struct FrameStats {
    double median_ms = 0;
    double p95_ms = 0;
    double max_ms = 0;
};

// Where a frame's thread CPU goes (medians, ms): building it (backends' NewFrame to ImGui::Render,
// so ImGui and the widget), submitting it to GL (glClear + ImGui_ImplOpenGL3_RenderDrawData; with
// Mesa's llvmpipe this includes vertex processing), and glfwSwapBuffers.
struct FrameParts {
    double ui_ms = 0;
    double gl_ms = 0;
    double swap_ms = 0;
};

constexpr int kLiveAppend = 10;  // points appended to every series per frame in the live phase

struct FrameBenchResult {
    int runs = 0, points = 0;  // series and points per series
    int frames = 0;            // as asked: frames/2 full view, the rest zoomed, frames/2 live
    // Each phase measured three ways: CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID: ImGui,
    // the widget, the GL calls and Mesa's work on this thread), CPU time of the whole process (adds
    // llvmpipe's rasterizer threads, i.e. what a GPU would do), and wall time.
    FrameStats cpu_full, proc_full, wall_full;        // whole x-range, auto-fit
    FrameStats cpu_zoomed, proc_zoomed, wall_zoomed;  // 1% of the x-range, moved every frame (re-buckets)
    FrameStats cpu_live, proc_live, wall_live;        // whole x-range, every series grows each frame
    FrameStats cpu_empty, proc_empty, wall_empty;     // reference: the same window with nothing in it
    FrameParts parts_full, parts_zoomed, parts_live, parts_empty;
    double rebuild_frame_cpu_ms = 0;  // a full-view frame right after plot_cache_clear(): every series'
                                      // smoothed copy, bounds and levels of detail rebuilt (not in the stats)
    int vertices_full = 0, vertices_zoomed = 0;  // ImDrawData::TotalVtxCount of a full / zoomed frame
};

// Renders frames into `window` (its GL context current; ImGui's context and its GLFW + OpenGL3
// backends initialised by the caller), all with the plot of `runs` synthetic curves of `points`
// points (smoothing 0.9, linear axes) filling one full-window ImGui window:
//   1. a warm-up frame (font atlas, shader compilation), then one timed frame right after
//      plot_cache_clear() (the cost when every series changed at once);
//   2. `frames` plot frames, the first half showing the whole x-range, the second half zoomed to 1%
//      of it (a different 1% each frame, so every frame re-buckets), each followed by a frame of the
//      same window empty (the reference, measured under the same conditions);
//   3. frames/2 live frames: the curves start kLiveAppend·frames/2 points short and every series
//      grows by kLiveAppend points before each frame (the widget's append path).
// A frame is the whole loop body: backends' NewFrame, ImGui::NewFrame, the window, ImGui::Render,
// glClear, RenderDrawData and glfwSwapBuffers (swap interval set to 0).
FrameBenchResult bench_frames(GLFWwindow* window, int runs, int points, int frames);

// A few lines for the terminal: one row per phase with median / p95 / max in ms.
std::string format_bench(const FrameBenchResult& r);

}  // namespace tw::ui
