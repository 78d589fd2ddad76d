#!/usr/bin/env bash
# Compares `thinwire bench train` against the PyTorch reference; prints a Markdown table.
# Usage: tests/bench/compare_train.sh [preset...]   (default: tiny small)
# Env: THINWIRE (default build/release/app/thinwire), THREADS (default 2), PYTHON (default /usr/bin/python3).
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

echo "| preset | params | C++ tok/s | PyTorch tok/s | ratio | C++ MFU |"
echo "|---|---:|---:|---:|---:|---:|"
rounds="${ROUNDS:-3}"
# Keeps the JSON line with the highest tokens/s of two (best round per side).
best() { "$py" -c 'import json,sys; a=[json.loads(x) for x in sys.argv[1:] if x]; print(json.dumps(max(a, key=lambda j: j["tokens_per_s"])))' "$@"; }
for p in "${presets[@]}"; do
  cpp="" ref=""
  # Rounds alternate the two sides so a burst of load on the shared machine hits both alike.
  for ((i = 0; i < rounds; i++)); do
    c="$("$thinwire" bench train --preset "$p" --threads "$threads" --json)" \
      || { echo "error: '$thinwire bench train --preset $p --json' failed" >&2; exit 1; }
    r="$("$py" tests/bench/reference_train.py --preset "$p" --threads "$threads")" \
      || { echo "error: reference_train.py failed for preset $p" >&2; exit 1; }
    c="$(json_line <<<"$c")"
    r="$(json_line <<<"$r")"
    [ -n "$c" ] && cpp="$(best "$cpp" "$c")"
    [ -n "$r" ] && ref="$(best "$ref" "$r")"
  done
  [ -n "$cpp" ] || { echo "error: no JSON from thinwire for preset $p" >&2; exit 1; }
  [ -n "$ref" ] || { echo "error: no JSON from reference_train.py for preset $p" >&2; exit 1; }
  "$py" - "$p" "$cpp" "$ref" <<'EOF'
import json, sys
p, c, r = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
ct, rt = float(c["tokens_per_s"]), float(r["tokens_per_s"])
params = f'{c["params"]:,}'
if c["params"] != r["params"]:  # same architecture should give identical counts
    params += f' (ref {r["params"]:,})'
mfu = f'{100 * float(c["mfu"]):.1f}%'  # C++ reports MFU as a fraction of peak
print(f"| {p} | {params} | {ct:,.0f} | {rt:,.0f} | {ct / rt:.2f}x | {mfu} |")
EOF
done
