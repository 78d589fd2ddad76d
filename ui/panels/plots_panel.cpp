// Live plots; see plots_panel.h.
#include "ui/panels/plots_panel.h"

#include <imgui.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/config_io.h"
#include "core/output_file.h"
#include "ui/logic/plot_fit.h"
#include "ui/logic/round_mean.h"
#include "ui/plot/offscreen.h"

#include "ui/panels/fault_markers.h"


namespace tw::ui {
namespace {

const char* const kAxisNames[] = {"step", "tokens", "bytes sent (cumulative)", "simulated time", "wall time"};

ImU32 shade(ImU32 c, float alpha) {
    ImVec4 f = ImGui::ColorConvertU32ToFloat4(c);
    f.w = alpha;
    return ImGui::ColorConvertFloat4ToU32(f);
}

}  // namespace

PlotsPanel::Built& PlotsPanel::node_curve(const std::string& key, const RunData& d, const NodeData& nd, bool val,
                                          const WhatIf& what_if, const void* replay, const RetimedRun* retimed,
                                          const std::string& node) {
    Built& b = built_[key];
    if (b.from == &d && b.axis == axis_ && b.what_if == what_if && b.replay == replay) return b;
    // A run that cannot be re-timed keeps its recorded axis.
    const auto* rt = !retimed || !retimed->nodes.count(node) ? nullptr : &retimed->nodes.at(node).clock_at;
    const auto& steps = val ? nd.val_step : nd.step;
    const auto& ys = val ? nd.val : nd.loss;
    b.data = Series{};
    b.member = MemberCurve{};
    // On the bytes axis the steps of a round (those that ran after the same bytes) sit at the bytes
    // sent once their round is over — what their training cost — and are drawn as the round's mean
    // below; a validation point sits at its round's bytes too.
    const bool bytes = static_cast<XAxis>(axis_) == XAxis::kBytes;
    std::vector<double> round_end;
    if (bytes && !val) {
        std::vector<double> before(steps.size()), at(steps.size());
        for (size_t k = 0; k < steps.size(); ++k) {
            before[k] = x_of(nd, XAxis::kBytes, steps[k] - 1, nd.sim_s[k], nd.wall_s[k], rt);
            at[k] = x_of(nd, XAxis::kBytes, steps[k], nd.sim_s[k], nd.wall_s[k], rt);
        }
        round_end = round_end_bytes(before, at);
    }
    for (size_t i = 0; i < steps.size(); ++i) {
        const double x = bytes && !val ? round_end[i]
                                       : x_of(nd, static_cast<XAxis>(axis_), steps[i], (val ? nd.val_sim_s : nd.sim_s)[i],
                                              (val ? nd.val_wall_s : nd.wall_s)[i], rt);
        if (std::isnan(x) || (!b.data.x.empty() && x < b.data.x.back())) continue;
        b.data.x.push_back(x);
        b.data.y.push_back(ys[i]);
        b.member.step.push_back(steps[i]);
        b.member.x.push_back(x);
        b.member.y.push_back(ys[i]);
    }
    if (bytes && !val) b.data = round_means(b.data), b.member = round_means(b.member);
    b.from = &d, b.axis = axis_, b.what_if = what_if, b.replay = replay;
    return b;
}

PlotsPanel::Line& PlotsPanel::line(const std::string& key, const std::string& signature,
                                   const std::function<std::vector<MemberCurve>()>& members) {
    Line& l = lines_[key];
    if (l.signature != signature) {
        l.band = mean_band(members(), band_ == 1 ? BandKind::kStdDev : BandKind::kMinMax);
        l.signature = signature;
    }
    return l;
}

std::string PlotsPanel::setting(const RunData& d, int64_t id, const std::string& key) {
    if (key.empty() || key == "run") return std::to_string(id);
    auto& kv = settings_[&d];
    if (kv.empty() && d.cfg_ok) kv = config_key_values(to_toml(d.cfg));
    auto it = kv.find(key);
    if (it == kv.end()) return "-";
    std::string v = it->second;
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    return v;
}

void PlotsPanel::rebuild(ViewState& v) {
    series_.clear();
    owners_.clear();
    markers_.clear();
    x_label_ = kAxisNames[axis_];
    if (!v.cache) return;
    const std::string colour_key = colour_by_, group_key = group_by_;
    std::map<std::string, size_t> colour_of;  // setting value → palette index, in order of appearance
    auto colour = [&](const std::string& value) {
        auto it = colour_of.emplace(value, colour_of.size()).first;
        return plot_palette(it->second);
    };
    // Each run's mean lines, and (grouping) the members of each group.
    struct GroupAcc {
        std::vector<const MeanBand*> train;  // the runs' lines
        std::vector<const Built*> val;       // the runs' validation curves
        std::string signature;
        size_t runs = 0;
        std::string tooltip;
    };
    std::map<std::string, GroupAcc> groups;
    std::vector<std::string> group_order;
    std::string retimed_for;
    const bool bands = bands_shown(v.runs.size(), bands_asked_);  // ui/logic/plot_fit.h
    for (int64_t id : v.runs) {
        auto it = v.cache->loaded.find(id);
        if (it == v.cache->loaded.end()) continue;
        const RunData& d = *it->second;
        auto wi = v.what_if.find(id);
        const WhatIf what_if = wi == v.what_if.end() ? WhatIf{} : wi->second;
        // The what-if's replay runs on a background task: until it is there the curve keeps its
        // recorded axis, and it is rebuilt when the replay arrives (its pointer changes).
        std::shared_ptr<const Result<RetimedRun>> replay;
        if (!what_if.empty() && axis_ == static_cast<int>(XAxis::kSimTime)) replay = v.retimes.get(id, it->second, what_if);
        const RetimedRun* retimed = replay && *replay ? &replay->value() : nullptr;
        if (retimed) retimed_for = what_if.label();
        if (show_faults_) {
            BuiltMarks& m = marks_[id];
            if (m.from != &d || m.axis != axis_ || m.replay != replay.get()) {
                m.marks = fault_marks(d, id, static_cast<XAxis>(axis_), retimed);
                m.from = &d, m.axis = axis_, m.replay = replay.get();
            }
            append_markers(m.marks, markers_);
        }
        // Members: every node reporting a training loss; the validation series is the evaluating
        // node's (the one with the most validation points: the global model, once per round).
        std::vector<std::pair<std::string, Built*>> replica_curves;
        Built* val = nullptr;
        size_t val_points = 0;
        const std::string run_key = std::to_string(id);
        for (auto& [node, nd] : d.nodes) {
            if (!nd.loss.empty()) {
                Built& b = node_curve(run_key + "/" + node + "/train", d, nd, false, what_if, replay.get(), retimed, node);
                replica_curves.emplace_back(node, &b);
            }
            if (nd.val.size() > val_points) {
                val_points = nd.val.size();
                val = &node_curve(run_key + "/" + node + "/val", d, nd, true, what_if, replay.get(), retimed, node);
            }
        }
        // The signature of a run's line: its data, axis, replay and band kind.
        char sig[160];
        std::snprintf(sig, sizeof sig, "%p/%d/%p/%d/%s", static_cast<const void*>(&d), axis_, replay.get(), band_,
                      what_if.label().c_str());
        Line& run_train = line(run_key + "/train", sig, [&] {
            std::vector<MemberCurve> m;
            for (auto& [node, b] : replica_curves) m.push_back(b->member);
            return m;
        });
        const size_t replicas = replica_curves.size();
        // Round means (several steps per round on the bytes axis) are drawn as they are; a curve of
        // a point per step (DDP, one node) keeps the smoothing.
        bool per_step = true;
        for (auto& [node, b] : replica_curves)
            per_step = per_step && 2 * b->data.x.size() >= d.nodes.at(node).step.size();
        const bool smooth_train = static_cast<XAxis>(axis_) != XAxis::kBytes || per_step;
        const std::string tip = d.key_settings + (what_if.empty() ? "" : retimed ? " (re-timed for " + what_if.label() + ")" : "");
        if (!group_key.empty()) {
            const std::string value = setting(d, id, group_key);
            auto [g, fresh] = groups.try_emplace(value);
            if (fresh) group_order.push_back(value);
            if (replicas > 0) g->second.train.push_back(&run_train.band);
            if (val) g->second.val.push_back(val);
            g->second.signature += std::string(sig) + ";";
            g->second.runs++;
            if (g->second.tooltip.empty()) g->second.tooltip = tip;
            continue;
        }
        const std::string cvalue = setting(d, id, colour_key);
        const ImU32 col = colour(colour_key == "run" || colour_key.empty() ? run_key : cvalue);
        std::string label = "run " + run_key + " " + d.summary.name;
        if (!colour_key.empty() && colour_key != "run") label += " (" + cvalue + ")";
        if (show_train_ && replicas > 0) {
            PlotSeries s;
            s.label = label;
            s.data = &run_train.band.mean;
            if (replicas > 1 && bands) s.band_lo = &run_train.band.lo, s.band_hi = &run_train.band.hi;
            s.color = col;
            s.smooth = smooth_train;
            s.tooltip = "mean of " + std::to_string(replicas) + " replica(s); " + tip;
            series_.push_back(std::move(s));
            owners_.push_back(run_key);
            if (replicas_ && replicas > 1)
                for (auto& [node, b] : replica_curves) {
                    PlotSeries r;
                    r.label = label + " / " + node;
                    r.data = &b->data;
                    r.color = shade(col, 0.45f);
                    r.smooth = smooth_train;
                    r.in_legend = false;
                    r.tooltip = tip;
                    series_.push_back(std::move(r));
                    owners_.push_back(run_key);
                }
        }
        if (show_val_ && val) {
            PlotSeries s;
            s.label = label + " val";
            s.data = &val->data;
            s.color = col;
            s.points = true;
            s.smooth = false;  // one point per round: drawn as recorded
            s.in_legend = !show_train_ || replicas == 0;
            s.tooltip = tip;
            series_.push_back(std::move(s));
            owners_.push_back(run_key);
        }
    }
    // Groups: the mean over their runs' lines, with the band across the runs.
    for (const std::string& value : group_order) {
        GroupAcc& g = groups[value];
        const std::string key = "G:" + value;
        const ImU32 col = colour(value);
        const std::string label = group_key + " = " + value + " (" + std::to_string(g.runs) + " run" + (g.runs == 1 ? "" : "s") + ")";
        if (show_train_ && !g.train.empty()) {
            Line& l = line(key + "/train", g.signature, [&] {
                std::vector<MemberCurve> m;
                for (const MeanBand* b : g.train) m.push_back({b->step, b->mean.x, b->mean.y});
                return m;
            });
            PlotSeries s;
            s.label = label;
            s.data = &l.band.mean;
            if (g.runs > 1 && bands) s.band_lo = &l.band.lo, s.band_hi = &l.band.hi;
            s.color = col;
            s.smooth = static_cast<XAxis>(axis_) != XAxis::kBytes;  // round means: drawn as they are
            s.tooltip = "mean of " + std::to_string(g.runs) + " run(s) (each the mean of its replicas)";
            series_.push_back(std::move(s));
            owners_.push_back(key);
        }
        if (show_val_ && !g.val.empty()) {
            Line& l = line(key + "/val", g.signature, [&] {
                std::vector<MemberCurve> m;
                for (const Built* b : g.val) m.push_back(b->member);
                return m;
            });
            PlotSeries s;
            s.label = label + " val";
            s.data = &l.band.mean;
            if (g.runs > 1 && bands) s.band_lo = &l.band.lo, s.band_hi = &l.band.hi;
            s.color = col;
            s.points = true;
            s.smooth = false;
            s.in_legend = !show_train_ || g.train.empty();
            s.tooltip = "validation: mean of " + std::to_string(g.runs) + " run(s)";
            series_.push_back(std::move(s));
            owners_.push_back(key);
        }
    }
    if (!retimed_for.empty()) x_label_ += " on " + retimed_for + " (what-if)";
    // Hidden rows (a legend click) hide every curve of their run or group.
    for (size_t i = 0; i < series_.size(); ++i) {
        auto h = v.hidden_nodes.find(owners_[i]);
        series_[i].visible = h == v.hidden_nodes.end() || !h->second;
    }
}

void PlotsPanel::export_data(ViewState& v, bool json) const {
    const std::string path = std::string(export_path_) + (json ? ".json" : ".csv");
    // Through a temporary file, never over an existing one nor the run store (core/output_file.h).
    Status st = write_output_file(path, Overwrite::kRefuse, store_path_, [&](std::ostream& out) {
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
                for (size_t i = 0; i < s.data->x.size(); ++i)
                    out << '"' << s.label << "\"," << s.data->x[i] << ',' << s.data->y[i] << '\n';
            }
            first = false;
        }
        if (json) out << "\n]\n";
        return Status::ok();
    });
    v.status_line = st ? "wrote " + std::filesystem::absolute(path).string() : st.message() + " (choose another name)";
}

