#!/usr/bin/env bash
# Peak memory of a run's processes, to calibrate core/memory_estimate.cpp (docs/launch_limits.md).
# Runs `thinwire run LAYOUT ARGS...` and samples, every 50 ms until it exits, /proc/PID/status of
# the coordinator and of every child `thinwire node` it starts: VmHWM (the kernel's peak resident
# size), and the largest RssAnon (private memory: what each further process costs; shared library
# pages count in VmHWM but are shared) and RssFile seen. Prints one line per process, in MiB.
# Usage: scripts/measure_node_memory.sh THINWIRE LAYOUT [--set KEY=VALUE ...]
#   e.g. scripts/measure_node_memory.sh build/release/app/thinwire layout.toml --set cluster.mode=local
set -euo pipefail
tw="$1"; shift
layout="$1"; shift
db="$(mktemp -d)/m.db"
"$tw" --db "$db" run "$layout" "$@" > "$(dirname "$db")/out.log" 2>&1 &
coord=$!
declare -A hwm anon file
kib() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$2/status" 2>/dev/null || true; }
while kill -0 "$coord" 2>/dev/null; do
  for pid in "$coord" $(pgrep -P "$coord" || true); do
    h="$(kib VmHWM "$pid")"; a="$(kib RssAnon "$pid")"; f="$(kib RssFile "$pid")"
    [ -n "$h" ] || continue
    [ "${h}" -gt "${hwm[$pid]:-0}" ] && hwm[$pid]=$h
    [ "${a:-0}" -gt "${anon[$pid]:-0}" ] && anon[$pid]=$a
    [ "${f:-0}" -gt "${file[$pid]:-0}" ] && file[$pid]=$f
  done
  sleep 0.05
done
wait "$coord" || { echo "run failed:"; tail -5 "$(dirname "$db")/out.log"; exit 1; }
grep -E "finished|failed" "$(dirname "$db")/out.log" | head -3
for pid in "${!hwm[@]}"; do
  role=node; [ "$pid" = "$coord" ] && role=coordinator
  printf '%-11s pid %-7s VmHWM %6.1f MiB  RssAnon max %6.1f MiB  RssFile max %6.1f MiB\n' "$role" "$pid" \
    "$(echo "${hwm[$pid]} / 1024" | bc -l)" "$(echo "${anon[$pid]} / 1024" | bc -l)" "$(echo "${file[$pid]} / 1024" | bc -l)"
done | sort
rm -rf "$(dirname "$db")"
