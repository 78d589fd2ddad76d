// Layout editor; see layout_panel.h.
#include "ui/panels/layout_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cstring>
#include <variant>

#include "core/algorithm.h"
#include "core/compute_model.h"
#include "core/config_io.h"
#include "ui/logic/fault_settings.h"
#include "ui/logic/replica_settings.h"
#include "ui/logic/units.h"

namespace tw::ui {
namespace {

// Shows the model's message for `key` under the field, in red, if there is one.
void error_for(const LayoutModel& m, const char* key) {
    const std::string& e = m.error(key);
    if (e.empty()) return;
    ImGui::PushTextWrapPos(0);  // long cross-field messages wrap inside the panel
    ImGui::TextColored(ImVec4(1, 0.4f, 0.3f, 1), "  %s", e.c_str());
    ImGui::PopTextWrapPos();
}

void int_field(LayoutModel& m, const char* label, const char* key, int64_t& v) {
    // 64-bit as the config holds it (a churn seed or train.steps beyond 2^31 shows and edits whole).
    static const int64_t kStep = 1, kStepFast = 100;
    ImGui::SetNextItemWidth(120);
    ImGui::InputScalar(label, ImGuiDataType_S64, &v, &kStep, &kStepFast);
    error_for(m, key);
}

void float_field(LayoutModel& m, const char* label, const char* key, double& v, const char* fmt = "%.4g") {
    ImGui::SetNextItemWidth(120);
    ImGui::InputDouble(label, &v, 0, 0, fmt);
    error_for(m, key);
}

void choice_field(LayoutModel& m, const char* label, const char* key, std::string& v,
                  std::initializer_list<const char*> choices) {
    ImGui::SetNextItemWidth(120);
    if (ImGui::BeginCombo(label, v.c_str())) {
        for (const char* c : choices)
            if (ImGui::Selectable(c, v == c)) v = c;
        ImGui::EndCombo();
    }
    error_for(m, key);
}

void choice_field(LayoutModel& m, const char* label, const char* key, std::string& v,
                  const std::vector<std::string>& choices) {
    ImGui::SetNextItemWidth(120);
    if (ImGui::BeginCombo(label, v.c_str())) {
        for (const auto& c : choices)
            if (ImGui::Selectable(c.c_str(), v == c)) v = c;
        ImGui::EndCombo();
    }
    error_for(m, key);
}

void text_field(LayoutModel& m, const char* label, const char* key, std::string& v) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s", v.c_str());
    ImGui::SetNextItemWidth(200);
    if (ImGui::InputText(label, buf, sizeof buf)) v = buf;
    error_for(m, key);
}

// Replicas as rows: each row's kind and subspace rank, and the nodes it gets in the order the
// coordinator assigns them (core/layout.h: replica by replica, one node per stage of a pipeline).
// Pipeline replicas are the last pipeline.replicas ones, so turning row r into a pipeline makes
// every later row one too, and turning it back makes the earlier ones full.
void draw_replica_rows(RunConfig& c) {
    const int64_t R = c.outer.replicas;
    if (R > 64 || c.cluster.stages > 64 || c.cluster.nodes_per_replica > 64) return;
    if (!ImGui::BeginTable("replica-rows", 4, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchProp)) return;
    ImGui::TableSetupColumn("replica", ImGuiTableColumnFlags_WidthFixed, 60);
    ImGui::TableSetupColumn("kind", ImGuiTableColumnFlags_WidthFixed, 100);
    ImGui::TableSetupColumn("rank k", ImGuiTableColumnFlags_WidthFixed, 110);
    ImGui::TableSetupColumn("nodes");
    ImGui::TableHeadersRow();
    const int64_t pipes = c.pipeline_replicas();
    int64_t node = 0;
    for (int64_t r = 0; r < R; ++r) {
        ImGui::PushID(static_cast<int>(r));
        const bool pipe = c.is_pipeline_replica(r);
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::Text("%lld", (long long)r);
        ImGui::TableNextColumn();
        ImGui::SetNextItemWidth(90);
        if (ImGui::BeginCombo("##kind", pipe ? "pipeline" : "full")) {
            if (ImGui::Selectable("full", !pipe) && pipe) c.pipeline.replicas = R - r - 1;
            if (ImGui::Selectable("pipeline", pipe) && !pipe) {
                c.pipeline.replicas = R - r;
                if (c.cluster.stages == 1) c.cluster.stages = 2, c.model.tie_embeddings = false;
            }
            ImGui::EndCombo();
        }
        ImGui::TableNextColumn();
        if (pipe) {
            // Editing one row's rank turns the common rank into one rank per pipeline replica.
            int k = static_cast<int>(c.boundary_rank(r, 0));
            ImGui::SetNextItemWidth(90);
            if (ImGui::InputInt("##rank", &k) && c.pipeline.boundary_ranks.empty()) {
                if (c.pipeline.replica_ranks.size() != static_cast<size_t>(pipes))
                    c.pipeline.replica_ranks.assign(static_cast<size_t>(pipes), c.pipeline.rank);
                c.pipeline.replica_ranks[static_cast<size_t>(r - (R - pipes))] = std::max(0, k);
            }
        } else {
            ImGui::TextDisabled("-");
        }
        ImGui::TableNextColumn();
        const int64_t n = pipe ? c.cluster.stages : c.cluster.nodes_per_replica;
        std::string nodes;
        for (int64_t k = 0; k < n; ++k, ++node) {
            const size_t i = static_cast<size_t>(node);
            std::string name = c.cluster.mode == "remote"
                                   ? (i < c.cluster.endpoints.size() ? c.cluster.endpoints[i] : "(missing)")
                                   : (c.cluster.mode == "threads" ? "thread " : "process ") + std::to_string(i);
            nodes += (k ? ", " : "") + (pipe ? "s" + std::to_string(k) + ": " : std::string()) + name;
        }
        ImGui::TextUnformatted(nodes.c_str());
        ImGui::PopID();
    }
    ImGui::EndTable();
}

// [pipeline]: schedule, compression and the heterogeneous SparseLoCo switches (docs/methods.md §5–§7).
void draw_pipeline(LayoutModel& model, RunConfig& c) {
    choice_field(model, "schedule", "pipeline.schedule", c.pipeline.schedule, {"1f1b", "gpipe"});
    int_field(model, "micro-batches (m)", "pipeline.micro_batches", c.pipeline.micro_batches);
    int_field(model, "subspace rank k (0 = dense)", "pipeline.rank", c.pipeline.rank);
    if (c.pipeline.rank > 0 && c.model.d_model > 0)
        ImGui::TextDisabled("  activations %.1f%% smaller than dense", 100.0 * (1.0 - double(c.pipeline.rank) / c.model.d_model));
    error_for(model, "pipeline.replica_ranks");
    error_for(model, "pipeline.boundary_ranks");
    choice_field(model, "coordinates on the wire", "pipeline.coord_dtype", c.pipeline.coord_dtype, {"fp32", "bf16", "int8"});
    choice_field(model, "constraint", "pipeline.constraint", c.pipeline.constraint, {"project", "reparam"});
    choice_field(model, "routing", "pipeline.routing", c.pipeline.routing, {"fixed", "random"});
    float_field(model, "frozen embedding std", "pipeline.frozen_std", c.pipeline.frozen_std);
    ImGui::TextUnformatted("adaptations");
    for (const char* ad : {"ad1", "ad2", "ad3", "ad5", "ad6"}) {
        ImGui::SameLine();
        bool on = c.pipeline.has(ad);
        if (ImGui::Checkbox(ad, &on)) {
            auto& a = c.pipeline.adaptations;
            a.erase(std::remove(a.begin(), a.end(), std::string(ad)), a.end());
            if (on) a.push_back(ad);
        }
    }
    error_for(model, "pipeline.adaptations");
}

// One field of the table as its type asks: a number box, a checkbox, a list of choices or text.
void draw_field(LayoutModel& m, const FieldInfo& f, RunConfig& c) {
    const char* label = f.label.c_str();
    const char* key = f.key.c_str();
    const FieldPtr ptr = config_field_ptr(c, f.key);
    switch (f.type) {
        case FieldType::kInt: int_field(m, label, key, *std::get<int64_t*>(ptr)); break;
        case FieldType::kFloat: float_field(m, label, key, *std::get<double*>(ptr)); break;
        case FieldType::kBool:
            ImGui::Checkbox(label, std::get<bool*>(ptr));
            error_for(m, key);
            break;
        case FieldType::kString:
            if (f.choices.empty()) text_field(m, label, key, *std::get<std::string*>(ptr));
            else choice_field(m, label, key, *std::get<std::string*>(ptr), f.choices);
            break;
        default: error_for(m, key); break;  // list-valued keys are edited elsewhere
    }
    // The panel's one key-specific hint, kept from before the table drove it: Top-k as a density.
    if (f.key == "outer.topk_k" && c.outer.topk_chunk > 0)
        ImGui::TextDisabled("  density %.3f%%", 100.0 * c.outer.topk_k / double(c.outer.topk_chunk * c.outer.topk_chunk));
}

void section(const char* title) {
    ImGui::Separator();
    ImGui::TextDisabled("%s", title);
}

// [compute]: the model, and under flops the hardware profile, its efficiency and (custom) peak. The
// flops-only keys are hidden under measured; switching to measured resets them (set_compute_model),
// and a loaded file's leftovers still show their errors here.
void draw_compute(LayoutModel& model, RunConfig& c) {
    std::string m = c.compute.model;
    choice_field(model, "compute model", "compute.model", m, config_field("compute.model")->choices);
    if (m != c.compute.model) set_compute_model(c, m);
    if (c.compute.model != "flops") {
        ImGui::PushTextWrapPos(0);
        ImGui::TextDisabled("  each segment advances the clock by its wall seconds on the machine that runs it");
        ImGui::PopTextWrapPos();
        for (const char* k : {"compute.hardware", "compute.peak_flops", "compute.efficiency", "compute.node_speed"})
            error_for(model, k);
        return;
    }
    choice_field(model, "hardware", "compute.hardware", c.compute.hardware, config_field("compute.hardware")->choices);
    const HardwareProfile* hw = find_hardware(c.compute.hardware);
    ImGui::PushTextWrapPos(0);
    if (hw && hw->peak_flops > 0)
        ImGui::TextDisabled("  peak %s, default efficiency %.2g: %s", rate_text(hw->peak_flops).c_str(), hw->efficiency,
                            hw->source.c_str());
    ImGui::PopTextWrapPos();
    float_field(model, "efficiency (0 = the profile's)", "compute.efficiency", c.compute.efficiency);
    if (c.compute.hardware == "custom" || c.compute.peak_flops != 0)
        float_field(model, "peak FLOP/s (0 = the profile's)", "compute.peak_flops", c.compute.peak_flops, "%.4g");
    ImGui::PushTextWrapPos(0);
    if (const double rate = replica_rate_flops(c, 0); rate > 0)
        ImGui::TextDisabled("  replica 0: %s effective, a step of %.4g s (node speeds: the per-replica table)",
                            rate_text(rate).c_str(), replica_step_s(c, 0));
    if (c.outer.round_time_s > 0)
        ImGui::TextDisabled("  rounds are time-budgeted (outer.round_time_s %.4g s, under algorithm)", c.outer.round_time_s);
    ImGui::PopTextWrapPos();
}

// One cell of a per-replica list: the replica's value (its entry, or the default in grey when the
// list is empty), edited in display units (`scale` display units per stored unit).
void replica_cell(RunConfig& c, ReplicaSetting s, int64_t r, double scale, const char* fmt) {
    double shown = replica_setting(c, s, r) * scale;
    const bool defaulted = replica_setting_list(c, s).empty();
    if (defaulted) ImGui::PushStyleVar(ImGuiStyleVar_Alpha, 0.55f);
    ImGui::SetNextItemWidth(-1);
    const std::string id = std::string("##") + replica_setting_key(s);
    if (ImGui::InputDouble(id.c_str(), &shown, 0, 0, fmt))
        set_replica_setting(c, s, r, shown / scale);
    if (defaulted) ImGui::PopStyleVar();
}

// Per replica: the node speed (under flops) and the access link between replicas (up, down,
// latency), written to compute.node_speed and network.replica_*; grey values are the defaults an
// empty list gives. Each list's errors show under the table, with a button to empty it.
void draw_replica_settings(LayoutModel& model, RunConfig& c) {
    const int64_t R = c.outer.replicas;
    if (R < 1 || R > 64) return;
    const bool flops = c.compute.model == "flops";
    const int cols = flops ? 6 : 4;
    if (ImGui::BeginTable("replica-settings", cols, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchSame)) {
        ImGui::TableSetupColumn("replica", ImGuiTableColumnFlags_WidthFixed, 52);
        if (flops) {
            ImGui::TableSetupColumn("node speed");
            ImGui::TableSetupColumn("step (s)");
        }
        ImGui::TableSetupColumn("up (Mb/s)");
        ImGui::TableSetupColumn("down (Mb/s)");
        ImGui::TableSetupColumn("latency (ms)");
        ImGui::TableHeadersRow();
        for (int64_t r = 0; r < R; ++r) {
            ImGui::PushID(static_cast<int>(r));
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::Text("%lld", (long long)r);
            if (flops) {
                ImGui::TableNextColumn();
                replica_cell(c, ReplicaSetting::kNodeSpeed, r, 1.0, "%.4g");
                ImGui::TableNextColumn();
                ImGui::Text("%.4g", replica_step_s(c, r));
            }
            ImGui::TableNextColumn();
            replica_cell(c, ReplicaSetting::kUpBps, r, 1e-6, "%.4g");
            ImGui::TableNextColumn();
            replica_cell(c, ReplicaSetting::kDownBps, r, 1e-6, "%.4g");
            ImGui::TableNextColumn();
            replica_cell(c, ReplicaSetting::kLatencyS, r, 1e3, "%.4g");
            ImGui::PopID();
        }
        ImGui::EndTable();
    }
    const ReplicaSetting all[] = {ReplicaSetting::kNodeSpeed, ReplicaSetting::kUpBps, ReplicaSetting::kDownBps,
                                  ReplicaSetting::kLatencyS};
    const char* names[] = {"node speed", "up", "down", "latency"};
    bool any = false;
    for (ReplicaSetting s : all) {
        if (replica_setting_list(c, s).empty()) continue;
        if (!any) ImGui::TextDisabled("back to the defaults (grey):"), any = true;
        ImGui::SameLine();
        const std::string label = std::string(names[static_cast<int>(s)]) + "##clear";
        if (ImGui::SmallButton(label.c_str())) clear_replica_setting(c, s);
    }
    for (ReplicaSetting s : all) {
        if (s == ReplicaSetting::kNodeSpeed && !flops) continue;  // the compute section shows it under measured
        const char* key = replica_setting_key(s);
        const std::string& e = model.error(key);
        if (!e.empty()) {
            ImGui::PushTextWrapPos(0);
            ImGui::TextColored(ImVec4(1, 0.4f, 0.3f, 1), "  %s: %s", key, e.c_str());
            ImGui::PopTextWrapPos();
        }
    }
}

}  // namespace

