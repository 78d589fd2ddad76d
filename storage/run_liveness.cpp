// Coordinator liveness; see run_liveness.h.
#include "storage/run_liveness.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>

namespace tw {
namespace {

// created_at ("2025-01-31T12:00:00.000Z") as Unix seconds; 0 when unreadable.
double parse_utc(const std::string& iso) {
    std::tm tm{};
    if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                    &tm.tm_sec) != 6)
        return 0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return static_cast<double>(timegm(&tm));
}

std::string seconds(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", s);
    return buf;
}

}  // namespace

std::string this_host_name() {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0) return "";
    return buf;
}

LivenessProbe local_probe() {
    LivenessProbe p;
    p.this_host = this_host_name();
    p.now_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    // EPERM: the pid exists but belongs to someone else, which is alive all the same. A zombie
    // (state Z in /proc/PID/stat: killed, not yet reaped) answers kill(pid, 0) but runs no more.
    p.pid_alive = [](int64_t pid) {
        if (pid <= 0 || (kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM)) return false;
        std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
        std::string line;
        if (!std::getline(stat, line)) return true;  // no /proc: trust kill()
        const auto close = line.rfind(')');         // the command name may hold spaces and parentheses
        return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
    };
    return p;
}

std::string coordinator_gone(const RunSummary& r, const LivenessProbe& probe) {
    if (r.status != RunStatus::kRunning) return "";
    // On its own host the process decides: a live one may be blocked for a while (a node's reply
    // timeout) without writing heartbeats, and is still the run's coordinator.
    if (r.coordinator_pid > 0 && !r.coordinator_host.empty() && r.coordinator_host == probe.this_host && probe.pid_alive) {
        if (probe.pid_alive(r.coordinator_pid)) return "";
        return "coordinator gone (process " + std::to_string(r.coordinator_pid) + " on " + r.coordinator_host +
               " no longer runs)";
    }
    const double last = r.heartbeat_at > 0 ? r.heartbeat_at : parse_utc(r.created_at);
    if (last > 0 && probe.now_s - last > probe.stale_s)
        return r.heartbeat_at > 0 ? "coordinator gone (no heartbeat for " + seconds(probe.now_s - last) + " s)"
                                  : "coordinator gone (a run of an older build, never marked finished)";
    return "";
}

Result<std::vector<int64_t>> mark_lost_runs(RunStore& store, const LivenessProbe& probe) {
    auto runs = store.list_runs();
    if (!runs) return runs.status();
    std::vector<int64_t> marked;
    for (const RunSummary& r : *runs) {
        const std::string why = coordinator_gone(r, probe);
        if (why.empty()) continue;
        if (Status s = store.finish_run(r.id, RunStatus::kInterrupted, why); !s) return s;
        marked.push_back(r.id);
    }
    return marked;
}

}  // namespace tw
