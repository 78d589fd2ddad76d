#!/usr/bin/env bash
# Compares `thinwire bench train` against the PyTorch reference; prints a Markdown table.
# Usage: tests/bench/compare_train.sh [preset...]   (default: tiny small)
# Env: THINWIRE (default build/release/app/thinwire), THREADS (default 2), PYTHON (default /usr/bin/python3),
#      ROUNDS (paired rounds, default 5), STEPS (timed steps per run, default 20).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
thinwire="${THINWIRE:-build/release/app/thinwire}"
threads="${THREADS:-2}"
# Debian's python has torch; the python3 first on PATH may not.
py="${PYTHON:-/usr/bin/python3}"
presets=("$@")
[ ${#presets[@]} -eq 0 ] && presets=(tiny small)

if [ ! -x "$thinwire" ]; then
  echo "error: thinwire binary not found or not executable: $thinwire (build it or set THINWIRE)" >&2
  exit 1
fi

# Last line starting with '{' of a command's stdout, so stray log lines don't break parsing.
json_line() { { grep '^{' || true; } | tail -n 1; }

echo "| preset | params | C++ tok/s | PyTorch tok/s | ratio (median of rounds) | rounds' ratios | C++ MFU |"
echo "|---|---:|---:|---:|---:|---|---:|"
rounds="${ROUNDS:-5}"
steps="${STEPS:-20}"
for p in "${presets[@]}"; do
  cpp=() ref=()
  # Each round runs both sides back to back and yields one ratio: the machine is shared and its
  # speed drifts by tens of percent over minutes, so only paired measurements compare fairly.
  for ((i = 0; i < rounds; i++)); do
    c="$("$thinwire" bench train --preset "$p" --threads "$threads" --steps "$steps" --json)" \
      || { echo "error: '$thinwire bench train --preset $p --json' failed" >&2; exit 1; }
    r="$("$py" tests/bench/reference_train.py --preset "$p" --threads "$threads" --steps "$steps")" \
      || { echo "error: reference_train.py failed for preset $p" >&2; exit 1; }
    c="$(json_line <<<"$c")"
    r="$(json_line <<<"$r")"
    [ -n "$c" ] || { echo "error: no JSON from thinwire for preset $p" >&2; exit 1; }
    [ -n "$r" ] || { echo "error: no JSON from reference_train.py for preset $p" >&2; exit 1; }
    cpp+=("$c") ref+=("$r")
  done
  "$py" - "$p" "${cpp[@]}" "${ref[@]}" <<'EOF'
import json, statistics, sys
p, rest = sys.argv[1], sys.argv[2:]
n = len(rest) // 2
c = [json.loads(x) for x in rest[:n]]
r = [json.loads(x) for x in rest[n:]]
ratios = [a["tokens_per_s"] / b["tokens_per_s"] for a, b in zip(c, r)]
params = f'{c[0]["params"]:,}'
if c[0]["params"] != r[0]["params"]:  # same architecture should give identical counts
    params += f' (ref {r[0]["params"]:,})'
ct = statistics.median(x["tokens_per_s"] for x in c)
rt = statistics.median(x["tokens_per_s"] for x in r)
mfu = statistics.median(x["mfu"] for x in c)  # C++ reports MFU as a fraction of its own sgemm peak
print(f"| {p} | {params} | {ct:,.0f} | {rt:,.0f} | {statistics.median(ratios):.2f}x | "
      f"{' '.join(f'{x:.2f}' for x in ratios)} | {100 * mfu:.1f}% |")
EOF
done
