// The workbench's frame loop; see workbench_loop.h.
#include "app/workbench_loop.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "app/workbench_driver.h"
#include "core/output_file.h"
#include "storage/run_store.h"
#include "ui/plot/gl_window.h"
#include "ui/plot/png.h"
#include "ui/workbench.h"

namespace tw::cli {
namespace {

// SIGINT / SIGTERM close the window as its close button does: the frame loop ends, and the
// driver's destructor stops a running session (stored interrupted, checkpointed when
// train.ckpt_every is set) before the process exits.
std::atomic<bool> g_close{false};
extern "C" void on_close_signal(int) { g_close = true; }

// CPU seconds of this process (every thread: the run cache's refresh counts too).
double process_cpu_s() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

}  // namespace

tw::Status check_workbench_args(const WorkbenchArgs& a) {
    const std::vector<std::string> tabs{"Plots", "Bytes and time", "Plan", "History"};
    if (std::find(tabs.begin(), tabs.end(), a.tab) == tabs.end())
        return tw::Status::error("--tab \"" + a.tab + "\" is not a tab (Plots, \"Bytes and time\", Plan or History)");
    const bool headless = !a.screenshot.empty() || a.frames > 0;
    const bool reads = !a.open.empty() || a.resume > 0 || (headless && !a.start);
    if (!reads) return tw::Status::ok();  // the GUI (or a run it starts) may create the store
    if (!std::filesystem::exists(a.db))
        return tw::Status::error("--db " + a.db + " does not exist (the options given read runs from it; it is not created)");
    auto store = tw::RunStore::open(a.db, tw::StoreAccess::kExisting);
    if (!store) return store.status();
    std::vector<int64_t> ids = a.open;
    if (a.resume > 0) ids.push_back(a.resume);
    for (int64_t id : ids)
        if (!store->get_run(id)) return tw::Status::error("run " + std::to_string(id) + " is not in " + a.db);
    return tw::Status::ok();
}

int workbench_loop(const WorkbenchArgs& a, GLFWwindow* window) {
    // The screenshot is an output like an export: never the run store, checked before anything runs.
    tw::check(tw::check_output_target(a.screenshot, a.db));
    SessionDriver driver(a.db, sibling_thinwire_exe(),
                                  tw::unwrap(tw::coordinator_data_root(a.data_root)));
    tw::ui::WorkbenchOptions opts;
    opts.db_path = a.db;
    opts.open_runs.insert(a.open.begin(), a.open.end());
    opts.tab = a.tab;
    const char* axes[] = {"step", "tokens", "bytes", "sim", "wall"};
    for (int i = 0; i < 5; ++i)
        if (a.x_axis == axes[i]) opts.x_axis = static_cast<tw::ui::XAxis>(i);
    opts.log_x = a.log_x;
    opts.what_if.network = a.what_if_network;
    opts.what_if.hardware.hardware = a.what_if_hardware;
    opts.what_if.hardware.efficiency = a.what_if_efficiency;
    opts.show_train = !a.val_only;
    opts.history_sort = a.history_sort.substr(0, a.history_sort.find(':'));
    opts.history_ascending = a.history_sort.find(":desc") == std::string::npos;
    if (a.val_only) opts.smoothing = 0;  // a few validation points: show them as they are
    tw::ui::Workbench wb(opts, driver);
    if (!a.layout.empty()) tw::check(wb.load_layout(a.layout));
    if (a.start) tw::check(wb.start());
    if (a.resume > 0) tw::check(driver.continue_run(a.resume));
    if (!a.screenshot.empty()) wb.load_now();  // the picture must show the data, not a loading frame
    const auto t0 = std::chrono::steady_clock::now();
    auto waited = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >= a.wait_s; };
    double hx = -1, hy = -1;
    if (!a.hover.empty() && std::sscanf(a.hover.c_str(), "%lf,%lf", &hx, &hy) != 2) hx = -1;
    // With --screenshot the loop ends at the screenshot (after --frames frames and --wait-s seconds).
    std::signal(SIGINT, on_close_signal);
    std::signal(SIGTERM, on_close_signal);
    // An interactive window sleeps until the user does something (glfwWaitEventsTimeout), waking
    // twice a second for new data in the store, ten times a second during its own run; after an
    // event it draws a few frames at once (ImGui settles hover and focus over two or three). The
    // headless modes (screenshots, --frames) never wait.
    const bool interactive = a.screenshot.empty() && a.frames == 0;
    int eager = 3;  // frames to draw without waiting
    auto idle_t0 = std::chrono::steady_clock::now();
    double cpu0 = process_cpu_s();
    int idle_frames = 0;
    bool reference = a.bench_idle_s > 0;  // --bench-idle measures the always-drawing loop first
    double reference_cpu_per_s = 0;
    for (int f = 0; !glfwWindowShouldClose(window) && !g_close; ++f) {
        if (a.screenshot.empty() && a.frames > 0 && f >= a.frames) break;
        if (a.bench_idle_s > 0) {
            // Two phases of bench_idle_s each: the reference (a frame drawn every loop, as before the
            // window learned to sleep), then the idle window as it runs; CPU of each, and the ratio.
            const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - idle_t0).count();
            if (wall >= a.bench_idle_s) {
                const double cpu = process_cpu_s() - cpu0;
                std::printf("%s: %.1f ms CPU per second (%.1f%% of one core) over %.1f s, %d frames drawn "
                            "(%.1f per second)\n",
                            reference ? "reference, a frame every loop" : "idle window", 1000 * cpu / wall,
                            100 * cpu / wall, wall, idle_frames, idle_frames / wall);
                if (!reference) {
                    std::printf("idle / reference: %.3f; target: the idle window under 5%% of one core\n",
                                reference_cpu_per_s > 0 ? (cpu / wall) / reference_cpu_per_s : 0.0);
                    break;
                }
                reference = false;
                reference_cpu_per_s = cpu / wall;
                idle_t0 = std::chrono::steady_clock::now();
                cpu0 = process_cpu_s();
                idle_frames = 0;
                eager = 3;
            }
        }
        if (a.wait_s > 0 && !waited()) std::this_thread::sleep_for(std::chrono::milliseconds(30));
        if (!interactive || eager > 0 || reference) {
            glfwPollEvents();
            eager = std::max(0, eager - 1);
        } else {
            const double timeout = wb.live() ? 0.1 : 0.5;
            const auto before = std::chrono::steady_clock::now();
            glfwWaitEventsTimeout(timeout);
            // Woken before the timeout: an event (input, resize, close) — settle it over a few frames.
            if (std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count() < 0.9 * timeout)
                eager = 3;
            else if (!wb.needs_frame())
                continue;  // nothing new to show: no frame
        }
        ++idle_frames;
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
        int fw = 0, fh = 0;
        tw::ui::draw_imgui_frame(window, fw, fh);
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
            if (a.tab == "Plots") std::printf("plot curves %zu legend rows %zu\n", wb.plot_curves(), wb.legend_rows());
            if (a.tab == "History") {  // the table's rows as drawn, for tests of its sorting
                std::printf("history order:");
                for (int64_t id : wb.history_order()) std::printf(" %lld", (long long)id);
                std::printf("\n");
            }
            glfwSwapBuffers(window);
            break;
        }
        glfwSwapBuffers(window);
    }
    return 0;
}

}  // namespace tw::cli