// [faults]: the schedule's entries as rows (each row's own problems under it, in the words of
// `thinwire run`), the churn, then what losses and stragglers do: the quorum and the round deadline.
// The expanded schedule (churn's draws included) sits in a tree node, built only when open.
void LayoutPanel::draw_faults() {
    RunConfig& c = model.config();
    auto& events = c.faults.events;
    ImGui::PushTextWrapPos(0);
    ImGui::TextDisabled("  \"kill R at S rejoin T\", \"disconnect R at S rejoin T\", \"pause R at S until T\", "
                        "\"slow R at S until T x K\" (R replica, S and T steps; rejoin optional)");
    ImGui::PopTextWrapPos();
    size_t remove = events.size();
    for (size_t i = 0; i < events.size(); ++i) {
        ImGui::PushID(static_cast<int>(i));
        char buf[256];
        std::snprintf(buf, sizeof buf, "%s", events[i].c_str());
        ImGui::SetNextItemWidth(240);
        if (ImGui::InputText("##event", buf, sizeof buf)) events[i] = buf;
        ImGui::SameLine();
        if (ImGui::SmallButton("remove")) remove = i;
        for (const std::string& p : fault_event_problems(c, i)) {
            ImGui::PushTextWrapPos(0);
            ImGui::TextColored(ImVec4(1, 0.4f, 0.3f, 1), "  %s", p.c_str());
            ImGui::PopTextWrapPos();
        }
        ImGui::PopID();
    }
    remove_fault_event(c, remove);
    if (ImGui::SmallButton("add event")) events.push_back(new_fault_event(c));
    ImGui::SameLine();
    ImGui::TextDisabled("(faults.events)");
    // Labels of their own: the field table's are longer than this narrow panel.
    int_field(model, "churn: mean gap (steps, 0 = off)", "faults.churn.mtbf_steps", c.faults.churn_mtbf_steps);
    int_field(model, "churn: steps down", "faults.churn.down_steps", c.faults.churn_down_steps);
    int_field(model, "churn: seed", "faults.churn.seed", c.faults.churn_seed);
    ImGui::PushTextWrapPos(0);
    ImGui::TextDisabled("  churn: each replica is killed at random gaps and rejoins the given steps later; a draw that "
                        "would leave fewer than the quorum is skipped");
    ImGui::PopTextWrapPos();
    // The section's own problems that name no field ("[faults]: ..."): also listed at the top.
    ImGui::PushTextWrapPos(0);
    for (const std::string& g : model.general_errors())
        if (g.find("[faults]") != std::string::npos) ImGui::TextColored(ImVec4(1, 0.4f, 0.3f, 1), "  %s", g.c_str());
    ImGui::PopTextWrapPos();
    int_field(model, "quorum: min live replicas", "cluster.min_replicas", c.cluster.min_replicas);
    int_field(model, "spare nodes (standing by)", "cluster.spares", c.cluster.spares);
    int_field(model, "restarts of a lost node", "cluster.restart_lost", c.cluster.restart_lost);
    // outer.round_deadline_s is among each outer algorithm's own knobs (its traits' keys), drawn above.
    if (!c.faults.enabled()) return;
    if (ImGui::TreeNode("faults-schedule", "schedule (expanded)")) {
        const std::string toml = model.to_toml();
        if (toml != schedule_toml_) {
            schedule_toml_ = toml;
            auto lines = schedule_lines(c, 200);
            schedule_error_ = lines ? "" : lines.message();
            schedule_ = lines ? std::move(*lines) : std::vector<std::string>{};
        }
        if (!schedule_error_.empty()) ImGui::TextDisabled("not built: %s", schedule_error_.c_str());
        else if (schedule_.empty()) ImGui::TextDisabled("no events within train.steps");
        for (const std::string& line : schedule_) ImGui::TextUnformatted(line.c_str());
        ImGui::TreePop();
    }
}

