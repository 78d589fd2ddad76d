// The workbench frame; see workbench.h.
#include "ui/workbench.h"

#include <imgui.h>

#include <cstdio>

namespace tw::ui {

Workbench::Workbench(WorkbenchOptions opts, RunDriver& driver)
    : opts_(std::move(opts)), driver_(driver), cache_(opts_.db_path) {
    view_.runs = opts_.open_runs;
    if (!opts_.what_if.empty())
        for (int64_t id : view_.runs) view_.what_if[id] = opts_.what_if;
    history_.db_path = opts_.db_path;
    plots_.set_store_path(opts_.db_path);
    history_.first_sort = opts_.history_sort;
    history_.first_ascending = opts_.history_ascending;
    plots_.set_axis(opts_.x_axis, opts_.log_x);
    plots_.set_show_train(opts_.show_train);
    plots_.set_smoothing(opts_.smoothing);
    cache_.want(view_.runs);
}

Status Workbench::load_layout(const std::string& path) {
    Status s = layout_.model.load_file(path);
    if (s) std::snprintf(layout_.path, sizeof layout_.path, "%s", path.c_str());
    return s;
}

Status Workbench::start() {
    if (!layout_.model.validate()) return Status::error("the layout has errors; fix them first");
    return driver_.start(layout_.model.config());
}

void Workbench::load_now() {
    cache_.want(view_.runs);
    cache_.load_now();
}

void Workbench::frame() {
    // This frame's snapshots: both are copies made by other threads, so nothing here waits.
    view_.cache = cache_.state();
    view_.driver = driver_.snapshot();
    if (view_.driver.run_id > 0 && !started_runs_.count(view_.driver.run_id)) {
        started_runs_.insert(view_.driver.run_id);  // a run started here is overlaid once
        view_.runs.insert(view_.driver.run_id);
    }
    cache_.want(view_.runs);
    view_.retimes.keep_only(view_.runs);  // replays of runs no longer overlaid go

    const ImGuiViewport* vp = ImGui::GetMainViewport();
    ImGui::SetNextWindowPos(vp->WorkPos);
    ImGui::SetNextWindowSize(vp->WorkSize);
    ImGui::Begin("thinwire workbench", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoBringToFrontOnFocus |
                     ImGuiWindowFlags_NoScrollWithMouse);
    const float left_w = std::max(380.0f, vp->WorkSize.x * 0.34f);
    // Left: the run controls fixed at the top, then nodes, layout and log in a scrolling region.
    ImGui::BeginGroup();
    // A constant height (the buttons and three lines of message; a longer one scrolls inside), so
    // nothing below moves when a message appears.
    const ImGuiStyle& style = ImGui::GetStyle();
    const float controls_h = ImGui::GetFrameHeightWithSpacing() + 4 * ImGui::GetTextLineHeightWithSpacing() +
                             2 * style.WindowPadding.y;
    ImGui::BeginChild("controls", ImVec2(left_w, controls_h), true);
    run_.draw_controls(view_, driver_, layout_.model);
    ImGui::EndChild();
    ImGui::BeginChild("left", ImVec2(left_w, -ImGui::GetFrameHeightWithSpacing()), true);
    nodes_.draw(view_, driver_, layout_.model);
    layout_.draw(view_);
    run_.draw_log(view_);
    ImGui::EndChild();
    ImGui::EndGroup();
    ImGui::SameLine();
    ImGui::BeginChild("right", ImVec2(0, -ImGui::GetFrameHeightWithSpacing()), false, ImGuiWindowFlags_NoScrollWithMouse);
    // The first frame selects the tab asked for; later the user's clicks decide.
    auto flags = [&](const char* name) {
        return frames_ == 0 && opts_.tab == name ? ImGuiTabItemFlags_SetSelected : ImGuiTabItemFlags_None;
    };
    if (ImGui::BeginTabBar("views")) {
        if (ImGui::BeginTabItem("Plots", nullptr, flags("Plots"))) {
            plots_.draw(view_);
            ImGui::EndTabItem();
        }
        if (ImGui::BeginTabItem("Bytes and time", nullptr, flags("Bytes and time"))) {
            ImGui::BeginChild("bytes");
            bytes_.draw(view_);
            ImGui::EndChild();
            ImGui::EndTabItem();
        }
        if (ImGui::BeginTabItem("Plan", nullptr, flags("Plan"))) {
            ImGui::BeginChild("plan");
            plan_.draw(driver_, layout_.model);
            ImGui::EndChild();
            ImGui::EndTabItem();
        }
        if (ImGui::BeginTabItem("History", nullptr, flags("History"))) {
            history_.draw(view_, driver_);
            ImGui::EndTabItem();
        }
        ImGui::EndTabBar();
    }
    ImGui::EndChild();
    ++frames_;
    ImGui::TextDisabled("%s | %s | %.0f fps", opts_.db_path.c_str(), view_.status_line.c_str(), ImGui::GetIO().Framerate);
    ImGui::End();
}

}  // namespace tw::ui