void PlotsPanel::export_png(ViewState& v, const PlotOptions& opt) {
    // The software renderer `thinwire report` uses: the whole plot with its axes, labels and
    // legend, on white, at a size of its own; never over an existing file.
    const std::string path = std::string(export_path_) + ".png";
    if (Status st = check_output_target(path, store_path_); !st) {
        v.status_line = st.message();
        return;
    }
    if (std::filesystem::exists(path)) {
        v.status_line = path + " exists (not replaced; choose another name)";
        return;
    }
    PlotOptions o = opt;
    o.markers = &markers_;
    Status st = render_plot_png(path, series_, o, OffscreenOptions{1200, 700, true});
    v.status_line = st ? "wrote " + std::filesystem::absolute(path).string() + " (1200×700)" : st.message();
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
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("debiased EMA of the training loss; validation points are never smoothed");
    // Second row: how runs become lines.
    ImGui::Checkbox("replicas", &replicas_);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("each replica's own curve under its run's mean");
    ImGui::SameLine();
    const char* bands[] = {"band: min-max", "band: ± std"};
    ImGui::SetNextItemWidth(130);
    ImGui::Combo("##band", &band_, bands, 2);
    ImGui::SameLine();
    const char* shown[] = {"bands: auto", "bands: off", "bands: on"};
    int pick = bands_asked_ + 1;
    ImGui::SetNextItemWidth(110);
    if (ImGui::Combo("##bands", &pick, shown, 3)) bands_asked_ = pick - 1;
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("auto: bands while at most 4 runs (or groups) are plotted");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(150);
    ImGui::InputTextWithHint("colour by", "run or a config key", colour_by_, sizeof colour_by_);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("run, or a dotted config key: outer.algorithm, outer.topk_density, pipeline.rank, ...");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(150);
    ImGui::InputTextWithHint("group by", "none, or a config key", group_by_, sizeof group_by_);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("runs sharing this setting's value become one line: their mean, with a band across them\n(run.seed for seeds, a sweep's key for its points)");
    ImGui::SetNextItemWidth(140);
    ImGui::InputText("##export", export_path_, sizeof export_path_);
    ImGui::SameLine();
    if (ImGui::Button("CSV")) export_data(v, false);
    ImGui::SameLine();
    if (ImGui::Button("JSON")) export_data(v, true);
    ImGui::SameLine();
    const bool png = ImGui::Button("PNG");
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("the plot with its axes, labels and legend, 1200×700, on white");

    rebuild(v);
    PlotOptions opt;
    opt.x_label = x_label_;
    opt.y_label = "loss (nats/token)";
    const AxisUnit units[] = {AxisUnit::kCount, AxisUnit::kCount, AxisUnit::kBytes, AxisUnit::kSeconds, AxisUnit::kSeconds};
    opt.x_unit = units[axis_];
    opt.log_x = log_x_;
    opt.log_y = log_y_;
    opt.smoothing = smoothing_;
    opt.markers = &markers_;
    // A run's row is coloured by its training line; its validation dots share the colour, so two
    // notes say which is which (the training line is a round mean on the bytes axis, where every
    // step of a round sits at the same bytes).
    bool any_train = false, any_val = false;
    for (const PlotSeries& s : series_) (s.points ? any_val : any_train) |= s.visible;
    if (any_train && any_val) {
        const bool bytes = static_cast<XAxis>(axis_) == XAxis::kBytes;
        opt.legend_notes.push_back({bytes ? "train (round mean)" : "train", false});
        opt.legend_notes.push_back({"validation", true});
    }
    if (series_.empty()) ImGui::TextDisabled("tick runs in History (or start one) to plot them");
    rect_ = plot("loss", series_, opt, view_, ImVec2(0, 0));
    if (png) export_png(v, opt);
    // A legend click toggles a run's (or group's) row: remember it for every curve of that row.
    for (size_t i = 0; i < series_.size(); ++i)
        if (series_[i].in_legend) v.hidden_nodes[owners_[i]] = !series_[i].visible;
}

}  // namespace tw::ui
