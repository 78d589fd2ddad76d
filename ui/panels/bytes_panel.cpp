// Bytes and time; see bytes_panel.h.
#include "ui/panels/bytes_panel.h"

#include <cmath>

#include <imgui.h>

#include <algorithm>

#include "core/metric_names.h"

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
    plot(("rounds-" + std::to_string(id)).c_str(), series, opt, rounds_views_[id], ImVec2(0, 220));
}

void BytesPanel::draw_what_if(ViewState& v, const RunData& d, int64_t id) {
    const std::string current = v.what_if.count(id) ? v.what_if.at(id) : "recorded";
    ImGui::SetNextItemWidth(150);
    const std::string label = "what-if network##" + std::to_string(id);
    if (ImGui::BeginCombo(label.c_str(), current.c_str())) {
        for (const char* p : kProfiles)
            if (ImGui::Selectable(p, current == p)) {
                if (std::string(p) == "recorded") v.what_if.erase(id);
                else v.what_if[id] = p;
            }
        ImGui::EndCombo();
    }
    if (current == "recorded") return;
    auto& cached = retimed_total_[std::to_string(id)];
    if (cached.first != current) {
        double end = NAN;
        auto clocks = retime_run(d, current);
        if (clocks)
            for (auto& [node, c] : *clocks)
                if (!c.empty()) end = std::isnan(end) ? c.rbegin()->second : std::max(end, c.rbegin()->second);
        cached = {current, end};
        retime_error_[std::to_string(id)] = clocks ? "" : clocks.message();
    }
    if (std::isnan(cached.second)) {
        ImGui::SameLine();
        ImGui::TextDisabled("(%s)", retime_error_[std::to_string(id)].c_str());
        return;
    }
    double recorded = 0;
    for (auto& [node, nd] : d.nodes)
        if (!nd.sim_s.empty()) recorded = std::max(recorded, nd.sim_s.back());
    ImGui::SameLine();
    ImGui::Text("simulated time %.2f s recorded (%s) → %.2f s on %s; the plots' sim-time axis follows", recorded,
                d.cfg.network.profile.c_str(), cached.second, current.c_str());
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
        draw_what_if(v, d, id);
        draw_bytes_table(d, id);
        draw_rounds(d, id);
    }
}

}  // namespace tw::ui
