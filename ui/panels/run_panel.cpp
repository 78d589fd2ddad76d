// Run control; see run_panel.h.
#include "ui/panels/run_panel.h"

#include <imgui.h>

namespace tw::ui {

void RunPanel::draw_controls(ViewState& v, RunDriver& driver, LayoutModel& layout) {
    const DriverSnapshot& d = v.driver;
    const bool running = d.active && !d.done;
    const bool valid = layout.errors().empty() && layout.general_errors().empty();
    // A run that ends says so in the status line, with its reason: "run started" must not stand
    // when the nodes failed at start (a missing corpus, a path outside the data root).
    if (d.active && d.done && !end_said) {
        end_said = true;
        v.status_line = (d.run_id > 0 ? "run " + std::to_string(d.run_id) + " " : "the run ") + d.phase +
                        (d.reason.empty() ? "" : ": " + d.reason);
    }
    ImGui::BeginDisabled(running || !valid);
    if (ImGui::Button("Start")) {
        Status s = driver.start(layout.config());
        v.status_line = s ? "run started" : s.message();
        end_said = !s;
        queue.clear();
    }
    ImGui::EndDisabled();
    // A file with several runs ([variants], [sweep]): "Run all" starts them one after another, as
    // `thinwire run FILE` does.
    const auto& runs = layout.file_runs();
    if (runs.size() > 1) {
        ImGui::SameLine();
        ImGui::BeginDisabled(running || !queue.empty());
        if (ImGui::Button(("Run all " + std::to_string(runs.size())).c_str())) {
            queue.clear();
            for (auto& [name, cfg] : runs) queue.push_back(cfg);
        }
        ImGui::EndDisabled();
    }
    if (!queue.empty() && !running) {
        Status s = driver.start(queue.front());
        end_said = !s;
        v.status_line = s ? "run " + queue.front().run.name + " started (" + std::to_string(queue.size() - 1) +
                                " more to run)"
                          : queue.front().run.name + ": " + s.message();
        queue.erase(queue.begin());
        if (!s) queue.clear();
    }
    ImGui::SameLine();
    ImGui::BeginDisabled(!running || d.phase != "running");
    if (ImGui::Button("Pause")) driver.pause();
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::BeginDisabled(!running || d.phase != "paused");
    if (ImGui::Button("Resume")) driver.resume();
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::BeginDisabled(!running);
    if (ImGui::Button("Stop")) driver.stop();
    ImGui::EndDisabled();
    ImGui::SameLine();
    if (!valid) ImGui::TextColored(ImVec4(1, 0.4f, 0.3f, 1), "fix the layout first");
    else if (d.active) ImGui::Text("run %lld: %s%s%s", (long long)d.run_id, d.phase.c_str(), d.reason.empty() ? "" : " - ",
                                   d.reason.c_str());
    else ImGui::TextDisabled("idle");
    // The last message (an error names file and key), wrapped: never cut at the window's edge.
    if (!v.status_line.empty()) {
        ImGui::PushTextWrapPos(0);
        ImGui::TextDisabled("%s", v.status_line.c_str());
        ImGui::PopTextWrapPos();
    }
}

void RunPanel::draw_log(ViewState& v) {
    if (!ImGui::CollapsingHeader("Run log", ImGuiTreeNodeFlags_DefaultOpen)) return;
    const DriverSnapshot& d = v.driver;
    ImGui::BeginChild("log", ImVec2(0, 140), true);
    for (auto& line : d.log) ImGui::TextWrapped("%s", line.c_str());
    if (d.log.size() != shown_log) {
        ImGui::SetScrollHereY(1.0f);
        shown_log = d.log.size();
    }
    ImGui::EndChild();
}

}  // namespace tw::ui
