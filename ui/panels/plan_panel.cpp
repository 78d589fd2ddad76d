// Plan view; see plan_panel.h.
#include "ui/panels/plan_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>

#include "ui/logic/units.h"

namespace tw::ui {
namespace {

// Above this many (step, replica) pairs a plan is not started by itself: the planner holds a trace
// entry per pair (measured: 1M steps × 16 replicas took 18.5 s and 2.2 GB), so a typo such as
// train.steps = 1e9 must not start a task that fills the memory. 1M pairs plan in about a second.
constexpr double kAutoPlanStepReplicas = 1e6;

}  // namespace

void PlanPanel::start(const RunDriver& driver, const RunConfig& cfg, const std::string& toml) {
    pending_toml_ = toml;
    started_ = std::chrono::steady_clock::now();
    // The config is copied into the task; the driver outlives the workbench (app/workbench_loop.cpp).
    pending_ = std::async(std::launch::async, [&driver, cfg] { return driver.plan(cfg); });
}

void PlanPanel::draw(const RunDriver& driver, const LayoutModel& layout) {
    const RunConfig& cfg = layout.config();
    const std::string toml = layout.to_toml();
    if (pending_.valid() && pending_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        shown_ = pending_.get();
        toml_ = pending_toml_;
        took_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started_).count();
    }
    const double pairs = double(std::max<int64_t>(cfg.train.steps, 0)) * double(std::max<int64_t>(cfg.outer.replicas, 1));
    const bool changed = toml != toml_ && (!pending_.valid() || toml != pending_toml_);
    if (changed && !pending_.valid() && pairs <= kAutoPlanStepReplicas) start(driver, cfg, toml);

    ImGui::PushTextWrapPos(0);
    ImGui::TextDisabled("the layout in the editor, planned as `thinwire plan` plans it (the flops compute model, the "
                        "codecs' byte counts, the timeline replay); no data, no training");
    ImGui::PopTextWrapPos();
    if (changed && pairs > kAutoPlanStepReplicas && !pending_.valid()) {
        ImGui::TextWrapped("%.3g steps x replicas: the planner keeps a trace entry for each (about 140 bytes; "
                           "1M steps x 16 replicas took 18 s and 2.2 GB here), so this layout is planned on request.",
                           pairs);
        if (ImGui::Button("Plan this layout")) start(driver, cfg, toml);
    }
    if (pending_.valid())
        ImGui::Text("planning ... %.1f s",
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
    if (!shown_) return;
    if (toml_ != toml) ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "(of an earlier version of the layout)");
    if (!*shown_) {
        ImGui::PushTextWrapPos(0);
        ImGui::TextColored(ImVec4(1, 0.6f, 0.3f, 1), "not planned: %s", shown_->message().c_str());
        ImGui::PopTextWrapPos();
        return;
    }
    draw_plan(shown_->value());
    ImGui::TextDisabled("planned in %.0f ms", took_ms_);
}

void PlanPanel::draw_plan(const LayoutPlan& p) const {
    ImGui::PushTextWrapPos(0);
    ImGui::Text("%s, %lld replicas, %s (%.4g M parameters) on %s at %s effective (replica 0); network %s (outer %.4g Mb/s, %.4g ms)",
                p.algorithm.c_str(), (long long)p.replicas, p.preset.c_str(), p.params / 1e6, p.hardware.c_str(),
                rate_text(p.effective_flops).c_str(), p.network.c_str(), p.outer_bandwidth_bps / 1e6, p.outer_latency_s * 1e3);
    ImGui::Text("%lld steps of %lld tokens per replica, %lld tokens in all", (long long)p.steps,
                (long long)p.tokens_per_step, (long long)p.tokens);
    if (p.measured_layout)
        ImGui::TextDisabled("the layout's compute.model is \"measured\": planned under \"flops\" on its hardware (%s), "
                            "as `thinwire plan` does; a run measures its own compute",
                            p.hardware.c_str());
    ImGui::PopTextWrapPos();
    const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit |
                                  ImGuiTableFlags_ScrollY;
    // Rows hold a progress bar (a frame's height); beyond 16 nodes the table scrolls.
    const float row_h = ImGui::GetFrameHeight() + 2 * ImGui::GetStyle().CellPadding.y;
    const float rows_h = row_h * (float(std::min<size_t>(p.nodes.size(), 16)) + 1.0f) + 4;
    if (ImGui::BeginTable("plan-nodes", 10, flags, ImVec2(0, rows_h))) {
        for (const char* h : {"node", "step (s)", "rounds", "bytes / round", "bytes in all", "compute / round (s)",
                              "exposed / round (s)", "exposed in all (s)", "utilisation", "simulated time"})
            ImGui::TableSetupColumn(h);
        ImGui::TableSetupScrollFreeze(0, 1);
        ImGui::TableHeadersRow();
        for (const LayoutPlanNode& n : p.nodes) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn(); ImGui::TextUnformatted(n.name.c_str());
            ImGui::TableNextColumn(); ImGui::Text("%.4g", n.step_s);
            ImGui::TableNextColumn(); ImGui::Text("%lld", (long long)n.rounds);
            ImGui::TableNextColumn(); ImGui::TextUnformatted(bytes_text(double(n.round_bytes)).c_str());
            ImGui::TableNextColumn(); ImGui::TextUnformatted(bytes_text(double(n.total_bytes)).c_str());
            // Per round: a run's compute and waiting between two rounds (all of it when there are none).
            const double per = n.rounds > 0 ? double(n.rounds) : 1.0;
            ImGui::TableNextColumn(); ImGui::Text("%.4g", n.compute_s / per);
            ImGui::TableNextColumn(); ImGui::Text("%.4g", n.exposed_s / per);
            ImGui::TableNextColumn(); ImGui::Text("%.4g", n.exposed_s);
            ImGui::TableNextColumn();  // compute's share of the node's time, as a bar
            const double u = n.compute_s / std::max(1e-300, n.compute_s + n.exposed_s);
            char pct[16];
            std::snprintf(pct, sizeof pct, "%.1f%%", 100 * u);
            ImGui::ProgressBar(static_cast<float>(u), ImVec2(90, 0), pct);
            ImGui::TableNextColumn(); ImGui::TextUnformatted(seconds_text(n.sim_s).c_str());
        }
        ImGui::EndTable();
    }
    ImGui::Text("simulated wall-clock %s, utilisation %.1f%%", seconds_text(p.sim_s).c_str(), 100 * p.utilisation);
}

}  // namespace tw::ui
