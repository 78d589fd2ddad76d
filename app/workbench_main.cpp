// thinwire-workbench: the desktop GUI (ImGui + GLFW + OpenGL 3) over the same coordinator the CLI
// uses. Headless modes for tests and the README:
//   thinwire-workbench --db FILE --open RUN --screenshot out.png --frames N   (under xvfb-run)
//   thinwire-workbench --bench-frames N      (10 runs × 100k points, CPU ms per frame)
#include <CLI/CLI.hpp>
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <malloc.h>

#include <cfloat>
#include <chrono>
#include <cstdio>
#include <thread>

#include "app/workbench_driver.h"
#include "ui/plot/frame_bench.h"
#include "ui/plot/gl_window.h"
#include "ui/plot/png.h"
#include "ui/workbench.h"

namespace {

struct Args {
    std::string db = "thinwire.db";
    std::vector<int64_t> open;
    std::string screenshot;
    int frames = 0;
    int bench_frames = 0;
    int width = 1600, height = 900;
    std::string hover;  // "FX,FY": mouse at this fraction of the plot area (headless tooltips)
    std::string tab = "Plots";
    std::string x_axis = "step";  // step | tokens | bytes | sim | wall
    bool log_x = false;
    bool val_only = false;
    std::string layout; // load this layout into the editor
    bool start = false; // and start it
    double wait_s = 0;  // with --screenshot: keep rendering at least this long (a live run's progress)
    std::string data_root;  // "" = the working directory (coordinator/run_session.h coordinator_data_root)
};

int loop(const Args& a, GLFWwindow* window) {
    tw::cli::SessionDriver driver(a.db, tw::cli::sibling_thinwire_exe(),
                                  tw::unwrap(tw::coordinator_data_root(a.data_root)));
    tw::ui::WorkbenchOptions opts;
    opts.db_path = a.db;
    opts.open_runs.insert(a.open.begin(), a.open.end());
    opts.tab = a.tab;
    const char* axes[] = {"step", "tokens", "bytes", "sim", "wall"};
    for (int i = 0; i < 5; ++i)
        if (a.x_axis == axes[i]) opts.x_axis = static_cast<tw::ui::XAxis>(i);
    opts.log_x = a.log_x;
    opts.show_train = !a.val_only;
    if (a.val_only) opts.smoothing = 0;  // a few validation points: show them as they are
    tw::ui::Workbench wb(opts, driver);
    if (!a.layout.empty()) tw::check(wb.load_layout(a.layout));
    if (a.start) tw::check(wb.start());
    if (!a.screenshot.empty()) wb.load_now();  // the picture must show the data, not a loading frame
    const auto t0 = std::chrono::steady_clock::now();
    auto waited = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >= a.wait_s; };
    double hx = -1, hy = -1;
    if (!a.hover.empty() && std::sscanf(a.hover.c_str(), "%lf,%lf", &hx, &hy) != 2) hx = -1;
    // With --screenshot the loop ends at the screenshot (after --frames frames and --wait-s seconds).
    for (int f = 0; !glfwWindowShouldClose(window); ++f) {
        if (a.screenshot.empty() && a.frames > 0 && f >= a.frames) break;
        if (a.wait_s > 0 && !waited()) std::this_thread::sleep_for(std::chrono::milliseconds(30));
        glfwPollEvents();
        ImGui_ImplOpenGL3_NewFrame();
        ImGui_ImplGlfw_NewFrame();
        if (!a.screenshot.empty() && hx < 0) ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);  // no stray tooltip
        if (hx >= 0 && f > 0) {
            const tw::ui::PlotRect r = wb.plot_rect();
            ImGui::GetIO().MousePos = ImVec2(r.min.x + float(hx) * (r.max.x - r.min.x), r.min.y + float(hy) * (r.max.y - r.min.y));
        }
        ImGui::NewFrame();
        wb.frame();
        ImGui::Render();
        int fw, fh;
        glfwGetFramebufferSize(window, &fw, &fh);
        glViewport(0, 0, fw, fh);
        glClearColor(0.08f, 0.08f, 0.09f, 1.0f);
        glClear(GL_COLOR_BUFFER_BIT);
        ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
        if (std::string png = wb.take_png_request(); !png.empty()) {
            // ImGui points → framebuffer pixels; GL's origin is the bottom left.
            const ImVec2 scale = ImGui::GetIO().DisplayFramebufferScale;
            const tw::ui::PlotRect r = wb.plot_rect();
            const int x = int(r.min.x * scale.x), w = int((r.max.x - r.min.x) * scale.x);
            const int h = int((r.max.y - r.min.y) * scale.y), y = fh - int(r.max.y * scale.y);
            tw::Status s = tw::ui::save_framebuffer_png(png, x, y, w, h);
            std::fprintf(stderr, "%s\n", s ? ("wrote " + png).c_str() : s.message().c_str());
        }
        if (!a.screenshot.empty() && f + 1 >= a.frames && waited()) {
            tw::Status s = tw::ui::save_framebuffer_png(a.screenshot, 0, 0, fw, fh);
            if (!s) {
                std::fprintf(stderr, "thinwire-workbench: %s\n", s.message().c_str());
                return 1;
            }
            const tw::ui::PlotRect r = wb.plot_rect();
            // The plot area in image pixels (top-left origin), for tests that look inside it.
            std::printf("screenshot %s %dx%d plot %d %d %d %d\n", a.screenshot.c_str(), fw, fh, int(r.min.x), int(r.min.y),
                        int(r.max.x), int(r.max.y));
            glfwSwapBuffers(window);
            break;
        }
        glfwSwapBuffers(window);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // as in the CLI: keep freed tensor memory in the heap
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    CLI::App app{"thinwire-workbench — lay out a cluster, run it, plot loss against bytes and time"};
    Args a;
    app.add_option("--db", a.db, "SQLite run store")->capture_default_str();
    app.add_option("--open", a.open, "overlay these runs from the start (repeatable)");
    app.add_option("--screenshot", a.screenshot, "render --frames frames, save the window as PNG, exit");
    app.add_option("--frames", a.frames, "frames to render before exiting (0 = until closed)");
    app.add_option("--bench-frames", a.bench_frames, "time N frames of 10 runs × 100k points and exit");
    app.add_option("--width", a.width)->capture_default_str();
    app.add_option("--height", a.height)->capture_default_str();
    app.add_option("--tab", a.tab, "first tab: Plots, \"Bytes and time\" or History")->capture_default_str();
    app.add_option("--x-axis", a.x_axis, "plots' x-axis: step, tokens, bytes, sim or wall")
        ->check(CLI::IsMember({"step", "tokens", "bytes", "sim", "wall"}))->capture_default_str();
    app.add_flag("--log-x", a.log_x, "log x-axis");
    app.add_flag("--val-only", a.val_only, "plot validation loss only");
    app.add_option("--layout", a.layout, "load this layout (TOML) into the editor");
    app.add_flag("--start", a.start, "start the loaded layout at once");
    app.add_option("--wait-s", a.wait_s, "with --screenshot: render at least this many seconds first (a live run)");
    app.add_option("--data-root", a.data_root,
                   "the folder runs and the nodes started here read and write (default: the working directory)");
    app.add_option("--hover", a.hover, "FX,FY: place the mouse at this fraction of the plot (tooltip screenshots)");
    CLI11_PARSE(app, argc, argv);
    if (!a.screenshot.empty() && a.frames <= 0) a.frames = 5;

