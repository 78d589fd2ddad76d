#!/usr/bin/env bash
# Fuzzes the control protocol and the data-plane frame header with libFuzzer:
#   scripts/fuzz.sh [SECONDS]        (default 60 seconds per target)
# 1. builds tests/fuzz/fuzz_control.cpp and fuzz_frame.cpp with clang, -fsanitize=fuzzer,address,
#    undefined (UB is fatal), -O1 -g, into build/fuzz/ (its own small Ninja build: only the sources
#    the targets need, no LibTorch; rebuilt only when a source or header changed; FUZZ_OUT names
#    another folder for it all, as the suite's fuzz.smoke does: its build tree's fuzz/, so that two
#    build trees' suites never share one),
# 2. copies each seed corpus (tests/fuzz/corpus/<target>/) to build/fuzz/corpus-<target>/, so the
#    committed seeds never change, and runs each target there for SECONDS,
# 3. prints per target: executions, exec/s, run length, corpus size before → after,
#    and exits 1 if a target crashed, leaked, timed out or broke an invariant; the reproducer's
#    path is printed (replay it: build/fuzz/fuzz_<target> <file>).
# Needs clang and the libFuzzer runtime (scripts/setup.sh installs clang and libclang-rt-14-dev);
# without them it exits 2 saying so. FUZZ_CXX picks the compiler, FUZZ_BUILD_JOBS the build jobs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SECONDS_PER_TARGET=${1:-60}
[[ "$SECONDS_PER_TARGET" =~ ^[1-9][0-9]*$ ]] || { echo "usage: scripts/fuzz.sh [SECONDS]" >&2; exit 2; }
OUT=${FUZZ_OUT:-build/fuzz}

missing() {
  echo "fuzz.sh: $1" >&2
  echo "fuzz.sh: install clang and libFuzzer with scripts/setup.sh (Debian: apt-get install clang libclang-rt-14-dev)" >&2
  exit 2
}
CXX=${FUZZ_CXX:-}
if [ -z "$CXX" ]; then
  for c in clang++-14 clang++; do command -v "$c" >/dev/null 2>&1 && { CXX=$c; break; }; done
fi
[ -n "$CXX" ] && command -v "$CXX" >/dev/null 2>&1 || missing "no clang++ found"
FUZZER_RT="$("$CXX" -print-resource-dir 2>/dev/null || true)/lib/linux/libclang_rt.fuzzer-$(uname -m).a"
[ -f "$FUZZER_RT" ] || missing "$CXX has no libFuzzer runtime ($FUZZER_RT)"
command -v ninja >/dev/null 2>&1 || missing "no ninja found"

# The build: one object per source, header dependencies tracked by Ninja through -MMD.
mkdir -p "$OUT/obj"
LAUNCHER=""
command -v ccache >/dev/null 2>&1 && LAUNCHER=ccache
esc() { printf '%s' "$1" | sed 's/[ :$]/$&/g'; }
{
  echo "cxx = $LAUNCHER $CXX"
  echo "flags = -std=c++17 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined" \
       "-fno-sanitize-recover=undefined -DTW_LIBFUZZER -I$(esc "$ROOT")"
  echo "rule cxx"
  echo "  command = \$cxx \$flags -MMD -MF \$out.d -c \$in -o \$out"
  echo "  depfile = \$out.d"
  echo "  deps = gcc"
  echo "  description = fuzz: compile \$in"
  echo "rule link"
  echo "  command = $CXX \$flags \$in -o \$out \$libs"
  echo "  description = fuzz: link \$out"
  for src in tests/fuzz/fuzz_control.cpp tests/fuzz/fuzz_frame.cpp remote/protocol.cpp remote/curve.cpp \
             remote/wire_frame.cpp core/data_fingerprint.cpp; do
    echo "build obj/$(basename "$src" .cpp).o: cxx $(esc "$ROOT/$src")"
  done
  # protocol.cpp checks keys with is_z85_key (remote/curve.cpp, which needs libzmq) and roles' data
  # fingerprints with parse_data_fingerprint (core/data_fingerprint.cpp).
  echo "build fuzz_control: link obj/fuzz_control.o obj/protocol.o obj/curve.o obj/data_fingerprint.o"
  echo "  libs = -lzmq"
  echo "build fuzz_frame: link obj/fuzz_frame.o obj/wire_frame.o"
} >"$OUT/build.ninja.new"
mv "$OUT/build.ninja.new" "$OUT/build.ninja"
if ! ninja -C "$OUT" -j "${FUZZ_BUILD_JOBS:-2}" fuzz_control fuzz_frame >"$OUT/build.log" 2>&1; then
  cat "$OUT/build.log" >&2
  echo "fuzz.sh: building the fuzz targets failed (log: $OUT/build.log)" >&2
  exit 2
fi

# Run each target; collect the summary lines and whether anything was found.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$OUT/artifacts"
failed=0
summary=()
for target in control frame; do
  corpus="$OUT/corpus-$target"
  rm -rf "$corpus"
  mkdir -p "$corpus"
  cp tests/fuzz/corpus/"$target"/* "$corpus"/
  seeds=$(find "$corpus" -type f | wc -l)
  log="$OUT/fuzz_$target.log"
  start=$(date +%s.%N)
  status=0
  # -timeout: an input taking 30 s is a hang; -rss_limit_mb: a runaway allocation is a finding.
  "$OUT/fuzz_$target" -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 -timeout=30 \
    -rss_limit_mb=2048 -artifact_prefix="$OUT/artifacts/$target-" "$corpus" >"$log" 2>&1 || status=$?
  end=$(date +%s.%N)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  files=$(find "$corpus" -type f | wc -l)
  kib=$(du -sk --apparent-size "$corpus" | cut -f1)
  line=$(printf '%-8s executions %-10s exec/s %-8s run %6.1f s  corpus %d → %d files (%d KiB)' "$target" \
         "${execs:-?}" "${rate:-?}" "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" "$seeds" "$files" "$kib")
  if [ "$status" -ne 0 ]; then
    failed=1
    line+="  FAILED (exit $status, log $log)"
    while read -r artifact; do line+=$'\n'"           reproducer: $artifact"; done \
      < <(sed -n 's/.*Test unit written to //p' "$log")
    grep -m1 -E "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|fuzz_$target: " "$log" |
      sed 's/^/           /' >>"$OUT/reasons.tmp" || true
  fi
  summary+=("$line")
done
echo "fuzz.sh: ${SECONDS_PER_TARGET} s per target ($CXX, ASan + UBSan)"
for line in "${summary[@]}"; do echo "  $line"; done
if [ -f "$OUT/reasons.tmp" ]; then cat "$OUT/reasons.tmp"; rm -f "$OUT/reasons.tmp"; fi
exit "$failed"
