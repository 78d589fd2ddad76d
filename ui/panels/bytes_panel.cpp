// Bytes and time; see bytes_panel.h.
#include "ui/panels/bytes_panel.h"

#include <cmath>

#include <imgui.h>

#include <algorithm>

#include "core/compute_model.h"
#include "core/metric_names.h"
#include "ui/data/run_faults.h"
#include "ui/panels/fault_markers.h"

namespace tw::ui {
namespace {

const char* const kProfiles[] = {"recorded", "datacenter", "wan-1g", "wan-100m", "home-20m"};
const char* const kClasses[] = {"outer", "intra", "stage"};

}  // namespace

void BytesPanel::draw_bytes_table(const RunData& d, int64_t id) {
    double max_sent = 1;
    for (auto& [node, nd] : d.nodes)
        for (const char* k : kClasses)
            max_sent = std::max(max_sent, nd.bytes_final.count(metric::kBytesPrefix + std::string(k) + metric::kSentSuffix)
                                              ? nd.bytes_final.at(metric::kBytesPrefix + std::string(k) + metric::kSentSuffix) : 0.0);
    const std::string table_id = "bytes-" + std::to_string(id);
    if (!ImGui::BeginTable(table_id.c_str(), 5, ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders)) return;
    for (const char* h : {"node", "outer sent / recv (B)", "intra sent / recv (B)", "stage sent / recv (B)", "share of the largest"})
        ImGui::TableSetupColumn(h);
    ImGui::TableHeadersRow();
    for (auto& [node, nd] : d.nodes) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(node.c_str());
        double total = 0;
        for (const char* k : kClasses) {
            ImGui::TableNextColumn();
            auto s = nd.bytes_final.find(metric::kBytesPrefix + std::string(k) + metric::kSentSuffix);
            auto r = nd.bytes_final.find(metric::kBytesPrefix + std::string(k) + metric::kRecvSuffix);
            if (s == nd.bytes_final.end()) {
                ImGui::TextDisabled("-");
                continue;
            }
            total = std::max(total, s->second);
            ImGui::Text("%.0f / %.0f", s->second, r == nd.bytes_final.end() ? 0.0 : r->second);
        }
        ImGui::TableNextColumn();
        ImGui::ProgressBar(static_cast<float>(total / max_sent), ImVec2(-1, 0), "");
    }
    ImGui::EndTable();
}

void BytesPanel::draw_rounds(const RunData& d, int64_t id) {
    std::vector<PlotSeries> series;
    size_t i = 0;
    for (auto& [node, nd] : d.nodes) {
        if (nd.round_step.empty()) continue;
        double compute = 0, exposed = 0;
        for (double c : nd.round_compute_s) compute += c;
        for (double e : nd.round_exposed_s) exposed += e;
        ImGui::Text("%s: %zu rounds, compute %.2f s, exposed communication %.2f s, utilisation %.1f%%", node.c_str(),
                    nd.round_step.size(), compute, exposed, 100 * compute / std::max(1e-12, compute + exposed));
        const std::string key = std::to_string(id) + "/" + node;
        Series& c = rounds_[key + "/compute"];
        Series& e = rounds_[key + "/exposed"];
        c.x = nd.round_step;
        c.y = nd.round_compute_s;
        e.x = nd.round_step;
        e.y = nd.round_exposed_s;
        e.y.resize(e.x.size(), 0.0);
        series.push_back({node + " compute", &c, plot_palette(2 * i), true, d.key_settings});
        series.push_back({node + " exposed comm", &e, plot_palette(2 * i + 1), true, d.key_settings});
        ++i;
    }
    if (series.empty()) return;
    PlotOptions opt;
    opt.x_label = "step (end of round)";
    opt.y_label = "seconds per round";
    RoundMarks& m = round_marks_[id];
    if (m.from != &d) {
        m.markers.clear();
        append_markers(fault_marks(d, id, XAxis::kStep, nullptr), m.markers);
        m.from = &d;
    }
    opt.markers = &m.markers;
    plot(("rounds-" + std::to_string(id)).c_str(), series, opt, rounds_views_[id], ImVec2(0, 220));
}

namespace {

// Sum of the nodes' replay totals; the latest node's clock is the run's simulated time.
struct Totals {
    double sim_s = 0, compute_s = 0, exposed_s = 0;
};
Totals totals_of(const RetimedRun& r) {
    Totals t;
    for (auto& [name, n] : r.nodes) t.sim_s = std::max(t.sim_s, n.sim_s), t.compute_s += n.compute_s, t.exposed_s += n.exposed_s;
    return t;
}

void combo(const char* label, float width, std::string& value, const std::vector<std::string>& choices) {
    ImGui::SetNextItemWidth(width);
    const std::string shown = value.empty() ? "recorded" : value;
    if (ImGui::BeginCombo(label, shown.c_str())) {
        if (ImGui::Selectable("recorded", value.empty())) value.clear();
        for (const auto& c : choices)
            if (ImGui::Selectable(c.c_str(), value == c)) value = c;
        ImGui::EndCombo();
    }
}

}  // namespace