void LayoutPanel::draw_file_runs(ViewState& v) {
    // A file with [variants] or a [sweep] grid makes several runs: the editor holds one of them.
    const auto& runs = model.file_runs();
    if (runs.size() < 2) return;
    const size_t chosen = model.chosen_run();
    ImGui::SetNextItemWidth(260);
    const std::string label = runs[chosen].first.empty() ? "(base)" : runs[chosen].first;
    if (ImGui::BeginCombo("run of the file", label.c_str())) {
        for (size_t i = 0; i < runs.size(); ++i) {
            const std::string name = runs[i].first.empty() ? "(base)" : runs[i].first;
            if (ImGui::Selectable((name + "##run" + std::to_string(i)).c_str(), i == chosen)) {
                model.choose_run(i);
                v.status_line = "editing " + name + " of " + model.file_path() + " (" + std::to_string(runs.size()) +
                                " runs; Run all starts each)";
            }
        }
        ImGui::EndCombo();
    }
}

void LayoutPanel::draw_save_as(ViewState& v) {
    // Save never writes over a file without asking: the layout goes to the path typed here, and an
    // existing file (above all one the editor did not write: its comments and variants would go)
    // needs a second click.
    ImGui::SetNextItemWidth(260);
    ImGui::InputTextWithHint("##saveas", "save as: path.toml", save_path, sizeof save_path);
    ImGui::SameLine();
    if (ImGui::Button("Save as")) {
        const std::string target = save_path;
        if (target.empty()) {
            v.status_line = "type a path to save the layout to";
        } else if (LayoutModel::save_target(target) == LayoutModel::SaveTarget::kNew) {
            Status s = model.save_file(target);
            v.status_line = s ? "saved " + target : s.message();
        } else {
            confirm_path_ = target;
            ImGui::OpenPopup("overwrite?");
        }
    }
    if (ImGui::BeginPopupModal("overwrite?", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
        const bool ours = LayoutModel::save_target(confirm_path_) == LayoutModel::SaveTarget::kEditorFile;
        ImGui::PushTextWrapPos(420);
        ImGui::TextWrapped(ours ? "%s exists (written by this editor). Replace it?"
                                : "%s was not written by this editor: its comments, [variants] and [sweep] would "
                                  "be lost. Replace it with the resolved layout?",
                           confirm_path_.c_str());
        ImGui::PopTextWrapPos();
        if (ImGui::Button("Replace")) {
            Status s = model.save_file(confirm_path_);
            v.status_line = s ? "saved " + confirm_path_ : s.message();
            ImGui::CloseCurrentPopup();
        }
        ImGui::SameLine();
        if (ImGui::Button("Cancel")) {
            v.status_line = "not saved";
            ImGui::CloseCurrentPopup();
        }
        ImGui::EndPopup();
    }
}

void LayoutPanel::draw(ViewState& v) {
    if (!ImGui::CollapsingHeader("Layout", ImGuiTreeNodeFlags_DefaultOpen)) return;
    RunConfig& c = model.config();
    ImGui::SetNextItemWidth(260);
    ImGui::InputText("##path", path, sizeof path);
    ImGui::SameLine();
    if (ImGui::Button("Load")) {
        Status s = model.load_file(path);
        v.status_line = s ? std::string("loaded ") + path : s.message();
    }
    draw_file_runs(v);
    draw_save_as(v);
    ImGui::PushTextWrapPos(0);
    for (auto& g : model.general_errors()) ImGui::TextColored(ImVec4(1, 0.4f, 0.3f, 1), "%s", g.c_str());
    ImGui::PopTextWrapPos();

    text_field(model, "run name", "run.name", c.run.name);
    choice_field(model, "model preset", "model.preset", c.model.preset, config_field("model.preset")->choices);
    ImGui::Checkbox("tied embeddings", &c.model.tie_embeddings);
    section("replicas");
    const int64_t replicas_before = c.outer.replicas;
    int_field(model, "replicas", "outer.replicas", c.outer.replicas);
    if (c.outer.replicas != replicas_before) fit_replica_settings(c);  // per-replica lists keep one entry each
    int_field(model, "nodes per full replica", "cluster.nodes_per_replica", c.cluster.nodes_per_replica);
    int_field(model, "stages per pipeline replica", "cluster.stages", c.cluster.stages);
    error_for(model, "pipeline.replicas");
    error_for(model, "model.tie_embeddings");
    draw_replica_rows(c);
    if (c.cluster.stages > 1) {
        section("pipeline replicas");
        draw_pipeline(model, c);
    }
    section("algorithm");
    const std::string algorithm_before = c.outer.algorithm;
    choice_field(model, "outer algorithm", "outer.algorithm", c.outer.algorithm, config_field("outer.algorithm")->choices);
    // outer.topology was resolved for the previous algorithm: take the new one's default instead
    // (a sparse method refuses the dense methods' ring), and the new one's id.
    if (c.outer.algorithm != algorithm_before) c.outer.topology.clear(), resolve_algorithm(c);
    // Each algorithm's knobs come from the field table (which keys it reads, their labels, types and
    // choices), so a new algorithm's settings appear here without code of its own.
    for (const FieldInfo* f : algorithm_fields(c)) draw_field(model, *f, c);
    int_field(model, "steps", "train.steps", c.train.steps);
    int_field(model, "batch per replica", "train.batch_size", c.train.batch_size);
    float_field(model, "inner lr", "train.lr", c.train.lr);
    section("compute");
    draw_compute(model, c);
    section("cluster");
    choice_field(model, "mode", "cluster.mode", c.cluster.mode, {"threads", "local", "remote"});
    if (c.cluster.mode == "remote") {
        std::string joined;
        for (auto& e : c.cluster.endpoints) joined += e + "\n";
        char buf[2048];
        std::snprintf(buf, sizeof buf, "%s", joined.c_str());
        if (ImGui::InputTextMultiline("endpoints", buf, sizeof buf, ImVec2(260, 60))) {
            c.cluster.endpoints.clear();
            std::string s(buf), line;
            for (char ch : s + "\n") {
                if (ch == '\n') {
                    if (!line.empty()) c.cluster.endpoints.push_back(line);
                    line.clear();
                } else {
                    line += ch;
                }
            }
        }
        error_for(model, "cluster.endpoints");
    }
    float_field(model, "heartbeat timeout (s)", "cluster.heartbeat_timeout_s", c.cluster.heartbeat_timeout_s);
    error_for(model, "cluster.nodes");
    section("network (simulated)");
    choice_field(model, "profile", "network.profile", c.network.profile, {"datacenter", "wan-1g", "wan-100m", "home-20m"});
    float_field(model, "outer bandwidth (bit/s, 0 = profile)", "network.outer_bandwidth_bps", c.network.outer_bandwidth_bps, "%.3g");
    float_field(model, "outer latency (s, 0 = profile)", "network.outer_latency_s", c.network.outer_latency_s);
    float_field(model, "intra bandwidth (bit/s, 0 = profile)", "network.intra_bandwidth_bps", c.network.intra_bandwidth_bps, "%.3g");
    float_field(model, "intra latency (s, 0 = profile)", "network.intra_latency_s", c.network.intra_latency_s);
    float_field(model, "stage bandwidth (bit/s, 0 = profile)", "network.stage_bandwidth_bps", c.network.stage_bandwidth_bps, "%.3g");
    float_field(model, "stage latency (s, 0 = profile)", "network.stage_latency_s", c.network.stage_latency_s);
    section("per replica: node speed and access link between replicas");
    draw_replica_settings(model, c);
    section("faults: scheduled failures, churn, survivors and stragglers");
    draw_faults();
    model.validate(c.cluster.mode == "remote" ? static_cast<int>(c.cluster.endpoints.size()) : -1);
}

}  // namespace tw::ui
