#!/usr/bin/env bash
# `thinwire` and `thinwire-engine` (app/front_main.cpp): the commands that need no model (runs,
# report, keys, relay) run in `thinwire` itself, which does not load LibTorch, and work with the
# engine absent; every other command, --help and --version, goes to thinwire-engine beside it,
# exec'd in place: the same process id and command line, the engine's executable.
# Usage: front_test.sh PATH_TO_THINWIRE [CASE...]
source "$(dirname "$0")/harness.sh"

case_engine_free() {
  local needed
  needed="$(readelf -d "$tw" | grep NEEDED)" || fail "readelf cannot read $tw"
  grep -q torch <<<"$needed" && fail "thinwire links LibTorch: $needed"
  grep -q torch <<<"$(readelf -d "$(dirname "$tw")/thinwire-engine" | grep NEEDED)" ||
    fail "thinwire-engine does not link LibTorch: the check above would prove nothing"
  # thinwire alone in a folder, without its engine.
  mkdir "$work/alone"
  cp "$tw" "$work/alone/thinwire"
  local alone="$work/alone/thinwire" out
  "$alone" keys new "$work/keys" > "$work/keys.log" 2>&1 || fail "keys new without the engine: $(cat "$work/keys.log")"
  [ -s "$work/keys/public.key" ] && [ -s "$work/keys/secret.key" ] || fail "keys new wrote no key pair: $(ls "$work/keys")"
  "$alone" runs --help > "$work/help.log" 2>&1 || fail "runs --help without the engine: $(cat "$work/help.log")"
  grep -q "list" "$work/help.log" || fail "runs --help names no list: $(cat "$work/help.log")"
  # A read-only command on a store that is not there: the store's own refusal, not the engine's.
  out="$("$alone" --db "$work/none.db" runs list 2>&1)" && fail "runs list of a missing store succeeded: $out"
  grep -q "none.db" <<<"$out" || fail "runs list does not name the missing store: $out"
  grep -q "thinwire-engine" <<<"$out" && fail "runs list went to the engine: $out"
  [ ! -e "$work/none.db" ] || fail "runs list created the store"
  # A command that needs the model names the missing engine.
  out="$("$alone" --db "$work/runs.db" run micro.toml 2>&1)" && fail "run without the engine succeeded: $out"
  grep -q "cannot start $work/alone/thinwire-engine" <<<"$out" || fail "run without the engine: $out"
  [ ! -e "$work/runs.db" ] || fail "a refused run created the store"
}

case_forwards() {
  local engine out p pid argv0
  engine="$(dirname "$tw")/thinwire-engine"
  out="$("$tw" --version)"
  [ "$out" = "$("$engine" --version)" ] || fail "--version: '$out' against the engine's '$("$engine" --version)'"
  grep -Eq '^thinwire [0-9]' <<<"$out" || fail "--version: $out"
  "$tw" --help > "$work/help.log" || fail "--help failed"
  for sub in run runs plan node relay; do
    grep -Eq "^  $sub " "$work/help.log" || fail "--help lacks $sub: $(cat "$work/help.log")"
  done
  # A node started through thinwire is the engine's process under the same id and command line.
  pick_ports p
  start_loopback_node "$p" "$work" "$work/node.log"
  pid="${pids[-1]}"
  [ "$(readlink "/proc/$pid/exe")" = "$(realpath "$engine")" ] || fail "the node runs $(readlink "/proc/$pid/exe")"
  argv0="$(tr '\0' '\n' < "/proc/$pid/cmdline" | head -1)"
  [ "$argv0" = "$tw" ] || fail "the node's command line starts '$argv0', not '$tw'"
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
}

run_cases "${@:2}"
