// Limits checked before a run's nodes start; see launch_limits.h.
#include "coordinator/launch_limits.h"

#include <cmath>
#include <cstdio>

namespace tw {
namespace {

std::string percent(double x) { return std::to_string(static_cast<int64_t>(std::lround(100.0 * x))) + "%"; }

// "1024 local processes" / "64 thread nodes"
std::string placement(const RunConfig& cfg, int64_t nodes) {
    const bool local = cfg.cluster.mode == "local";
    return std::to_string(nodes) + (local ? " local process" : " thread node") + (nodes == 1 ? "" : local ? "es" : "s");
}

std::string breakdown(const LaunchMemoryEstimate& l) {
    const NodeMemoryEstimate& n = l.node;
    std::string s = "per node (" + std::to_string(n.params) + " parameters): weights " + human_bytes(n.weights_bytes) +
                    ", gradients " + human_bytes(n.gradient_bytes) + ", AdamW " + human_bytes(n.optimizer_bytes) +
                    ", outer state " + human_bytes(n.outer_state_bytes) + ", round payloads " +
                    human_bytes(n.exchange_bytes) + ", activations " + human_bytes(n.activation_bytes) + ", node " +
                    human_bytes(n.base_bytes);
    if (l.process_base_bytes > 0) s += ", LibTorch process " + human_bytes(l.process_base_bytes);
    return s + " (docs/launch_limits.md)";
}

}  // namespace

std::string human_bytes(int64_t bytes) {
    if (bytes < 1024) return std::to_string(bytes) + " B";
    static const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = static_cast<double>(bytes) / 1024.0;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof kUnits / sizeof *kUnits) v /= 1024.0, ++u;
    char buf[32];
    if (v < 99.95) std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
    else std::snprintf(buf, sizeof buf, "%.0f %s", v, kUnits[u]);
    return buf;
}

LaunchVerdict check_launch_limits(const RunConfig& cfg, int64_t nodes, const MachineMemory& machine) {
    LaunchVerdict v;
    if (cfg.cluster.mode == "remote") return v;  // the nodes run on other machines
    const bool local = cfg.cluster.mode == "local";
    v.estimate = estimate_launch_memory(cfg, nodes);
    const std::string where = local ? "run on threads (cluster.mode = \"threads\") or remote nodes" : "run on remote nodes";

    if (local && nodes > cfg.cluster.max_local_processes)
        v.refusals.push_back(std::to_string(nodes) + " local processes, more than cluster.max_local_processes = " +
                             std::to_string(cfg.cluster.max_local_processes) + "; lower outer.replicas, " + where +
                             ", or raise cluster.max_local_processes");

    if (cfg.cluster.memory_check == "off") return v;
    const int64_t total = v.estimate.total_bytes, avail = machine.available_bytes;
    const std::string figures = placement(cfg, nodes) + " × ~" + human_bytes(v.estimate.per_node_bytes) +
                                " estimated = " + human_bytes(total);
    const std::string have = "the " + human_bytes(avail) + " available (" + machine.source + ")";
    v.summary = figures + " against " + have;
    v.detail = breakdown(v.estimate);
    if (total > avail) {
        const std::string line = figures + ", more than " + have + "; lower outer.replicas, " + where;
        if (cfg.cluster.memory_check == "refuse")
            v.refusals.push_back(line + ", or set cluster.memory_check = \"warn\" to start anyway");
        else
            v.warnings.push_back(line + "; starting anyway (cluster.memory_check = \"warn\")");
    } else if (static_cast<double>(total) > kWarnFraction * static_cast<double>(avail)) {
        v.warnings.push_back(figures + ", " + percent(static_cast<double>(total) / static_cast<double>(avail)) + " of " +
                             have + "; the machine may run short");
    }
    return v;
}

Result<LaunchVerdict> launch_limits_here(const RunConfig& cfg, int64_t nodes) {
    if (cfg.cluster.mode == "remote") return LaunchVerdict{};
    MachineMemory machine;
    std::string unread;
    if (cfg.cluster.memory_check != "off") {
        auto m = read_machine_memory();
        if (m) machine = *m;
        else unread = m.message();
    }
    RunConfig checked = cfg;
    if (!unread.empty()) checked.cluster.memory_check = "off";  // only the process cap can be checked
    LaunchVerdict v = check_launch_limits(checked, nodes, machine);
    if (!unread.empty()) v.warnings.push_back("memory not checked: " + unread);
    if (v.ok()) return v;
    std::string msg = "launch refused before any node started: " + v.refusals.front();
    for (size_t i = 1; i < v.refusals.size(); ++i) msg += "\n  " + v.refusals[i];
    if (!v.detail.empty()) msg += "\n  " + v.detail;
    return Result<LaunchVerdict>::error(msg);
}

}  // namespace tw
