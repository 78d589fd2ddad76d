// tw_plot_demo: the plot widget on synthetic loss curves, for looking at it by hand, taking a
// screenshot headless (xvfb-run) and timing frames. Not installed.
//
//   tw_plot_demo                                   # interactive
//   tw_plot_demo --screenshot out.png --frames 5 --hover 0.55,0.4
//   tw_plot_demo --bench-frames 200                # 10 runs x 100k points
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/metric_names.h"
#include "ui/plot/frame_bench.h"
#include "ui/plot/gl_window.h"
#include "ui/plot/plot_widget.h"
#include "ui/plot/png.h"

namespace {

struct Args {
    std::string screenshot;  // save the window here after `frames` frames, then exit
    int frames = 0;          // 0 = run until the window is closed (3 with --screenshot)
    int bench_frames = 0;    // > 0: run bench_frames and print the figures
    int runs = 10, points = 100000;
    double smoothing = 0.99;
    bool log_x = false, log_y = false;
    double hover_fx = -1, hover_fy = -1;  // mouse at this fraction of the plot area (headless tooltips)
    double zoom_lo = -1, zoom_hi = -1;    // initial x view (data units); -1 = auto-fit
    int width = 1280, height = 800;
    double wheel = 0;                 // a mouse-wheel turn at the --hover point on frame 2 (headless zoom)
    double drag_dx = 0, drag_dy = 0;  // a left-button drag from the --hover point over frames 2..4
    bool malloc_tuning = true;        // mallopt as the workbench does; --no-malloc-tuning to compare
};

void usage() {
    std::printf(
        "usage: tw_plot_demo [--screenshot PNG] [--frames N] [--bench-frames N] [--runs N] [--points N]\n"
        "                    [--smoothing A] [--log-x] [--log-y] [--hover FX,FY] [--zoom XLO,XHI]\n"
        "                    [--size W,H] [--wheel N] [--drag DX,DY] [--no-malloc-tuning]\n"
        "--hover FX,FY puts the mouse at that fraction of the plot area (0,0 = top left) from frame 2 on;\n"
        "--wheel and --drag act there, so zoom, pan and the tooltip can be checked in a headless screenshot.\n");
}

// An option that takes a pair "X,Y", read with its scanf format into the two fields.
struct PairOption {
    const char* name;
    const char* format;
    void* x;
    void* y;
};

bool parse(int argc, char** argv, Args& a) {
    // The options by what they take: nothing (a switch), a whole number, a number, a pair, a path.
    const std::pair<const char*, bool*> switches_on[] = {{"--log-x", &a.log_x}, {"--log-y", &a.log_y}};
    const std::pair<const char*, int*> ints[] = {
        {"--frames", &a.frames}, {"--bench-frames", &a.bench_frames}, {"--runs", &a.runs}, {"--points", &a.points}};
    const std::pair<const char*, double*> reals[] = {{"--smoothing", &a.smoothing}, {"--wheel", &a.wheel}};
    const PairOption pairs[] = {{"--hover", "%lf,%lf", &a.hover_fx, &a.hover_fy},
                                {"--zoom", "%lf,%lf", &a.zoom_lo, &a.zoom_hi},
                                {"--size", "%d,%d", &a.width, &a.height},
                                {"--drag", "%lf,%lf", &a.drag_dx, &a.drag_dy}};
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        const auto named = [&k](const auto& row) { return k == row.first; };
        if (k == "--no-malloc-tuning") {
            a.malloc_tuning = false;
            continue;
        }
        if (auto* s = std::find_if(std::begin(switches_on), std::end(switches_on), named); s != std::end(switches_on)) {
            *s->second = true;
            continue;
        }
        auto* in = std::find_if(std::begin(ints), std::end(ints), named);
        auto* re = std::find_if(std::begin(reals), std::end(reals), named);
        auto* pr = std::find_if(std::begin(pairs), std::end(pairs), [&k](const PairOption& o) { return k == o.name; });
        if (k != "--screenshot" && in == std::end(ints) && re == std::end(reals) && pr == std::end(pairs)) {
            std::fprintf(stderr, "tw_plot_demo: unknown argument %s\n", k.c_str());
            return false;
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "tw_plot_demo: %s needs a value\n", k.c_str());
            return false;
        }
        const char* v = argv[++i];
        if (in != std::end(ints)) *in->second = std::atoi(v);
        else if (re != std::end(reals)) *re->second = std::atof(v);
        else if (pr != std::end(pairs)) {
            if (std::sscanf(v, pr->format, pr->x, pr->y) != 2) return false;
        } else a.screenshot = v;
    }
    if (!a.screenshot.empty() && a.frames <= 0) a.frames = 3;
    return true;
}


const char* kSettings[] = {"ddp",
                           "diloco H=15 lr=0.7",
                           "diloco H=50 lr=0.7",
                           "diloco H=100 lr=0.7",
                           "sparseloco k=1%",
                           "sparseloco k=3%",
                           "streaming diloco tau=5",
                           "noloco",
                           "hetero 2 full + 1 pipe",
                           "subspace k=16"};

