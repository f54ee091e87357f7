#!/usr/bin/env bash
# The real OpenClaw command-line clients against `filo gateway`: installs Node and OpenClaw into a
# cache outside the repo (once), then runs the opt-in test that drives `openclaw agent`,
# `openclaw health`, `openclaw status` and `openclaw tui` (through tmux, when installed) against
# `filo gateway` and the scripted mock model (crates/filo-cli/tests/suite/openclaw.rs).
#
#   scripts/openclaw-clients.sh            # install if needed, then run the test
#   scripts/openclaw-clients.sh install    # install only
#   scripts/openclaw-clients.sh env        # print FILO_E2E_OPENCLAW / FILO_E2E_NODE for the test
#
# Node comes from the npm registry package node-linux-<arch> (OpenClaw needs Node >= 24.16; the
# preinstall refuses older ones), OpenClaw from the registry with `npm install --prefix`. Nothing
# is installed globally and nothing in $HOME but the cache and npm's own cache is touched.
# The test itself only talks to 127.0.0.1; where `unshare -rn` works it runs in a network
# namespace with nothing but loopback, so nothing can leave the machine.
#
# Env: FILO_OPENCLAW_CACHE (~/.cache/filo-openclaw), FILO_OPENCLAW_NODE_VERSION (24.22.3),
#      FILO_OPENCLAW_VERSION (2026.9.6), FILO_OPENCLAW_NETNS (auto | off), CARGO_TARGET_DIR.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
cache="${FILO_OPENCLAW_CACHE:-$HOME/.cache/filo-openclaw}"
node_version="${FILO_OPENCLAW_NODE_VERSION:-24.22.3}"
openclaw_version="${FILO_OPENCLAW_VERSION:-2026.9.6}"

case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "unsupported architecture: $(uname -m)" >&2; exit 2 ;;
esac
node_dir="$cache/node-$node_version/bin"
prefix="$cache/openclaw-$openclaw_version"

install_node() {
  [ -x "$node_dir/node" ] && return 0
  command -v npm >/dev/null || { echo "npm is needed to fetch node-linux-$arch" >&2; exit 2; }
  local tmp
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "node-linux-$arch@$node_version" >/dev/null && tar xzf ./*.tgz)
  rm -rf "$cache/node-$node_version"
  mkdir -p "$cache"
  mv "$tmp/package" "$cache/node-$node_version"
  rm -rf "$tmp"
  "$node_dir/node" --version >/dev/null
}

install_openclaw() {
  [ -f "$prefix/node_modules/openclaw/openclaw.mjs" ] && return 0
  # npm runs under the Node it finds first on PATH: the new one, for OpenClaw's preinstall check.
  PATH="$node_dir:$PATH" npm install --prefix "$prefix" --no-fund --no-audit \
    "openclaw@$openclaw_version"
}

install() {
  install_node
  install_openclaw
  echo "node $("$node_dir/node" --version) in $node_dir; openclaw $openclaw_version in $prefix"
}

netns_works() {
  [ "${FILO_OPENCLAW_NETNS:-auto}" != off ] \
    && command -v unshare >/dev/null && command -v ip >/dev/null \
    && unshare -rn sh -c 'ip link set lo up' 2>/dev/null
}

run_test() {
  install
  cd "$repo"
  local runner=(test -p filo-cli --test all suite::openclaw -- --nocapture)
  if cargo nextest --version >/dev/null 2>&1; then
    runner=(nextest run -p filo-cli --no-capture suite::openclaw)
  fi
  # Build first: inside the namespace cargo must not need the network.
  cargo build -p filo-cli --tests --quiet
  export FILO_E2E_OPENCLAW="$prefix" FILO_E2E_NODE="$node_dir"
  if netns_works; then
    echo "running in a network namespace with only loopback"
    unshare -rn sh -c 'ip link set lo up && exec cargo --offline "$@"' sh "${runner[@]}"
  else
    echo "unshare -rn is not available: running without network isolation"
    cargo "${runner[@]}"
  fi
}

case "${1:-test}" in
  install) install ;;
  env) echo "FILO_E2E_OPENCLAW=$prefix FILO_E2E_NODE=$node_dir" ;;
  test) run_test ;;
  *) echo "usage: $0 [test|install|env]" >&2; exit 2 ;;
esac