void BytesPanel::draw_what_if(ViewState& v, const std::shared_ptr<const RunData>& data, int64_t id) {
    const RunData& d = *data;
    static const std::vector<std::string> kNetworks(std::begin(kProfiles) + 1, std::end(kProfiles));
    static const std::vector<std::string> kHardware = [] {
        std::vector<std::string> names;
        for (auto& p : hardware_profiles()) names.push_back(p.name);
        return names;
    }();
    WhatIf w = v.what_if.count(id) ? v.what_if.at(id) : WhatIf{};
    const std::string sid = std::to_string(id);
    combo(("what-if network##" + sid).c_str(), 130, w.network, kNetworks);
    ImGui::SameLine();
    const std::string hw_before = w.hardware.hardware;
    combo(("hardware##" + sid).c_str(), 110, w.hardware.hardware, kHardware);
    if (w.hardware.hardware != hw_before) w.hardware.efficiency = 0, w.hardware.peak_flops = 0;  // the new profile's
    if (!w.hardware.hardware.empty()) {
        ImGui::SameLine();
        ImGui::SetNextItemWidth(80);
        ImGui::InputDouble(("efficiency (0 = profile's)##" + sid).c_str(), &w.hardware.efficiency, 0, 0, "%.3g");
        if (w.hardware.hardware == "custom") {
            ImGui::SameLine();
            ImGui::SetNextItemWidth(110);
            ImGui::InputDouble(("peak FLOP/s##" + sid).c_str(), &w.hardware.peak_flops, 0, 0, "%.4g");
        }
    }
    if (w.empty()) v.what_if.erase(id);
    else v.what_if[id] = w;

    // The recorded replay (the run's own network and compute) and the what-if's, on background tasks.
    const auto base = v.retimes.get(id, data, WhatIf{});
    if (w.empty()) {
        if (base && *base) {
            const Totals t = totals_of(base->value());
            ImGui::PushTextWrapPos(0);
            ImGui::TextDisabled("recorded: simulated %.4g s on %s, compute %.4g s, exposed communication %.4g s (%s compute)",
                                t.sim_s, d.cfg.network.profile.c_str(), t.compute_s, t.exposed_s,
                                d.cfg.compute.model == "flops" ? d.cfg.compute.hardware.c_str() : "measured");
            ImGui::PopTextWrapPos();
        }
        return;
    }
    const auto cached = v.retimes.get(id, data, w);
    if (!base || !cached) {
        ImGui::TextDisabled("re-timing ...");
        return;
    }
    if (!*cached || !*base) {
        ImGui::PushTextWrapPos(0);
        ImGui::TextColored(ImVec4(1, 0.6f, 0.3f, 1), "not re-timed: %s", (*cached ? *base : *cached).message().c_str());
        ImGui::PopTextWrapPos();
        return;
    }
    const Totals r = totals_of(base->value()), t = totals_of(cached->value());
    ImGui::PushTextWrapPos(0);
    // ImGui's default font has no arrow glyph: "->".
    ImGui::Text("simulated time %.4g s recorded -> %.4g s (%s); compute %.4g -> %.4g s, exposed communication %.4g -> %.4g s, "
                "utilisation %.3g%% -> %.3g%%; the plots' sim-time axis follows",
                r.sim_s, t.sim_s, w.label().c_str(), r.compute_s, t.compute_s, r.exposed_s, t.exposed_s,
                100 * r.compute_s / std::max(1e-300, r.compute_s + r.exposed_s),
                100 * t.compute_s / std::max(1e-300, t.compute_s + t.exposed_s));
    if (!w.hardware.hardware.empty()) ImGui::TextDisabled("%s", describe_compute_what_if(d.cfg, w.hardware).c_str());
    ImGui::PopTextWrapPos();
}

void BytesPanel::draw(ViewState& v) {
    if (!v.cache || v.runs.empty()) {
        ImGui::TextDisabled("tick runs in History (or start one) to see their bytes and time");
        return;
    }
    for (int64_t id : v.runs) {
        auto it = v.cache->loaded.find(id);
        if (it == v.cache->loaded.end()) continue;
        const RunData& d = *it->second;
        const std::string title = "run " + std::to_string(id) + " " + d.summary.name + " (" + d.key_settings + ")";
        if (!ImGui::CollapsingHeader(title.c_str(), ImGuiTreeNodeFlags_DefaultOpen)) continue;
        draw_what_if(v, it->second, id);
        draw_bytes_table(d, id);
        draw_rounds(d, id);
    }
}

}  // namespace tw::ui
