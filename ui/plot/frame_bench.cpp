// Frame-time benchmark of the plot widget (frame_bench.h).
#include "ui/plot/frame_bench.h"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "core/metric_names.h"
#include "ui/plot/gl_window.h"
#include "ui/plot/plot_widget.h"

namespace tw::ui {
namespace {

double uniform01(std::mt19937_64& rng) { return (double(rng() >> 11) + 0.5) * 0x1.0p-53; }  // in (0, 1)

double gaussian(std::mt19937_64& rng) {
    const double u1 = uniform01(rng), u2 = uniform01(rng);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double now_ms(clockid_t clock) {
    timespec ts{};
    clock_gettime(clock, &ts);
    return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

FrameStats stats(std::vector<double> ms) {
    FrameStats s;
    if (ms.empty()) return s;
    std::sort(ms.begin(), ms.end());
    const size_t n = ms.size();
    s.median_ms = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
    s.p95_ms = ms[std::min(n - 1, size_t(std::ceil(0.95 * double(n))) - 1)];
    s.max_ms = ms.back();
    return s;
}

struct Sample {
    std::vector<double> cpu, proc, wall;
    std::vector<double> ui, gl, swap;  // thread CPU of the frame's parts
};

// One whole frame; `body` submits the window's contents. Returns the frame's vertex count.
template <class Body>
int frame(GLFWwindow* window, Sample* sample, Body&& body) {
    const double c0 = now_ms(CLOCK_THREAD_CPUTIME_ID), p0 = now_ms(CLOCK_PROCESS_CPUTIME_ID),
                 w0 = now_ms(CLOCK_MONOTONIC);
    glfwPollEvents();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    const ImGuiViewport* vp = ImGui::GetMainViewport();
    ImGui::SetNextWindowPos(vp->WorkPos);
    ImGui::SetNextWindowSize(vp->WorkSize);
    ImGui::Begin("bench", nullptr, ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoScrollWithMouse);
    body();
    ImGui::End();
    ImGui::Render();
    const double c1 = now_ms(CLOCK_THREAD_CPUTIME_ID);
    int fb_w = 0, fb_h = 0;
    draw_imgui_frame(window, fb_w, fb_h);
    const double c2 = now_ms(CLOCK_THREAD_CPUTIME_ID);
    glfwSwapBuffers(window);
    if (sample) {
        const double c3 = now_ms(CLOCK_THREAD_CPUTIME_ID);
        sample->ui.push_back(c1 - c0);
        sample->gl.push_back(c2 - c1);
        sample->swap.push_back(c3 - c2);
        sample->cpu.push_back(now_ms(CLOCK_THREAD_CPUTIME_ID) - c0);
        sample->proc.push_back(now_ms(CLOCK_PROCESS_CPUTIME_ID) - p0);
        sample->wall.push_back(now_ms(CLOCK_MONOTONIC) - w0);
    }
    return ImGui::GetDrawData()->TotalVtxCount;
}

void row(std::string& out, const char* name, const FrameStats& cpu, const FrameStats& proc, const FrameStats& wall) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "  %-16s %19.2f %7.2f %7.2f %20.2f %7.2f %13.2f %7.2f\n", name, cpu.median_ms,
                  cpu.p95_ms, cpu.max_ms, proc.median_ms, proc.p95_ms, wall.median_ms, wall.p95_ms);
    out += buf;
}

}  // namespace

std::vector<Series> synthetic_loss_curves(int runs, int points, uint64_t seed) {
    std::vector<Series> out(size_t(std::max(runs, 0)));
    for (int r = 0; r < runs; ++r) {
        std::mt19937_64 rng(seed + uint64_t(r) * 7919);
        const double floor = 2.2 + 0.15 * r, amp = 6.5 - 0.2 * r, tau = 200.0 + 40.0 * r;
        Series& s = out[size_t(r)];
        s.x.resize(size_t(std::max(points, 0)));
        s.y.resize(s.x.size());
        for (int i = 0; i < points; ++i) {
            const double step = i + 1;
            const double mean = floor + amp * std::pow(1.0 + step / tau, -0.6);
            double y = mean + (0.02 + 0.04 * (mean - floor)) * gaussian(rng);
            if (uniform01(rng) < 2e-4) y += 1.0 + 2.0 * uniform01(rng);  // a loss spike now and then
            s.x[size_t(i)] = step;
            s.y[size_t(i)] = y;
        }
    }
    return out;
}

FrameBenchResult bench_frames(GLFWwindow* window, int runs, int points, int frames) {
    FrameBenchResult res;
    res.runs = runs;
    res.points = points;
    res.frames = frames;
    glfwSwapInterval(0);

    const std::vector<Series> data = synthetic_loss_curves(runs, points);
    std::vector<PlotSeries> series;
    for (int r = 0; r < runs; ++r) {
        series.push_back({"run-" + std::to_string(r + 1), &data[size_t(r)], plot_palette(size_t(r)), true, ""});
    }
    PlotOptions opt;
    opt.x_label = "step";
    opt.y_label = tw::metric::kTrainLoss;
    opt.smoothing = 0.9;
    PlotView view;
    auto draw_plot = [&] { plot("bench_plot", series, opt, view); };

    frame(window, nullptr, draw_plot);  // warm-up: font atlas, shader compilation, first layout
    plot_cache_clear();                 // then a frame that rebuilds every cached smoothed copy
    const double c0 = now_ms(CLOCK_THREAD_CPUTIME_ID);
    frame(window, nullptr, draw_plot);
    res.rebuild_frame_cpu_ms = now_ms(CLOCK_THREAD_CPUTIME_ID) - c0;

    // Full view and zoomed, each plot frame followed by an empty-window frame.
    Sample full, zoomed, empty;
    const int n_full = frames / 2, n_zoomed = frames - n_full;
    const double x_min = points > 0 ? 1.0 : 0.0, x_span = std::max(1.0, double(points) - 1.0);
    for (int f = 0; f < frames; ++f) {
        if (f < n_full) {
            res.vertices_full = frame(window, &full, draw_plot);
        } else {
            // A different 1% of x every frame, so the visible range is re-bucketed each time.
            const int k = f - n_full;
            view.auto_fit = false;
            view.x_lo = x_min + 0.99 * x_span * double(k) / double(std::max(1, n_zoomed - 1));
            view.x_hi = view.x_lo + 0.01 * x_span;
            res.vertices_zoomed = frame(window, &zoomed, draw_plot);
        }
        frame(window, &empty, [] {});
    }

    // Live: the same curves, growing by kLiveAppend points per series per frame, full view.
    const size_t grow = size_t(kLiveAppend) * size_t(n_full);
    std::vector<Series> live(data.size());
    std::vector<PlotSeries> live_series = series;
    const size_t start = size_t(std::max(points, 0)) > grow ? size_t(points) - grow : 0;
    for (size_t r = 0; r < data.size(); ++r) {
        live[r].x.assign(data[r].x.begin(), data[r].x.begin() + long(start));
        live[r].y.assign(data[r].y.begin(), data[r].y.begin() + long(start));
        live_series[r].data = &live[r];
    }
    PlotView live_view;
    auto draw_live = [&] { plot("bench_live", live_series, opt, live_view); };
    frame(window, nullptr, draw_live);  // builds the caches
    Sample growing;
    for (int f = 0; f < n_full; ++f) {
        for (size_t r = 0; r < data.size(); ++r) {
            const size_t n = std::min(data[r].x.size(), live[r].x.size() + size_t(kLiveAppend));
            live[r].x.insert(live[r].x.end(), data[r].x.begin() + long(live[r].x.size()), data[r].x.begin() + long(n));
            live[r].y.insert(live[r].y.end(), data[r].y.begin() + long(live[r].y.size()), data[r].y.begin() + long(n));
        }
        frame(window, &growing, draw_live);
    }

    auto parts = [](const Sample& s) {
        return FrameParts{stats(s.ui).median_ms, stats(s.gl).median_ms, stats(s.swap).median_ms};
    };
    res.parts_full = parts(full), res.parts_zoomed = parts(zoomed), res.parts_live = parts(growing);
    res.parts_empty = parts(empty);
    res.cpu_full = stats(full.cpu), res.proc_full = stats(full.proc), res.wall_full = stats(full.wall);
    res.cpu_zoomed = stats(zoomed.cpu), res.proc_zoomed = stats(zoomed.proc), res.wall_zoomed = stats(zoomed.wall);
    res.cpu_live = stats(growing.cpu), res.proc_live = stats(growing.proc), res.wall_live = stats(growing.wall);
    res.cpu_empty = stats(empty.cpu), res.proc_empty = stats(empty.proc), res.wall_empty = stats(empty.wall);
    return res;
}

std::string format_bench(const FrameBenchResult& r) {
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%d series x %d points, smoothing 0.9. Frames: %d full view + %d zoomed to 1%% of x (each "
                  "followed by an empty-window frame), then %d live frames (+%d points per series each)\n",
                  r.runs, r.points, r.frames / 2, r.frames - r.frames / 2, r.frames / 2, kLiveAppend);
    std::string out = buf;
    out +=
        "  ms per frame      thread CPU: median     p95     max   process CPU: median     p95   wall: median     p95\n";
    row(out, "full view", r.cpu_full, r.proc_full, r.wall_full);
    row(out, "zoomed 1%", r.cpu_zoomed, r.proc_zoomed, r.wall_zoomed);
    row(out, "live", r.cpu_live, r.proc_live, r.wall_live);
    row(out, "empty window", r.cpu_empty, r.proc_empty, r.wall_empty);
    auto part = [&](const char* name, const FrameParts& p) {
        std::snprintf(buf, sizeof buf, "  %-16s build %.2f   GL submit %.2f   swap %.2f\n", name, p.ui_ms, p.gl_ms,
                      p.swap_ms);
        out += buf;
    };
    out += "  thread CPU medians by part (ms):\n";
    part("full view", r.parts_full);
    part("zoomed 1%", r.parts_zoomed);
    part("live", r.parts_live);
    part("empty window", r.parts_empty);
    std::snprintf(buf, sizeof buf,
                  "  vertices per frame: full view %d, zoomed %d; a frame rebuilding all %d cached series: "
                  "%.2f ms thread CPU\n",
                  r.vertices_full, r.vertices_zoomed, r.runs, r.rebuild_frame_cpu_ms);
    out += buf;
    return out;
}

}  // namespace tw::ui
