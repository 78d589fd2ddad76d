// Nodes panel; see nodes_panel.h.
#include "ui/panels/nodes_panel.h"

#include <imgui.h>

#include <chrono>

namespace tw::ui {
namespace {

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// How long "Find node" waits for the relay's answer and for the node's hello, each.
constexpr int kProbeTimeoutMs = 2000;

// The first characters of a key: enough to tell nodes apart in a table.
std::string short_key(const std::string& key) { return key.substr(0, 8) + "…"; }

}  // namespace

void NodesPanel::add_probe(const std::string& ep, const ClusterConfig& cluster) {
    for (auto& p : probes)
        if (p.endpoint == ep) return;
    Probe p;
    p.endpoint = ep;
    // A hello on its own thread so the frame never waits for it (the layout's keys and relay copied).
    p.pending = std::async(std::launch::async, probe_node, ep, cluster, kProbeTimeoutMs);
    probes.push_back(std::move(p));
}

void NodesPanel::draw_session_nodes(const ViewState& v) {
    const double t = now_s();
    if (!ImGui::BeginTable("session-nodes", 8, ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit))
        return;
    for (const char* h : {"node", "endpoint", "state", "heartbeat", "step", "steps/s", "threads", "version"})
        ImGui::TableSetupColumn(h);
    ImGui::TableHeadersRow();
    for (const NodeInfo& n : v.driver.nodes) {
        if (n.name.empty()) continue;
        auto& seen = last_seen[n.name];
        if (t - seen.second >= 1.0) {
            if (seen.second > 0 && n.step >= seen.first) steps_per_s[n.name] = (n.step - seen.first) / (t - seen.second);
            seen = {n.step, t};
        }
        ImGui::TableNextRow();
        ImGui::TableNextColumn(); ImGui::TextUnformatted(n.name.c_str());
        ImGui::TableNextColumn();
        if (n.joined_key.empty()) ImGui::TextUnformatted(n.endpoint.c_str());
        else ImGui::Text("key %s via %s", short_key(n.joined_key).c_str(), n.endpoint.c_str());
        ImGui::TableNextColumn(); ImGui::TextUnformatted(n.state.c_str());
        ImGui::TableNextColumn();
        const bool stale = n.heartbeat_age_s > 2.0 && !n.done;
        if (stale) ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 110, 90, 255));
        ImGui::Text("%.1f s", n.heartbeat_age_s);
        if (stale) ImGui::PopStyleColor();
        ImGui::TableNextColumn(); ImGui::Text("%lld", (long long)n.step);
        ImGui::TableNextColumn(); ImGui::Text("%.1f", steps_per_s[n.name]);
        ImGui::TableNextColumn(); ImGui::Text("%lld", (long long)n.threads);
        ImGui::TableNextColumn(); ImGui::TextUnformatted(n.version.c_str());
    }
    ImGui::EndTable();
}

void NodesPanel::draw_probes(LayoutModel& layout) {
    std::vector<std::string> ready;
    for (auto& p : probes) {
        if (p.pending.valid() && p.pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
            auto r = p.pending.get();
            if (r) p.info = *r, p.error.clear();
            else p.error = r.message();
        }
        ImGui::BulletText("%s", p.endpoint.c_str());
        ImGui::SameLine();
        if (p.pending.valid()) ImGui::TextDisabled("asking...");
        else if (p.info) {
            const NodeInfo& n = p.info->info;
            if (p.info->joined) ImGui::Text("joined the relay, reached at %s:", p.info->reached_at.c_str()), ImGui::SameLine();
            ImGui::Text("%s, v%s, %lld threads, %.1f GB, %s", n.host.c_str(), n.version.c_str(), (long long)n.threads,
                        n.memory_bytes / 1e9, n.state.c_str());
            ready.push_back(p.endpoint);
        } else {
            ImGui::TextColored(ImVec4(1, 0.45f, 0.35f, 1), "%s", p.error.c_str());
        }
    }
    if (!ready.empty() && ImGui::Button("Use the answering nodes as the layout's remote cluster")) {
        ClusterConfig& c = layout.config().cluster;
        // Keys stay with the endpoints they were given for (keyed layouts: node_keys and
        // coordinator_key go together); a node named by key needs none beside it.
        std::vector<std::string> keys;
        for (const std::string& ep : ready) {
            std::string k;
            for (size_t i = 0; i < c.endpoints.size() && i < c.node_keys.size(); ++i)
                if (c.endpoints[i] == ep) k = c.node_keys[i];
            keys.push_back(k);
        }
        c.mode = "remote";
        c.endpoints = ready;
        c.node_keys = c.coordinator_key.empty() ? std::vector<std::string>{} : keys;
        c.nodes = 0;
    }
}

void NodesPanel::draw(ViewState& v, RunDriver& driver, LayoutModel& layout) {
    if (!ImGui::CollapsingHeader("Nodes", ImGuiTreeNodeFlags_DefaultOpen)) return;
    // A fixed height (about six rows; the table scrolls beyond): a run that starts fills it and
    // nothing below moves under the mouse.
    ImGui::BeginChild("session-nodes-area", ImVec2(0, ImGui::GetTextLineHeightWithSpacing() * 7.5f), false);
    if (v.driver.nodes.empty()) ImGui::TextWrapped("no run: nodes of a run appear here with their role and heartbeat");
    else draw_session_nodes(v);
    ImGui::EndChild();
    ImGui::SetNextItemWidth(220);
    ImGui::InputText("##endpoint", endpoint, sizeof endpoint);
    ImGui::SameLine();
    if (ImGui::Button("Find node")) add_probe(endpoint, layout.config().cluster);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(70);
    ImGui::InputInt("##spawn", &spawn_count);
    spawn_count = std::max(1, std::min(spawn_count, 16));
    ImGui::SameLine();
    if (ImGui::Button("Spawn processes")) {
        auto eps = driver.spawn_processes(spawn_count);
        if (eps)
            for (auto& e : *eps) add_probe(e, layout.config().cluster);
        else
            v.status_line = eps.message();
    }
    ImGui::SameLine();
    if (ImGui::Button("Use threads")) {
        layout.config().cluster.mode = "threads";
        layout.config().cluster.endpoints.clear();
    }
    draw_probes(layout);
}

}  // namespace tw::ui
