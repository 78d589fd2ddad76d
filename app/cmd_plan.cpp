// `thinwire plan [FILE] [--set k=v]... [--variant NAME]... [--compare]`: each run of a layout (its
// variants, sweep points and seeds, one plan each): its bytes, compute, exposed
// communication, utilisation and simulated wall-clock, instantly and without data, from
// engine/plan/planner.h (the flops compute model, the codecs' byte formulas, the timeline replay).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "app/commands.h"
#include "app/run_tables.h"
#include "app/toml_file.h"
#include "core/config_io.h"
#include "core/network.h"
#include "engine/plan/planner.h"
#include "core/run_kind.h"

namespace tw::cli {
namespace {

struct PlanArgs : LayoutArgs {
    bool compare = false;
};

// The algorithms --compare puts side by side (the layout's other settings kept).
const std::vector<std::pair<std::string, std::vector<std::string>>>& compared() {
    static const std::vector<std::pair<std::string, std::vector<std::string>>> rows = {
        {"DDP", {"outer.algorithm=\"ddp\""}},
        {"DiLoCo", {"outer.algorithm=\"diloco\""}},
        {"Streaming DiLoCo FP4", {"outer.algorithm=\"streaming_diloco\"", "outer.dtype=\"fp4\""}},
        {"SparseLoCo 1.56%", {"outer.algorithm=\"sparseloco\"", "outer.topk_chunk=64", "outer.topk_k=64"}},
        {"SparseLoCo 3.1%", {"outer.algorithm=\"sparseloco\"", "outer.topk_chunk=64", "outer.topk_k=128"}},
        {"NoLoCo", {"outer.algorithm=\"noloco\""}},
        {"DeMo", {"outer.algorithm=\"demo\""}},
    };
    return rows;
}

// One run of the layout (a variant, sweep point or seed) as the planner takes it.
struct PlannedRun {
    std::string name;     // the variant / point name ("" for a file without variants)
    RunConfig cfg;        // under the flops compute model
    std::string refused;  // why it has no config ("" = it has one)
    std::string skipped;  // a run kind the planner does not model, and why ("" = planned)
};

// Every selected run of the layout, each under the flops model (a measured one has nothing to
// measure): put first, so the layout's [compute] keys (hardware, node_speed) apply. A run whose
// config only the flops model refuses is read as written, so a SkipPipe layout that pins its stage
// times or an HDEE layout is named as not planned rather than as a bad file.
std::vector<PlannedRun> load_runs(const PlanArgs& a) {
    std::vector<std::string> sets{"compute.model=\"flops\""};
    sets.insert(sets.end(), a.sets.begin(), a.sets.end());
    const PlanSelection select{a.variants, true};
    auto flops = load_run_plan(a.file, sets, select);
    std::vector<PlannedRun> out;
    if (!flops) {  // every run refused under flops: named as not planned only if its kind is not modelled
        const RunPlan as_written = unwrap(load_run_plan(a.file, a.sets, select));
        for (auto& [name, cfg] : as_written.runs) {
            const bool modelled = !*run_kind_of(cfg).not_planned;
            out.push_back({name, cfg, modelled ? flops.message() : "", ""});
        }
    } else {
        for (auto& [name, cfg] : flops->runs) out.push_back({name, cfg, "", ""});
    }
    if (flops && !flops->failed.empty()) {
        auto as_written = load_run_plan(a.file, a.sets, select);
        for (auto& [name, why] : flops->failed) {
            PlannedRun r{name, {}, why, ""};
            if (as_written)
                for (auto& [wname, wcfg] : as_written->runs)
                    if ((wname == name || wname.rfind(name + " ", 0) == 0) && *run_kind_of(wcfg).not_planned)
                        r.cfg = wcfg, r.refused.clear();
            out.push_back(std::move(r));
        }
    }
    for (PlannedRun& r : out) {
        if (!r.refused.empty()) continue;
        if (r.cfg.model.vocab_size <= 0) r.cfg.model.vocab_size = r.cfg.data.vocab_size;  // the tokenizer's target size
        r.skipped = run_kind_of(r.cfg).not_planned;
    }
    return out;
}

void print_plan(const RunConfig& cfg, const Plan& p) {
    const NetworkProfile net = unwrap(network_profile(cfg.network));
    std::printf("plan: %s, %lld replicas, %lld parameters, %s on %s (%.4g TFLOP/s effective), network %s (outer %.4g Mb/s, %.4g ms)\n",
                cfg.outer.algorithm.c_str(), (long long)cfg.outer.replicas, (long long)p.params,
                cfg.model.preset.c_str(), cfg.compute.hardware.c_str(), p.effective_flops / 1e12, cfg.network.profile.c_str(),
                net.outer.bandwidth_bps / 1e6, net.outer.latency_s * 1e3);
    if (cfg.cluster.stages > 1)
        std::printf("  %lld full + %lld pipeline replicas of %lld stages (%s, %lld micro-batches, rank %lld %s; "
                    "stage link %.4g Mb/s, %.4g ms)\n",
                    (long long)(cfg.outer.replicas - cfg.pipeline_replicas()), (long long)cfg.pipeline_replicas(),
                    (long long)cfg.cluster.stages, cfg.pipeline.schedule.c_str(), (long long)cfg.pipeline.micro_batches,
                    (long long)cfg.boundary_rank(cfg.outer.replicas - 1, 0), cfg.pipeline.coord_dtype.c_str(),
                    net.stage.bandwidth_bps / 1e6, net.stage.latency_s * 1e3);
    if (!net.relay.replicas.empty()) {
        std::string which;
        for (int r : net.relay.replicas) which += (which.empty() ? "" : ", ") + std::to_string(r);
        std::printf("  replica%s %s reached through a relay (up %.4g Mb/s, down %.4g Mb/s, +%.4g ms), shared by the relayed "
                    "members of each round\n",
                    net.relay.replicas.size() > 1 ? "s" : "", which.c_str(), net.relay.up_bps / 1e6, net.relay.down_bps / 1e6,
                    net.relay.latency_s * 1e3);
    }
    std::printf("  %lld steps of %lld tokens per replica: %lld tokens in all\n", (long long)p.steps,
                (long long)(cfg.train.batch_size * cfg.model.seq_len), (long long)p.tokens);
    std::printf("  %-14s %12s %8s %16s %18s %18s %14s %12s %24s\n", "node", "step (s)", "rounds", "round bytes",
                "inter-stage bytes", "bytes sent", "exposed (s)", "utilisation", "simulated time (s)");
    for (const PlannedNode& n : p.nodes)
        std::printf("  %-14s %12.6g %8lld %16llu %18llu %18llu %14.6g %11.1f%% %24.17g\n", n.name.c_str(), n.step_s,
                    (long long)n.rounds, (unsigned long long)n.round_bytes, (unsigned long long)n.inter_stage_bytes,
                    (unsigned long long)n.total_bytes, n.exposed_s,
                    100 * n.compute_s / std::max(1e-300, n.compute_s + n.exposed_s), n.sim_s);
    const double h = p.sim_s() / 3600;
    std::printf("  simulated wall-clock %.6g s (%.3g h, %.3g days), utilisation %.1f%% (outer sync only: %.1f%%)\n",
                p.sim_s(), h, h / 24, 100 * p.utilisation(), 100 * p.sync_utilisation());
}

void print_compare(const PlanArgs& a, const RunConfig& base) {
    std::printf("  %-22s %16s %18s %14s %12s %12s %20s\n", "algorithm", "round bytes", "bytes per replica", "exposed (s)",
                "utilisation", "sync util.", "simulated time (s)");
    for (auto& [label, sets] : compared()) {
        // A row the layout cannot take (e.g. H not a multiple of Streaming DiLoCo's fragments) says why.
        auto cfg = parse_config(to_toml(base), a.file.empty() ? "<plan>" : a.file, sets);
        auto planned = cfg ? plan_run(*cfg) : Result<Plan>(cfg.status());
        if (!planned) {
            std::printf("  %-22s %s\n", label.c_str(), planned.message().c_str());
            continue;
        }
        const Plan& p = *planned;
        const PlannedNode& n = p.nodes.front();
        std::printf("  %-22s %16llu %18llu %14.6g %11.1f%% %11.1f%% %20.6g\n", label.c_str(), (unsigned long long)n.round_bytes,
                    (unsigned long long)n.total_bytes, n.exposed_s, 100 * p.utilisation(), 100 * p.sync_utilisation(), p.sim_s());
    }
}

// One plan per run of the layout. A run the planner cannot take is reported and the others are
// still planned; the exit status is non-zero when any was refused, after a table of which and why.
int run_plan(const PlanArgs& a) {
    const std::vector<PlannedRun> runs = load_runs(a);
    std::vector<std::pair<std::string, std::string>> failed;
    for (const PlannedRun& r : runs) {
        if (runs.size() > 1 || !r.name.empty()) std::printf("== %s\n", r.name.empty() ? "(no variant)" : r.name.c_str());
        if (!r.refused.empty()) {
            std::printf("  refused: %s\n", r.refused.c_str());
            failed.emplace_back(r.name, r.refused);
            continue;
        }
        if (!r.skipped.empty()) {
            std::printf("  not planned: %s (%s)\n", r.cfg.run.name.c_str(), r.skipped.c_str());
            continue;
        }
        if (a.compare) {
            print_compare(a, r.cfg);
            continue;
        }
        // A valid layout of a kind the planner does not model (faults, time-budgeted rounds, ...)
        // is named with the reason; it is no error in the file.
        auto planned = plan_run(r.cfg);
        if (!planned) {
            std::printf("  not planned: %s (%s)\n", r.cfg.run.name.c_str(), planned.message().c_str());
            continue;
        }
        print_plan(r.cfg, *planned);
    }
    if (failed.empty()) return 0;
    for (auto& f : failed)
        if (f.first.empty()) f.first = "(no variant)";
    print_failures("thinwire: " + std::to_string(failed.size()) + " of " + std::to_string(runs.size()) + " run(s) of " +
                       (a.file.empty() ? std::string("the defaults") : a.file) + " not planned:",
                   failed);
    return 1;
}

}  // namespace

Command add_plan(CLI::App& app, const Globals&) {
    auto args = std::make_shared<PlanArgs>();
    CLI::App* c = app.add_subcommand("plan", "bytes, compute, exposed communication and wall-clock of a layout, without data");
    c->add_option("file", args->file, "layout file (default: the built-in defaults)");
    c->add_option("--set", args->sets, "override a key, e.g. --set model.preset=paper178m --set outer.replicas=8");
    c->add_option("--variant", args->variants, "plan only this variant of the layout's [variants] (repeatable)");
    c->add_flag("--compare", args->compare, "one row per algorithm (DDP, DiLoCo, Streaming DiLoCo FP4, SparseLoCo, NoLoCo, DeMo)");
    return {c, [args] { return run_plan(*args); }};
}

}  // namespace tw::cli