int run(const Args& a, GLFWwindow* window) {
    if (a.bench_frames > 0) {
        const tw::ui::FrameBenchResult r = tw::ui::bench_frames(window, a.runs, a.points, a.bench_frames);
        std::fputs(tw::ui::format_bench(r).c_str(), stdout);
        return 0;
    }

    std::vector<tw::ui::Series> data = tw::ui::synthetic_loss_curves(a.runs, a.points);
    if (data.size() > 2 && a.points > 100) {  // run 3 lost 4% of its records: a gap
        for (int i = a.points * 40 / 100; i < a.points * 44 / 100; ++i) data[2].y[size_t(i)] = std::nan("");
    }
    std::vector<tw::ui::PlotSeries> series;
    for (size_t r = 0; r < data.size(); ++r) {
        series.push_back({"run-" + std::to_string(r + 1), &data[r], tw::ui::plot_palette(r), true,
                          kSettings[r % (sizeof(kSettings) / sizeof(kSettings[0]))]});
    }
    tw::ui::PlotOptions opt;
    opt.x_label = "step";
    opt.y_label = tw::metric::kTrainLoss;
    opt.smoothing = a.smoothing;
    opt.log_x = a.log_x;
    opt.log_y = a.log_y;
    tw::ui::PlotView view;
    if (a.zoom_lo >= 0 && a.zoom_hi > a.zoom_lo) {
        view.auto_fit = false;
        view.x_lo = a.zoom_lo, view.x_hi = a.zoom_hi;
        view.y_lo = std::numeric_limits<double>::quiet_NaN();  // the widget fits y when the view is unset
    }
    tw::ui::PlotRect last{};
    ImVec2 mouse;
    float smoothing = float(opt.smoothing);

    for (int f = 0; !glfwWindowShouldClose(window) && (a.frames <= 0 || f < a.frames); ++f) {
        glfwPollEvents();
        ImGui_ImplOpenGL3_NewFrame();
        ImGui_ImplGlfw_NewFrame();
        if (a.hover_fx >= 0 && f > 0) {  // headless input at the plot area of the previous frame
            ImGuiIO& io = ImGui::GetIO();
            if (f == 1) {
                mouse = ImVec2(last.min.x + float(a.hover_fx) * (last.max.x - last.min.x),
                               last.min.y + float(a.hover_fy) * (last.max.y - last.min.y));
            }
            const bool dragging = (a.drag_dx != 0 || a.drag_dy != 0) && f >= 2 && f <= 4;
            if (dragging && f > 2) mouse = ImVec2(mouse.x + float(a.drag_dx) / 2, mouse.y + float(a.drag_dy) / 2);
            io.MousePos = mouse;
            io.MouseDown[0] = dragging;
            if (f == 2) io.MouseWheel = float(a.wheel);
        }
        ImGui::NewFrame();
        const ImGuiViewport* vp = ImGui::GetMainViewport();
        ImGui::SetNextWindowPos(vp->WorkPos);
        ImGui::SetNextWindowSize(vp->WorkSize);
        ImGui::Begin("plot demo", nullptr, ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoScrollWithMouse);
        ImGui::Checkbox("log x", &opt.log_x);
        ImGui::SameLine();
        ImGui::Checkbox("log y", &opt.log_y);
        ImGui::SameLine();
        ImGui::SetNextItemWidth(200);
        if (ImGui::SliderFloat("smoothing", &smoothing, 0.0f, 0.999f, "%.3f")) opt.smoothing = smoothing;
        ImGui::SameLine();
        ImGui::TextDisabled(
            "%zu runs x %d points; wheel zooms (shift: x, ctrl: y), drag pans, double click fits; "
            "%.1f ms/frame",
            series.size(), a.points, 1000.0f / ImGui::GetIO().Framerate);
        last = tw::ui::plot("loss", series, opt, view);
        ImGui::End();

        ImGui::Render();
        int fb_w = 0, fb_h = 0;
        tw::ui::draw_imgui_frame(window, fb_w, fb_h);
        if (!a.screenshot.empty() && f == a.frames - 1) {
            const tw::Status st = tw::ui::save_framebuffer_png(a.screenshot, 0, 0, fb_w, fb_h);
            if (!st) {
                std::fprintf(stderr, "tw_plot_demo: %s\n", st.message().c_str());
                return 1;
            }
            std::printf("saved %s (%d x %d)\n", a.screenshot.c_str(), fb_w, fb_h);
        }
        glfwSwapBuffers(window);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
            usage();
            return 0;
        }
    }
    if (!parse(argc, argv, a)) {
        usage();
        return 2;
    }
    if (a.malloc_tuning) {  // as app/main.cpp and the workbench: keep freed memory in the heap
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
        mallopt(M_TRIM_THRESHOLD, 1 << 30);
    }
    GLFWwindow* window =
        tw::ui::start_imgui_window(a.width, a.height, "thinwire plot demo", "tw_plot_demo", a.frames > 0 ? 0 : 1);
    if (!window) return 1;
    // The font atlas is built at the first frame, so a font added now is the default.
    if (FILE* f = std::fopen("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "rb")) {
        std::fclose(f);
        ImGui::GetIO().Fonts->AddFontFromFileTTF("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 15.0f);
    }

    const int rc = run(a, window);
    tw::ui::end_imgui_window(window);
    return rc;
}
