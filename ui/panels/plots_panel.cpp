// Live plots; see plots_panel.h.
#include "ui/panels/plots_panel.h"

#include <imgui.h>

#include <cmath>
#include <fstream>

#include "ui/panels/fault_markers.h"


namespace tw::ui {
namespace {

const char* const kAxisNames[] = {"step", "tokens", "bytes sent (cumulative)", "simulated time (s)", "wall time (s)"};

ImU32 shade(ImU32 c, float alpha) {
    ImVec4 f = ImGui::ColorConvertU32ToFloat4(c);
    f.w = alpha;
    return ImGui::ColorConvertFloat4ToU32(f);
}

}  // namespace

void PlotsPanel::rebuild(ViewState& v) {
    series_.clear();
    series_keys_.clear();
    markers_.clear();
    if (!v.cache) return;
    size_t run_index = 0;
    for (int64_t id : v.runs) {
        auto it = v.cache->loaded.find(id);
        if (it == v.cache->loaded.end()) continue;
        const RunData& d = *it->second;
        const ImU32 color = plot_palette(run_index++);
        auto wi = v.what_if.find(id);
        const WhatIf what_if = wi == v.what_if.end() ? WhatIf{} : wi->second;
        // The what-if's replay runs on a background task: until it is there the curve keeps its
        // recorded axis, and it is rebuilt when the replay arrives (its pointer changes).
        std::shared_ptr<const Result<RetimedRun>> replay;
        if (!what_if.empty() && axis_ == static_cast<int>(XAxis::kSimTime)) replay = v.retimes.get(id, it->second, what_if);
        const RetimedRun* retimed = replay && *replay ? &replay->value() : nullptr;
        if (show_faults_) {
            BuiltMarks& m = marks_[id];
            if (m.from != &d || m.axis != axis_ || m.replay != replay.get()) {
                m.marks = fault_marks(d, id, static_cast<XAxis>(axis_), retimed);
                m.from = &d, m.axis = axis_, m.replay = replay.get();
            }
            append_markers(m.marks, markers_);
        }
        size_t node_index = 0;
        for (auto& [node, nd] : d.nodes) {
            const std::string key = std::to_string(id) + "/" + node;
            const float fade = 1.0f - 0.12f * static_cast<float>(node_index++ % 4);
            for (int kind = 0; kind < 2; ++kind) {
                const bool val = kind == 1;
                if ((val && (!show_val_ || nd.val.empty())) || (!val && (!show_train_ || nd.loss.empty()))) continue;
                const std::string curve = key + (val ? "/val" : "/train");
                const bool hidden = v.hidden_nodes.count(curve) && v.hidden_nodes.at(curve);
                Built& b = built_[curve];
                if (b.from != &d || b.axis != axis_ || b.what_if != what_if || b.replay != replay.get()) {
                    // A run that cannot be re-timed keeps its recorded axis.
                    const auto* rt = !retimed || !retimed->nodes.count(node) ? nullptr : &retimed->nodes.at(node).clock_at;
                    const auto& steps = val ? nd.val_step : nd.step;
                    const auto& ys = val ? nd.val : nd.loss;
                    b.data.x.clear();
                    b.data.y.clear();
                    for (size_t i = 0; i < steps.size(); ++i) {
                        const double x = x_of(nd, static_cast<XAxis>(axis_), steps[i],
                                              (val ? nd.val_sim_s : nd.sim_s)[i], (val ? nd.val_wall_s : nd.wall_s)[i], rt);
                        if (std::isnan(x) || (!b.data.x.empty() && x < b.data.x.back())) continue;
                        b.data.x.push_back(x);
                        b.data.y.push_back(ys[i]);
                    }
                    b.from = &d;
                    b.axis = axis_;
                    b.what_if = what_if;
                    b.replay = replay.get();
                }
                PlotSeries s;
                s.label = "run " + std::to_string(id) + " " + d.summary.name + " / " + node + (val ? " val" : "");
                s.data = &b.data;
                s.color = val ? shade(color, 1.0f) : shade(color, 0.85f * fade);
                s.visible = !hidden;
                s.tooltip = d.key_settings + (what_if.empty() ? "" : retimed ? " (re-timed for " + what_if.label() + ")" : "");
                series_.push_back(std::move(s));
                series_keys_.push_back(curve);
            }
        }
    }
}

void PlotsPanel::export_data(ViewState& v, bool json) const {
    const std::string path = std::string(export_path_) + (json ? ".json" : ".csv");
    std::ofstream out(path);
    if (!out) {
        v.status_line = "cannot write " + path;
        return;
    }
    out.precision(10);
    if (json) out << "[";
    bool first = true;
    if (!json) out << "series,x,y\n";
    for (auto& s : series_) {
        if (!s.visible) continue;
        if (json) {
            out << (first ? "" : ",") << "\n{\"label\":\"" << s.label << "\",\"x_axis\":\"" << kAxisNames[axis_]
                << "\",\"x\":[";
            for (size_t i = 0; i < s.data->x.size(); ++i) out << (i ? "," : "") << s.data->x[i];
            out << "],\"y\":[";
            for (size_t i = 0; i < s.data->y.size(); ++i) out << (i ? "," : "") << s.data->y[i];
            out << "]}";
        } else {
            for (size_t i = 0; i < s.data->x.size(); ++i) out << '"' << s.label << "\"," << s.data->x[i] << ',' << s.data->y[i] << '\n';
        }
        first = false;
    }
    if (json) out << "\n]\n";
    v.status_line = "wrote " + path;
}

void PlotsPanel::draw(ViewState& v) {
    ImGui::SetNextItemWidth(190);
    ImGui::Combo("x axis", &axis_, kAxisNames, IM_ARRAYSIZE(kAxisNames));
    ImGui::SameLine();
    ImGui::Checkbox("log x", &log_x_);
    ImGui::SameLine();
    ImGui::Checkbox("log y", &log_y_);
    ImGui::SameLine();
    ImGui::Checkbox("train", &show_train_);
    ImGui::SameLine();
    ImGui::Checkbox("val", &show_val_);
    ImGui::SameLine();
    ImGui::Checkbox("faults", &show_faults_);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("fault events as vertical lines: scheduled faults, lost nodes and members, rejoins,\n"
                          "state sent to a joiner, stragglers left out, membership changes (docs/faults.md)");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(110);
    ImGui::SliderFloat("smoothing", &smoothing_, 0.0f, 0.99f, "%.2f");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(140);
    ImGui::InputText("##export", export_path_, sizeof export_path_);
    ImGui::SameLine();
    if (ImGui::Button("CSV")) export_data(v, false);
    ImGui::SameLine();
    if (ImGui::Button("JSON")) export_data(v, true);
    ImGui::SameLine();
    if (ImGui::Button("PNG")) v.png_request = std::string(export_path_) + ".png";

    rebuild(v);
    // Per-node toggles live in the legend (a click hides a curve); remember them across rebuilds.
    PlotOptions opt;
    opt.x_label = kAxisNames[axis_];
    opt.y_label = "loss (nats/token)";
    opt.log_x = log_x_;
    opt.log_y = log_y_;
    opt.smoothing = smoothing_;
    opt.markers = &markers_;
    if (series_.empty()) ImGui::TextDisabled("tick runs in History (or start one) to plot them");
    rect_ = plot("loss", series_, opt, view_, ImVec2(0, 0));
    // The legend toggles curves; remember them across rebuilds.
    for (size_t i = 0; i < series_.size(); ++i) v.hidden_nodes[series_keys_[i]] = !series_[i].visible;
}

}  // namespace tw::ui
