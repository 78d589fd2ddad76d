// History; see history_panel.h.
#include "ui/panels/history_panel.h"

#include <filesystem>

#include "core/output_file.h"
#include "ui/data/run_row.h"
#include "ui/logic/ticks.h"
#include "ui/logic/units.h"
#include "ui/plot/plot_widget.h"

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

std::string HistoryPanel::export_stem(int64_t id) const {
    return export_to[0] != '\0' ? std::string(export_to) : "run-" + std::to_string(id);
}

void HistoryPanel::draw_details(ViewState& v, RunDriver& driver, const RunSummary& r) {
    if (edited != r.id) {
        std::snprintf(notes, sizeof notes, "%s", r.notes.c_str());
        std::snprintf(tags, sizeof tags, "%s", r.tags.c_str());
        export_to[0] = '\0';
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
    // Exports go to the path typed here (without extension; default run-ID, in the working
    // directory), never over an existing file; the status line says where they went.
    ImGui::SetNextItemWidth(200);
    ImGui::InputTextWithHint("##exportto", ("export to: run-" + std::to_string(id)).c_str(), export_to, sizeof export_to);
    ImGui::SameLine();
    for (const char* fmt : {"csv", "json"}) {
        if (ImGui::Button((std::string("Export ") + fmt).c_str())) {
            const std::string path = export_stem(id) + "." + fmt;
            const bool json = std::strcmp(fmt, "json") == 0;
            // Never over an existing file, and never half a file (core/output_file.h).
            background(v, [id, path, json](RunStore& s) {
                return write_output_file(path, Overwrite::kRefuse, s.path(), [&](std::ostream& out) {
                    return json ? write_run_json(s, id, out) : write_run_csv(s, id, out);
                });
            }, "wrote " + std::filesystem::absolute(path).string());
        }
        ImGui::SameLine();
    }
    if (ImGui::Button("Export SQLite")) {
        const std::string path = export_stem(id) + ".db";
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

namespace {

std::vector<std::string> split_keys(const char* text) {
    std::vector<std::string> out;
    std::string cur;
    for (const char* p = text;; ++p) {
        if (*p == ',' || *p == ' ' || *p == '\0') {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
            if (*p == '\0') break;
        } else {
            cur += *p;
        }
    }
    return out;
}

bool row_matches(const RunSummary& r, const RunRow* row, const std::string& f) {
    return matches(r, f) || (row && (row->algorithm == f || row->compression == f));
}

}  // namespace

void HistoryPanel::draw_table(ViewState& v) {
    ImGui::SetNextItemWidth(240);
    ImGui::InputTextWithHint("##filter", "filter: name, tag, note, group, status, algorithm", filter, sizeof filter);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(260);
    ImGui::InputTextWithHint("##extra", "extra columns: config keys, e.g. outer.lr, train.steps", extra_keys,
                             sizeof extra_keys);
    const std::vector<std::string> extra = split_keys(extra_keys);
    std::vector<TableRun> runs;
    for (const RunSummary& r : v.cache->runs) {
        auto it = v.cache->rows.find(r.id);
        const RunRow* row = it == v.cache->rows.end() ? nullptr : it->second.get();
        if (row_matches(r, row, filter)) runs.push_back({&r, row});
    }
    const char* const heads[] = {"id", "name", "algorithm", "replicas", "density/rank", "bytes/replica",
                                 "sim time", "val loss", "status", "tags"};
    const int fixed = 1 + 10;
    const int columns = fixed + int(extra.size());
    const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollY |
                                  ImGuiTableFlags_ScrollX | ImGuiTableFlags_Sortable | ImGuiTableFlags_Resizable;
    if (!ImGui::BeginTable("runs", columns, flags, ImVec2(0, ImGui::GetContentRegionAvail().y * 0.5f))) return;
    ImGui::TableSetupColumn("plot", ImGuiTableColumnFlags_NoSort | ImGuiTableColumnFlags_WidthFixed);
    bool named = false;
    for (int c = 0; c < 10; ++c) named = named || first_sort == heads[c];
    for (int c = 0; c < 10; ++c) {
        ImGuiTableColumnFlags f = ImGuiTableColumnFlags_None;
        if (named ? first_sort == heads[c] : c == 0)
            f = ImGuiTableColumnFlags_DefaultSort |
                (named && first_ascending ? ImGuiTableColumnFlags_PreferSortAscending
                                          : ImGuiTableColumnFlags_PreferSortDescending);
        ImGui::TableSetupColumn(heads[c], f);
    }
    for (const std::string& k : extra) ImGui::TableSetupColumn(k.c_str());
    ImGui::TableSetupScrollFreeze(2, 1);
    ImGui::TableHeadersRow();
    if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs && specs->SpecsCount > 0) {
        const ImGuiTableColumnSortSpecs& sc = specs->Specs[0];
        const int col = sc.ColumnIndex - 1;  // after the plot checkbox
        const RunColumn which = col < 10 ? static_cast<RunColumn>(col) : RunColumn::kSetting;
        sort_runs(runs, which, sc.SortDirection == ImGuiSortDirection_Ascending,
                  col >= 10 ? extra[size_t(col - 10)] : std::string());
    }
    shown_order.clear();
    for (const TableRun& t : runs) shown_order.push_back(t.summary->id);
    for (const TableRun& t : runs) {
        const RunSummary& r = *t.summary;
        const RunRow* row = t.row;
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
        ImGui::TableNextColumn(); ImGui::TextUnformatted(r.name.c_str());
        ImGui::TableNextColumn(); ImGui::TextUnformatted(row ? row->algorithm.c_str() : "");
        ImGui::TableNextColumn(); if (row) ImGui::Text("%lld", (long long)row->replicas);
        ImGui::TableNextColumn(); ImGui::TextUnformatted(row ? row->compression.c_str() : "");
        ImGui::TableNextColumn(); if (row) ImGui::TextUnformatted(bytes_text(row->bytes_per_replica).c_str());
        ImGui::TableNextColumn(); if (row && std::isfinite(row->sim_s)) ImGui::TextUnformatted(unit_text(row->sim_s, AxisUnit::kSeconds, 4).c_str());
        ImGui::TableNextColumn();
        if (r.last_val_loss && !std::isnan(*r.last_val_loss)) ImGui::Text("%.4f", *r.last_val_loss);
        else ImGui::TextDisabled("-");
        ImGui::TableNextColumn(); ImGui::TextUnformatted(to_string(r.status));
        ImGui::TableNextColumn(); ImGui::TextUnformatted(r.tags.c_str());
        for (const std::string& k : extra) {
            ImGui::TableNextColumn();
            if (!row) continue;
            auto it = row->config.find(k);
            ImGui::TextUnformatted(it == row->config.end() ? "-" : it->second.c_str());
        }
    }
    ImGui::EndTable();
}

void HistoryPanel::draw_compare(ViewState& v) {
    std::vector<const RunRow*> rows;
    std::vector<const RunSummary*> sums;
    for (int64_t id : v.runs) {
        auto it = v.cache->rows.find(id);
        if (it == v.cache->rows.end()) continue;
        for (const RunSummary& r : v.cache->runs)
            if (r.id == id) rows.push_back(it->second.get()), sums.push_back(&r);
    }
    if (rows.size() < 2) {
        ImGui::TextDisabled("tick two or more runs to compare their settings");
        return;
    }
    const SettingsDiff diff = differing_settings(rows);
    if (ImGui::BeginTable("differ", int(rows.size()) + 1,
                          ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollX)) {
        ImGui::TableSetupColumn("setting");
        for (const RunSummary* s : sums) ImGui::TableSetupColumn(("run " + std::to_string(s->id)).c_str());
        ImGui::TableHeadersRow();
        for (size_t k = 0; k < diff.keys.size(); ++k) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(diff.keys[k].c_str());
            for (const std::string& cell : diff.cells[k]) {
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(cell.c_str());
            }
        }
        ImGui::EndTable();
    }
    // Parallel coordinates: one vertical axis per numeric setting that differs, then the final
    // validation loss; one polyline per run, in its plot colour (its place among the ticked runs).
    std::vector<std::string> axes;
    for (size_t k = 0; k < diff.keys.size(); ++k) {
        bool numeric = true;
        for (const std::string& cell : diff.cells[k]) {
            char* end = nullptr;
            std::strtod(cell.c_str(), &end);
            if (cell.empty() || !end || *end != '\0') numeric = false;
        }
        const auto& c = diff.cells[k];
        if (numeric && std::any_of(c.begin(), c.end(), [&](const std::string& v) { return v != c.front(); }))
            axes.push_back(diff.keys[k]);
    }
    if (axes.empty()) return;
    axes.push_back("final val loss");
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    const float w = std::max(200.0f, ImGui::GetContentRegionAvail().x), h = 180;
    ImGui::Dummy(ImVec2(w, h + 30));
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float fs = ImGui::GetFontSize(), top = p0.y + fs + 4, bottom = p0.y + h;
    auto value = [&](size_t run, size_t axis) {
        if (axis + 1 == axes.size()) return sums[run]->last_val_loss ? *sums[run]->last_val_loss : NAN;
        return std::strtod(rows[run]->config.at(axes[axis]).c_str(), nullptr);
    };
    std::vector<float> xs(axes.size());
    for (size_t a = 0; a < axes.size(); ++a) {
        xs[a] = p0.x + 40 + (w - 80) * (axes.size() == 1 ? 0.5f : float(a) / float(axes.size() - 1));
        dl->AddLine(ImVec2(xs[a], top), ImVec2(xs[a], bottom), ImGui::GetColorU32(ImGuiCol_Text, 0.5f));
        const float tw = ImGui::CalcTextSize(axes[a].c_str()).x;
        dl->AddText(ImVec2(xs[a] - tw / 2, p0.y), ImGui::GetColorU32(ImGuiCol_Text), axes[a].c_str());
    }
    std::vector<double> lo(axes.size(), INFINITY), hi(axes.size(), -INFINITY);
    for (size_t r = 0; r < rows.size(); ++r)
        for (size_t a = 0; a < axes.size(); ++a)
            if (std::isfinite(value(r, a))) lo[a] = std::min(lo[a], value(r, a)), hi[a] = std::max(hi[a], value(r, a));
    for (size_t a = 0; a < axes.size(); ++a) {
        if (!std::isfinite(lo[a])) continue;
        dl->AddText(ImVec2(xs[a] + 3, bottom + 2), ImGui::GetColorU32(ImGuiCol_TextDisabled), format_value(lo[a], 4).c_str());
        dl->AddText(ImVec2(xs[a] + 3, top - 2), ImGui::GetColorU32(ImGuiCol_TextDisabled), format_value(hi[a], 4).c_str());
    }
    for (size_t r = 0; r < rows.size(); ++r) {
        const ImU32 col = plot_palette(r);
        for (size_t a = 0; a < axes.size(); ++a) {
            const double f0 = hi[a] > lo[a] ? (value(r, a) - lo[a]) / (hi[a] - lo[a]) : 0.5;
            const ImVec2 q(xs[a], bottom - float(f0) * (bottom - top));
            if (!std::isfinite(value(r, a))) continue;
            dl->AddCircleFilled(q, 3, col);
            if (a + 1 < axes.size() && std::isfinite(value(r, a + 1))) {
                const double f1 = hi[a + 1] > lo[a + 1] ? (value(r, a + 1) - lo[a + 1]) / (hi[a + 1] - lo[a + 1]) : 0.5;
                dl->AddLine(q, ImVec2(xs[a + 1], bottom - float(f1) * (bottom - top)), col, 2);
            }
        }
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
    draw_table(v);
    const RunSummary* details = nullptr;
    for (const RunSummary& r : v.cache->runs)
        if (r.id == selected) details = &r;
    if (!v.runs.empty() && ImGui::CollapsingHeader("Ticked runs: settings that differ, and against final loss"))
        draw_compare(v);
    if (details) draw_details(v, driver, *details);
    else ImGui::TextDisabled("select a run for its notes, tags and exports");
}

}  // namespace tw::ui
