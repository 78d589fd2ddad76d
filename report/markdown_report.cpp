// A Markdown report of stored runs; see markdown_report.h.
#include "report/markdown_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/config_io.h"
#include "core/metric_names.h"
#include "core/output_file.h"
#include "core/hdee_plan.h"
#include "core/seed_spread.h"
#include "core/settings_diff.h"
#include "core/status.h"
#include "storage/run_groups.h"
#include "ui/logic/mean_band.h"
#include "ui/data/run_cache.h"
#if TW_HAVE_PLOT_RENDER
#include "ui/plot/offscreen.h"
#endif

namespace tw {
namespace {

namespace fs = std::filesystem;
constexpr double kNaN = NAN;
const char* const kSentMetrics[] = {metric::kBytesOuterSent, metric::kBytesIntraSent, metric::kBytesStageSent};
const char* const kReportFile = "report.md";
const char* const kBytesPng = "loss_vs_bytes.png";
const char* const kSimPng = "loss_vs_sim_time.png";

// What the report says about one run.
struct RunFacts {
    ui::RunData data;
    std::map<std::string, std::string> config;  // "outer.algorithm" → "'diloco'" (resolved TOML)
    std::optional<double> final_val;            // val.loss at its largest step, any node
    int64_t final_val_step = -1;
    double bytes_sent = 0;      // Σ nodes of their last outer + intra + stage sent counters
    int64_t replicas = 0;       // outer.replicas; 0 when unknown
    double sim_s = kNaN;        // largest simulated clock of any record
    double utilisation = kNaN;  // mean of the nodes' last round.utilisation, or compute / sim
    bool utilisation_from_rounds = false;
    double wall_s = kNaN;  // finished − created, or the last record's wall clock while running
    ui::Series val_vs_bytes, val_vs_sim;
    std::vector<double> bytes_step, sim_step;  // the step of each point of val_vs_bytes / val_vs_sim
};


std::string value_of(const std::map<std::string, std::string>& config, const std::string& key) {
    auto it = config.find(key);
    return it == config.end() ? "" : it->second;
}

// A TOML value for a table cell: strings without quotes, numbers in their shortest exact form
// (0.0030000000000000001 → 0.003), "|" escaped, newlines as spaces; "—" when the run has no such key.
std::string cell(const std::string& v) {
    if (v.empty()) return "—";
    std::string s = v;
    if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front())
        s = s.substr(1, s.size() - 2);
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (end && *end == '\0' && v.find_first_of(".eE") != std::string::npos && std::isfinite(d)) {
        for (int prec = 1; prec <= 17; ++prec) {
            char buf[40];
            std::snprintf(buf, sizeof buf, "%.*g", prec, d);
            if (std::strtod(buf, nullptr) == d) {
                s = buf;
                break;
            }
        }
    }
    std::string out;
    for (char c : s) out += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
    return out;
}

std::string with_commas(double v) {
    if (!std::isfinite(v)) return "—";
    std::string digits = std::to_string(static_cast<long long>(std::llround(v)));
    std::string out;
    const size_t first = digits[0] == '-' ? 1 : 0;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > first && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string fixed(double v, const char* fmt) {
    if (!std::isfinite(v)) return "—";
    char buf[48];
    std::snprintf(buf, sizeof buf, fmt, v);
    return buf;
}

// Seconds since the epoch of "2026-11-23T03:35:47.092Z"; NaN if it does not parse.
double parse_utc(const std::string& iso) {
    std::tm tm{};
    double frac = 0;
    int y, mo, d, h, mi;
    double s;
    if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%lf", &y, &mo, &d, &h, &mi, &s) != 6) return kNaN;
    tm.tm_year = y - 1900, tm.tm_mon = mo - 1, tm.tm_mday = d, tm.tm_hour = h, tm.tm_min = mi;
    tm.tm_sec = static_cast<int>(s);
    frac = s - tm.tm_sec;
    return static_cast<double>(timegm(&tm)) + frac;
}

// ---------------------------------------------------------------------------------------------
// Gathering
// ---------------------------------------------------------------------------------------------

// The runs asked for, in the order given (ids, then each group's runs oldest first), once each.
std::vector<int64_t> select_runs(RunStore& store, const ReportOptions& a) {
    std::vector<int64_t> ids;
    auto add = [&](int64_t id) {
        if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    };
    for (int64_t id : a.ids) {
        if (!store.get_run(id)) throw Error("no run with id " + std::to_string(id) + " in " + a.db_label);
        add(id);
    }
    for (const std::string& group : a.groups)
        for (int64_t id : unwrap(runs_in_group(store, group, a.db_label))) add(id);
    if (ids.empty()) throw Error("report needs run ids or --group NAME");
    return ids;
}

// The node whose val.loss series is the run's (the one with the most points; the first by name on
// a tie): the global model is evaluated once per round, by one node.
const ui::NodeData* val_node(const ui::RunData& d) {
    const ui::NodeData* best = nullptr;
    for (const auto& [name, n] : d.nodes)
        if (!n.val.empty() && (!best || n.val.size() > best->val.size())) best = &n;
    return best;
}

// Validation loss against the bytes all nodes have sent (each node's cumulative sent counters at
// that step, as the workbench's bytes axis reads them per node) and against the simulated clock.
void build_series(RunFacts& f) {
    const ui::NodeData* vn = val_node(f.data);
    if (!vn) return;
    for (size_t i = 0; i < vn->val_step.size(); ++i) {
        const double step = vn->val_step[i], y = vn->val[i];
        double bytes = 0;
        for (const auto& [name, n] : f.data.nodes) {
            const double b = ui::x_of(n, ui::XAxis::kBytes, step, kNaN, kNaN, nullptr);
            if (!std::isnan(b)) bytes += b;  // NaN: no counter yet at this step, i.e. nothing sent
        }
        const double sim = ui::x_of(*vn, ui::XAxis::kSimTime, step, vn->val_sim_s[i], vn->val_wall_s[i], nullptr);
        // The widget needs x non-decreasing; the panel drops points that go back the same way.
        if (f.val_vs_bytes.x.empty() || bytes >= f.val_vs_bytes.x.back())
            f.val_vs_bytes.x.push_back(bytes), f.val_vs_bytes.y.push_back(y), f.bytes_step.push_back(step);
        if (!std::isnan(sim) && (f.val_vs_sim.x.empty() || sim >= f.val_vs_sim.x.back()))
            f.val_vs_sim.x.push_back(sim), f.val_vs_sim.y.push_back(y), f.sim_step.push_back(step);
    }
}

RunFacts gather(RunStore& store, int64_t id) {
    RunFacts f;
    f.data = unwrap(ui::load_run(store, id));
    f.config = stored_key_values(unwrap(store.config_toml(id)));
    const std::string replicas = value_of(f.config, "outer.replicas");
    f.replicas = replicas.empty() ? 0 : std::atoll(replicas.c_str());
    f.final_val = f.data.summary.last_val_loss;
    for (const auto& [name, n] : f.data.nodes) {
        if (!n.val_step.empty()) f.final_val_step = std::max(f.final_val_step, static_cast<int64_t>(n.val_step.back()));
        for (const char* m : kSentMetrics) {
            auto it = n.bytes_final.find(m);
            if (it != n.bytes_final.end()) f.bytes_sent += it->second;
        }
    }
    // The last simulated and wall clocks may sit on any metric (a round's records come after its step's).
    double last_wall = kNaN;
    std::map<std::string, double> node_sim;
    for (const std::string& name : unwrap(store.metric_names(id)))
        for (const MetricRecord& m : unwrap(store.metrics(id, name))) {
            f.sim_s = std::isnan(f.sim_s) ? m.sim_s : std::max(f.sim_s, m.sim_s);
            last_wall = std::isnan(last_wall) ? m.wall_s : std::max(last_wall, m.wall_s);
            node_sim[m.node] = std::max(node_sim[m.node], m.sim_s);
        }
    std::map<std::string, double> last_util;  // rows come ordered by step: the last one wins
    for (const MetricRecord& m : unwrap(store.metrics(id, metric::kRoundUtilisation))) last_util[m.node] = m.value;
    if (!last_util.empty()) {
        double sum = 0;
        for (const auto& [node, u] : last_util) sum += u;
        f.utilisation = sum / static_cast<double>(last_util.size());
        f.utilisation_from_rounds = true;
    } else {
        double sum = 0;
        int n = 0;
        for (const TraceNode& nd : f.data.traces ? f.data.traces->nodes : std::vector<TraceNode>{}) {
            double compute = 0;
            for (const auto& [step, c] : nd.trace.compute_s) compute += c;
            if (node_sim[nd.name] > 0 && !nd.trace.compute_s.empty()) sum += compute / node_sim[nd.name], ++n;
        }
        if (n > 0) f.utilisation = sum / n;
    }
    const RunSummary& s = f.data.summary;
    if (s.finished_at) f.wall_s = parse_utc(*s.finished_at) - parse_utc(s.created_at);
    if (std::isnan(f.wall_s)) f.wall_s = last_wall;
    build_series(f);
    return f;
}

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

std::string run_label(const RunFacts& f) {
    return "run " + std::to_string(f.data.summary.id) + " " + f.data.summary.name;
}

void write_settings(std::ostream& md, const std::vector<RunFacts>& runs) {
    md << "## Settings\n\n|  |";
    for (const RunFacts& f : runs) md << " run " << f.data.summary.id << " |";
    md << "\n|---|";
    for (size_t i = 0; i < runs.size(); ++i) md << "---|";
    md << "\n";
    auto row = [&](const std::string& label, auto value) {
        md << "| " << label << " |";
        for (const RunFacts& f : runs) md << " " << value(f) << " |";
        md << "\n";
    };
    row("name", [](const RunFacts& f) { return cell(f.data.summary.name); });
    row("id", [](const RunFacts& f) { return std::to_string(f.data.summary.id); });
    row("status", [](const RunFacts& f) {
        const RunSummary& s = f.data.summary;
        return std::string(to_string(s.status)) + (s.reason.empty() ? "" : ": " + cell(s.reason));
    });
    row("started (UTC)", [](const RunFacts& f) {
        std::string t = f.data.summary.created_at.substr(0, 19);
        std::replace(t.begin(), t.end(), 'T', ' ');
        return t;
    });
    if (std::any_of(runs.begin(), runs.end(), [](const RunFacts& f) { return !f.data.summary.group.empty(); }))
        row("group", [](const RunFacts& f) { return cell(f.data.summary.group); });
    row("algorithm", [](const RunFacts& f) { return cell(value_of(f.config, "outer.algorithm")); });
    row("replicas", [](const RunFacts& f) { return cell(value_of(f.config, "outer.replicas")); });
    row("steps", [](const RunFacts& f) {
        const std::string planned = value_of(f.config, "train.steps");
        return std::to_string(f.data.summary.last_step.value_or(0)) + (planned.empty() ? "" : " of " + planned);
    });
    // Each method's defining knobs, then what differs (core/settings_diff.h, as `runs compare` and
    // History).
    std::vector<std::map<std::string, std::string>> configs;
    for (const RunFacts& f : runs) configs.push_back(f.config);
    const SettingsDiff diff = settings_that_differ(configs);
    size_t differing = 0;
    for (size_t k = 0; k < diff.keys.size(); ++k) {
        const auto& cells = diff.cells[k];
        if (std::any_of(cells.begin(), cells.end(), [&](const std::string& c) { return c != cells.front(); })) ++differing;
        size_t i = 0;
        row("`" + diff.keys[k] + "`", [&](const RunFacts&) { return cell(cells[i++]); });
    }
    md << "\n";
    if (runs.size() > 1 && differing == 0) md << "The resolved configs are identical apart from the name.\n\n";
    if (runs.size() > 1 && differing > 0)
        md << "Config keys are listed where their values differ between the runs (" << differing
           << "), after each method's defining ones; n/a: the run's algorithm does not read the key; the full "
              "resolved configs are at the end.\n\n";
}

// Runs whose settings differ only in run.seed, as points (core/seed_spread.h): indices into runs.
using SeedGroups = std::vector<std::vector<size_t>>;
SeedGroups seed_groups(const std::vector<RunFacts>& runs) {
    std::vector<std::map<std::string, std::string>> configs;
    for (const RunFacts& f : runs) configs.push_back(f.config);
    return group_over_seeds(configs);
}
bool has_repeats(const SeedGroups& groups) {
    return std::any_of(groups.begin(), groups.end(), [](const std::vector<size_t>& g) { return g.size() >= 2; });
}

// One row per point: the final validation loss as mean ± sample standard deviation over its seeds,
// its range, bytes and simulated time, and whether it differs from the first point by more than
// the two spreads together (the registry's rule).
void write_seed_summary(std::ostream& md, const std::vector<RunFacts>& runs, const SeedGroups& groups) {
    md << "## Over seeds\n\nRuns whose settings differ only in `run.seed` form one point: final validation "
          "loss as mean ± sample standard deviation over its seeds, with the range; a difference from the first "
          "point counts only when it is larger than the two standard deviations together.\n\n"
          "| point | runs | seeds | final val loss | min – max | bytes sent per replica | simulated time | "
          "against the first point |\n|---|---|---|---:|---:|---:|---:|---|\n";
    Spread first;
    for (size_t g = 0; g < groups.size(); ++g) {
        std::vector<double> val, per_replica, sim;
        std::string ids, seeds;
        for (size_t i : groups[g]) {
            const RunFacts& f = runs[i];
            if (f.final_val) val.push_back(*f.final_val);
            if (f.replicas > 0) per_replica.push_back(f.bytes_sent / static_cast<double>(f.replicas));
            if (std::isfinite(f.sim_s)) sim.push_back(f.sim_s);
            ids += (ids.empty() ? "" : ", ") + std::to_string(f.data.summary.id);
            seeds += (seeds.empty() ? "" : ", ") + cell(value_of(f.config, "run.seed"));
        }
        const Spread v = spread_of(val), b = spread_of(per_replica), t = spread_of(sim);
        if (g == 0) first = v;
        const std::string against = g > 0 ? against_text(v, first) : "—";
        md << "| " << cell(runs[groups[g].front()].data.summary.name) << " | " << ids << " | " << seeds << " | "
           << format_mean_sd(v) << " | " << (v.n ? fixed(v.min, "%.4f") + " – " + fixed(v.max, "%.4f") : "—")
           << " | " << (b.n ? with_commas(b.mean) : "—") << " | "
           << (t.n ? format_mean_sd(t, 2) + " s" : "—") << " | " << against << " |\n";
    }
    md << "\n";
}

void write_summary(std::ostream& md, const std::vector<RunFacts>& runs) {
    md << "## Summary\n\n"
          "| run | final val loss | bytes sent (all nodes) | bytes sent per replica | simulated time | utilisation | "
          "wall time |\n|---|---:|---:|---:|---:|---:|---:|\n";
    for (const RunFacts& f : runs) {
        std::string val = "—";
        if (f.final_val) val = fixed(*f.final_val, "%.4f") + " (step " + std::to_string(f.final_val_step) + ")";
        const std::string per_replica = f.replicas > 0 ? with_commas(f.bytes_sent / double(f.replicas)) : "—";
        std::string util = fixed(100 * f.utilisation, "%.1f%%");
        if (std::isfinite(f.utilisation) && !f.utilisation_from_rounds) util += " (compute/sim)";
        std::string wall = fixed(f.wall_s, "%.1f s");
        if (f.data.summary.status == RunStatus::kRunning && std::isfinite(f.wall_s)) wall += " so far";
        md << "| " << cell(run_label(f)) << " | " << val << " | " << with_commas(f.bytes_sent) << " | " << per_replica
           << " | " << fixed(f.sim_s, "%.2f s") << " | " << util << " | " << wall << " |\n";
    }
    md << "\nFinal val loss: the last `val.loss` of any node. Bytes: the sum over nodes of the last "
          "`bytes.outer.sent`, `bytes.intra.sent` and `bytes.stage.sent`; per replica: divided by "
          "`outer.replicas`. Simulated time: the largest `sim_s` of any record. Utilisation: the mean of "
          "the nodes' last `round.utilisation`, or compute seconds over simulated seconds when the run has "
          "no rounds. Wall time: started to finished.\n\n";
}

// HDEE runs' combined figures (core/hdee_plan.h names: hdee.ENS.RULE.DOMAIN at node "hdee"), one
// row per run, ensemble and domain; nothing for runs without them.
void write_hdee(std::ostream& md, RunStore& store, const std::vector<RunFacts>& runs) {
    bool header = false;
    for (const RunFacts& f : runs) {
        // ensemble → domain → rule or "expert_E" → value
        std::map<std::string, std::map<std::string, std::map<std::string, double>>> fig;
        for (const std::string& name : unwrap(store.metric_names(f.data.summary.id))) {
            if (name.rfind("hdee.", 0) != 0) continue;
            const size_t a = name.find('.', 5), b = a == std::string::npos ? a : name.find('.', a + 1);
            if (b == std::string::npos || name.find('.', b + 1) != std::string::npos) continue;
            const std::string ens = name.substr(5, a - 5), what = name.substr(a + 1, b - a - 1), dom = name.substr(b + 1);
            if (what != kHdeeLogprobMean && what != kHdeePosterior && what.rfind(kHdeeExpertPrefix, 0) != 0) continue;
            for (const MetricRecord& m : unwrap(store.metrics(f.data.summary.id, name)))
                if (m.node == kHdeeMetricNode) fig[ens][dom][what] = m.value;
        }
        if (fig.empty()) continue;
        if (!header)
            md << "## HDEE ensembles\n\n| run | ensemble | domain | logprob_mean | posterior | best single expert |\n"
                  "|---|---|---|---:|---:|---|\n";
        header = true;
        for (const char* ens : kHdeeEnsembleNames)
            for (const auto& [dom, v] : fig[ens]) {
                std::string best = "—";
                double lo = INFINITY;
                for (const auto& [what, x] : v)
                    if (what.rfind(kHdeeExpertPrefix, 0) == 0 && x < lo)
                        lo = x, best = fixed(x, "%.4f") + " (" + what.substr(std::string(kHdeeExpertPrefix).size()) + ")";
                auto at = [&](const char* k) { return v.count(k) ? fixed(v.at(k), "%.4f") : std::string("—"); };
                md << "| " << cell(run_label(f)) << " | " << ens << " | " << dom << " | " << at(kHdeeLogprobMean) << " | "
                   << at(kHdeePosterior) << " | " << best << " |\n";
            }
    }
    if (header)
        md << "\nNLL in nats/token on each domain's evaluation documents (docs/hdee.md): the log-probability "
              "mean, the posterior mixture, and the ensemble's best expert alone.\n\n";
}

// Both plots; returns a line per plot for the Markdown (an image link, or why there is none).
std::vector<std::string> write_plots(const fs::path& dir, std::vector<RunFacts>& runs, const SeedGroups& groups,
                                     const ReportOptions& a) {
    std::vector<std::string> md;
    std::string missing;
    for (const RunFacts& f : runs)
        if (f.val_vs_bytes.x.empty()) missing += (missing.empty() ? "" : ", ") + run_label(f);
    const std::string note =
        missing.empty() ? "" : "\n\nNo `val.loss` recorded (empty in the plots): " + cell(missing) + ".";
#if TW_HAVE_PLOT_RENDER
    for (int which = 0; which < 2; ++which) {
        const bool bytes = which == 0;
        std::vector<ui::PlotSeries> series;
        double lo_pos = INFINITY, hi = 0;
        // With seeds, a point's runs are one line: their mean with a band from the lowest to the highest.
        std::vector<ui::MeanBand> bands;
        bands.reserve(groups.size());
        const bool over_seeds = has_repeats(groups);
        for (size_t g = 0; g < (over_seeds ? groups.size() : runs.size()); ++g) {
            ui::PlotSeries ps;
            if (over_seeds) {
                std::vector<ui::MemberCurve> members;
                for (size_t i : groups[g]) {
                    const RunFacts& f = runs[i];
                    members.push_back({bytes ? f.bytes_step : f.sim_step, (bytes ? f.val_vs_bytes : f.val_vs_sim).x,
                                       (bytes ? f.val_vs_bytes : f.val_vs_sim).y});
                }
                bands.push_back(ui::mean_band(members, ui::BandKind::kMinMax));
                ps.label = runs[groups[g].front()].data.summary.name + " (" + std::to_string(groups[g].size()) +
                           (groups[g].size() == 1 ? " seed)" : " seeds)");
                ps.data = &bands.back().mean;
                ps.band_lo = &bands.back().lo;
                ps.band_hi = &bands.back().hi;
            } else {
                ps.label = run_label(runs[g]);
                ps.data = bytes ? &runs[g].val_vs_bytes : &runs[g].val_vs_sim;
            }
            for (double x : ps.data->x)
                if (x > 0) lo_pos = std::min(lo_pos, x), hi = std::max(hi, x);
            ps.color = ui::plot_palette(g);
            ps.points = true;    // one point per round: a one-point run (DDP's final evaluation) shows
            ps.smooth = false;
            series.push_back(std::move(ps));
        }
        ui::PlotOptions opt;
        opt.x_label = bytes ? "bytes sent, all nodes (cumulative)" : "simulated time";
        opt.x_unit = bytes ? ui::AxisUnit::kBytes : ui::AxisUnit::kSeconds;
        opt.y_label = "validation loss (nats/token)";
        opt.line_width = 2;
        // Bytes of different methods span decades (DDP against SparseLoCo): log x when they do.
        opt.log_x = bytes && hi > 0 && hi / lo_pos >= 100;
        const fs::path png = dir / (bytes ? kBytesPng : kSimPng);
        check(ui::render_plot_png(png.string(), series, opt, ui::OffscreenOptions{a.width, a.height, true}));
        const char* title = bytes ? "Validation loss against bytes sent" : "Validation loss against simulated time";
        md.push_back(std::string("## ") + title + "\n\n![" + title + "](" + (bytes ? kBytesPng : kSimPng) + ")" +
                     (bytes && opt.log_x ? "\n\nx axis: log scale." : "") +
                     (over_seeds ? "\n\nOne line per point: the mean over its seeds, the band from the lowest "
                                   "to the highest seed."
                                 : "") +
                     note + "\n\n");
    }
#else
    (void)dir, (void)a, (void)groups;
    md.push_back(
        "## Plots\n\nThis `thinwire` was built without ImGui (libimgui-dev), which the off-screen plot "
        "rendering needs: install it and rebuild to get `" +
        std::string(kBytesPng) + "` and `" + kSimPng + "`." + note + "\n\n");
#endif
    return md;
}

void write_configs(std::ostream& md, RunStore& store, const std::vector<RunFacts>& runs) {
    md << "## Resolved configs\n\n";
    for (const RunFacts& f : runs) {
        md << "<details><summary>" << run_label(f) << "</summary>\n\n```toml\n"
           << unwrap(store.config_toml(f.data.summary.id)) << "```\n\n</details>\n\n";
    }
}

ReportFiles write_report_or_throw(RunStore& store, const ReportOptions& a) {
    const std::vector<int64_t> ids = select_runs(store, a);
    const fs::path dir = a.out.empty() ? fs::path("report-" + std::to_string(ids.front())) : fs::path(a.out);
    // Neither the folder nor a file in it may be the run store, even with --force (core/output_file.h).
    check(check_output_target(dir.string(), store.path()));
    for (const char* name : {kReportFile, kBytesPng, kSimPng}) check(check_output_target((dir / name).string(), store.path()));
    if (!a.force) {
        for (const char* name : {kReportFile, kBytesPng, kSimPng})
            if (fs::exists(dir / name))
                throw Error((dir / name).string() + " already exists; pass --force to overwrite it");
    }
    std::vector<RunFacts> runs;
    for (int64_t id : ids) runs.push_back(gather(store, id));

    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw Error("cannot create " + dir.string() + ": " + ec.message());
    const SeedGroups groups = seed_groups(runs);
    const std::vector<std::string> plots = write_plots(dir, runs, groups, a);  // before report.md, which links them

    std::ostringstream md;
    // The title names the runs when there are few; the tables name them all.
    md << "# thinwire report: " << (runs.size() == 1 ? "run" : "runs");
    for (size_t i = 0; i < runs.size(); ++i)
        md << (i ? ", " : " ")
           << (runs.size() <= 3 ? cell(run_label(runs[i]).substr(4)) : std::to_string(runs[i].data.summary.id));
    const std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", std::gmtime(&now));
    md << "\n\nFrom `" << a.db_label << "`, " << stamp << " UTC.\n\n";
    write_settings(md, runs);
    write_summary(md, runs);
    if (has_repeats(groups)) write_seed_summary(md, runs, groups);
    write_hdee(md, store, runs);
    for (const std::string& p : plots) md << p;
    write_configs(md, store, runs);

    const fs::path file = dir / kReportFile;
    std::ofstream out(file);
    if (!out || !(out << md.str()) || !out.flush()) throw Error("cannot write " + file.string());
    ReportFiles files;
    files.report = file.string();
#if TW_HAVE_PLOT_RENDER
    files.plots = {(dir / kBytesPng).string(), (dir / kSimPng).string()};
#endif
    return files;
}

}  // namespace

Result<ReportFiles> write_report(RunStore& store, const ReportOptions& options) {
    try {
        return write_report_or_throw(store, options);
    } catch (const Error& e) {
        return Result<ReportFiles>::error(e.what());
    }
}

}  // namespace tw