    if (!glfwInit()) {
        std::fprintf(stderr, "thinwire-workbench: cannot initialise GLFW (no display? run under xvfb-run)\n");
        return 1;
    }
    const char* glsl = nullptr;
    GLFWwindow* window = tw::ui::open_gl3_window(a.width, a.height, "thinwire workbench", &glsl);
    if (!window) {
        std::fprintf(stderr, "thinwire-workbench: cannot create an OpenGL 3 window\n");
        glfwTerminate();
        return 1;
    }
    glfwMakeContextCurrent(window);
    glfwSwapInterval(a.screenshot.empty() && a.bench_frames == 0 ? 1 : 0);
    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGui::GetIO().IniFilename = nullptr;  // the layout is fixed; no imgui.ini next to the user's files
    ImGui::StyleColorsDark();
    ImGui_ImplGlfw_InitForOpenGL(window, true);
    ImGui_ImplOpenGL3_Init(glsl);
    int rc = 0;
    try {
        if (a.bench_frames > 0) {
            const tw::ui::FrameBenchResult r = tw::ui::bench_frames(window, 10, 100000, a.bench_frames);
            std::fputs(tw::ui::format_bench(r).c_str(), stdout);
        } else {
            rc = loop(a, window);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "thinwire-workbench: error: %s\n", e.what());
        rc = 1;
    }
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(window);
    glfwTerminate();
    return rc;
}
