#!/bin/bash
# The Torch-free modules stay Torch-free: no source of core/, storage/, remote/ or coordinator/ is
# compiled with LibTorch's include paths or includes a LibTorch header, and the coordinator
# library links no LibTorch (the engine reaches it only through coordinator/run_session.h's hooks).
# Usage: torch_free_test.sh SOURCE_DIR BUILD_DIR
set -u
src=$1 build=$2
fail() { echo "FAIL: $*"; exit 1; }
db=$build/compile_commands.json
[ -f "$db" ] || fail "no $db (configure with CMAKE_EXPORT_COMPILE_COMMANDS)"
checked=0
for dir in core storage remote coordinator; do
    for f in $(cd "$src" && git ls-files "$dir/*.cpp" "$dir/*.h" 2>/dev/null || find "$dir" -name '*.cpp' -o -name '*.h'); do
        grep -nE '#include *[<"](torch|ATen|c10)/' "$src/$f" && fail "$f includes a LibTorch header"
        checked=$((checked + 1))
    done
    # Each compile command of the module: no torch include path.
    n=$(/usr/bin/python3 - "$db" "$src/$dir/" <<'PY'
import json, sys
cmds = [c for c in json.load(open(sys.argv[1])) if c["file"].startswith(sys.argv[2])]
bad = [c["file"] for c in cmds if "torch" in c.get("command", " ".join(c.get("arguments", [])))]
if bad: print("BAD " + " ".join(bad))
else: print(len(cmds))
PY
)
    case $n in BAD*) fail "$dir compiled with LibTorch include paths: ${n#BAD }";; esac
    [ "$n" -gt 0 ] || fail "no compile commands for $dir/ (wrong build dir?)"
done
# The coordinator library is built from its own objects after core, remote and storage only.
grep -q "coordinator/run_session.cpp" "$db" || fail "coordinator module not built"
rule=$(grep 'build coordinator/libtw_coordinator.a' "$build/build.ninja")
[ -n "$rule" ] || fail "no build rule for coordinator/libtw_coordinator.a"
[ -z "$(echo "$rule" | grep -E 'torch|engine')" ] ||
    fail "libtw_coordinator.a is built from engine or LibTorch objects"
echo "ok: $checked Torch-free sources checked; $rule"
