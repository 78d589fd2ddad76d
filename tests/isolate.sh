#!/usr/bin/env bash
# Runs one CTest entry, COMMAND [ARG...], with a temporary folder of its own: TMPDIR and
# TEST_TMPDIR (which mktemp, std::filesystem::temp_directory_path and GoogleTest's TempDir() use)
# name a fresh folder, removed afterwards (kept and named when KEEP is set). With --netns it runs
# in a network namespace of its own whose loopback is up: the TCP ports it binds, the connections
# it opens and the sockets it sees are its own, so entries that run at the same time (and test
# suites of other checkouts on this machine) can never take each other's ports or see each other's
# listeners. tests/CMakeLists.txt passes --netns where `unshare --net` works at configure time.
# TW_TEST_NICE, when set, is the niceness the entry runs at (a negative one where this user may
# raise priority, as root; elsewhere the entry runs at its own).
# Usage: isolate.sh [--netns] COMMAND [ARG...]
set -u
netns=0
if [ "${1:-}" = --netns ]; then netns=1; shift; fi
[ $# -gt 0 ] || { echo "usage: isolate.sh [--netns] COMMAND [ARG...]" >&2; exit 2; }
dir="$(mktemp -d "${TMPDIR:-/tmp}/tw-test.XXXXXX")" || exit 1
export TMPDIR="$dir" TEST_TMPDIR="$dir"
if [ -n "${TW_TEST_NICE:-}" ]; then renice -n "$TW_TEST_NICE" -p $$ > /dev/null 2>&1 || true; fi
if [ "$netns" -eq 1 ]; then
  unshare --net -- /bin/sh -c 'ip link set lo up && exec "$@"' isolate "$@"
else
  "$@"
fi
rc=$?
if [ -n "${KEEP:-}" ]; then echo "isolate.sh: kept $dir" >&2; else rm -rf "$dir"; fi
exit "$rc"
