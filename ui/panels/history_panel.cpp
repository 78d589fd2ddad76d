// History; see history_panel.h.
#include "ui/panels/history_panel.h"

#include <filesystem>

#include "core/output_file.h"

#include <imgui.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "storage/export.h"
#include "ui/logic/resume_action.h"

namespace tw::ui {
namespace {

bool matches(const RunSummary& r, const std::string& f) {
    if (f.empty()) return true;
    for (const std::string* s : {&r.name, &r.tags, &r.notes, &r.group})
        if (s->find(f) != std::string::npos) return true;
    return std::to_string(r.id) == f || f == to_string(r.status);
}

}  // namespace

void HistoryPanel::background(ViewState& v, std::function<Status(RunStore&)> fn, std::string done_text) {
    const std::string path = db_path;
    writes.emplace_back(std::async(std::launch::async, [path, fn] {
        auto store = RunStore::open(path);
        if (!store) return store.status();
        return fn(*store);
    }), std::move(done_text));
    v.status_line = "working...";
}

void HistoryPanel::draw_details(ViewState& v, RunDriver& driver, const RunSummary& r) {
    if (edited != r.id) {
        std::snprintf(notes, sizeof notes, "%s", r.notes.c_str());
        std::snprintf(tags, sizeof tags, "%s", r.tags.c_str());
        edited = r.id;
    }
    ImGui::Text("run %lld \"%s\": %s%s%s", (long long)r.id, r.name.c_str(), to_string(r.status),
                r.reason.empty() ? "" : " - ", r.reason.c_str());
    // What its numbers were computed on: re-runs are bit-identical on one machine, not across CPUs.
    if (auto it = v.cache->loaded.find(r.id); it != v.cache->loaded.end() && it->second)
        for (const std::string& p : it->second->platforms) ImGui::TextWrapped("computed on %s", p.c_str());
    ImGui::InputText("tags", tags, sizeof tags);
    ImGui::InputTextMultiline("notes", notes, sizeof notes, ImVec2(-1, 50));
    const int64_t id = r.id;
    if (ImGui::Button("Save notes and tags")) {
        const std::string n = notes, t = tags;
        background(v, [id, n, t](RunStore& s) {
            if (Status st = s.set_notes(id, n); !st) return st;
            return s.set_tags(id, t);
        });
    }
    ImGui::SameLine();
    for (const char* fmt : {"csv", "json"}) {
        if (ImGui::Button((std::string("Export ") + fmt).c_str())) {
            const std::string path = "run-" + std::to_string(id) + "." + fmt;
            const bool json = std::strcmp(fmt, "json") == 0;
            // Never over an existing file, and never half a file (core/output_file.h).
            background(v, [id, path, json](RunStore& s) {
                return write_output_file(path, Overwrite::kRefuse, [&](std::ostream& out) {
                    return json ? write_run_json(s, id, out) : write_run_csv(s, id, out);
                });
            }, "wrote " + std::filesystem::absolute(path).string());
        }
        ImGui::SameLine();
    }
    if (ImGui::Button("Export SQLite")) {
        const std::string path = "run-" + std::to_string(id) + ".db";
        background(v, [id, path](RunStore& s) { return s.copy_run_to(id, path); },
                   "wrote " + std::filesystem::absolute(path).string());
    }
    const ResumeButton resume = resume_button(r.status, v.driver.active && !v.driver.done);
    if (resume.shown) {
        ImGui::SameLine();
        ImGui::BeginDisabled(!resume.enabled);
        if (ImGui::Button("Resume")) {
            Status st = driver.continue_run(id);
            v.status_line = st ? "resuming run " + std::to_string(id) : st.message();
        }
        ImGui::EndDisabled();
        if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", resume.hint.c_str());
    }
}

void HistoryPanel::draw(ViewState& v, RunDriver& driver) {
    for (auto it = writes.begin(); it != writes.end();) {
        if (it->first.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
            ++it;
            continue;
        }
        Status s = it->first.get();
        v.status_line = s ? it->second : s.message();
        it = writes.erase(it);
    }
    if (!v.cache) return;
    if (!v.cache->error.empty()) ImGui::TextColored(ImVec4(1, 0.4f, 0.3f, 1), "%s", v.cache->error.c_str());
    ImGui::SetNextItemWidth(240);
    ImGui::InputTextWithHint("##filter", "filter: name, tag, note, group, status", filter, sizeof filter);
    const RunSummary* details = nullptr;
    if (ImGui::BeginTable("runs", 8, ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollY,
                          ImVec2(0, ImGui::GetContentRegionAvail().y * 0.6f))) {
        for (const char* h : {"plot", "id", "name", "status", "last step", "val loss", "group", "tags"})
            ImGui::TableSetupColumn(h);
        ImGui::TableSetupScrollFreeze(0, 1);
        ImGui::TableHeadersRow();
        for (auto it = v.cache->runs.rbegin(); it != v.cache->runs.rend(); ++it) {
            const RunSummary& r = *it;
            if (!matches(r, filter)) continue;
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            bool on = v.runs.count(r.id) > 0;
            if (ImGui::Checkbox(("##plot" + std::to_string(r.id)).c_str(), &on)) {
                if (on) v.runs.insert(r.id);
                else v.runs.erase(r.id);
            }
            ImGui::TableNextColumn();
            if (ImGui::Selectable(std::to_string(r.id).c_str(), selected == r.id, ImGuiSelectableFlags_SpanAllColumns))
                selected = r.id;
            if (selected == r.id) details = &r;
            ImGui::TableNextColumn(); ImGui::TextUnformatted(r.name.c_str());
            ImGui::TableNextColumn(); ImGui::TextUnformatted(to_string(r.status));
            ImGui::TableNextColumn(); ImGui::Text("%lld", (long long)r.last_step.value_or(0));
            ImGui::TableNextColumn();
            if (r.last_val_loss && !std::isnan(*r.last_val_loss)) ImGui::Text("%.4f", *r.last_val_loss);
            else ImGui::TextDisabled("-");
            ImGui::TableNextColumn(); ImGui::TextUnformatted(r.group.c_str());
            ImGui::TableNextColumn(); ImGui::TextUnformatted(r.tags.c_str());
        }
        ImGui::EndTable();
    }
    if (details) draw_details(v, driver, *details);
    else ImGui::TextDisabled("select a run for its notes, tags and exports");
}

}  // namespace tw::ui
