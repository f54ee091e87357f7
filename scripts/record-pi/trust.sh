#!/usr/bin/env bash
# Records the trust.json pi 1.6.0 writes when the user answers its start-up prompt "Trust" and,
# in a second folder, "Trust parent folder", into
# crates/filo-cli/tests/fixtures/pi-1.6.0/trust/. pi runs in a temporary HOME under tmux
# (PI_OFFLINE=1, no model needed: the prompt comes before anything else). The fixture keeps the
# temporary paths as placeholders (@ROOT@) so the test can put its own folders in.
#
# usage: scripts/record-pi/trust.sh   (needs tmux and pi 1.6.0 in /work/pi16)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
node=${PI_NODE:-/work/pi16/node_modules/.bin/node}
cli=${PI_CLI:-/work/pi16/node_modules/@earendil-works/pi-coding-agent/dist/cli.js}
out="$here/crates/filo-cli/tests/fixtures/pi-1.6.0/trust"
root=$(mktemp -d)
root=$(cd "$root" && pwd -P)
trap 'tmux -L pitrust kill-server 2>/dev/null || true; rm -rf "$root"' EXIT
mkdir -p "$root/home" "$root/work/trusted/.pi" "$root/work/parent/child/.pi"
echo '{"shellCommandPrefix":"true;"}' >"$root/work/trusted/.pi/settings.json"
echo '{"shellCommandPrefix":"true;"}' >"$root/work/parent/child/.pi/settings.json"

answer() { # folder, number of Down presses before Enter
  tmux -L pitrust new-session -d -s pi -x 120 -y 40 -c "$1" \
    "env HOME=$root/home PI_OFFLINE=1 $node $cli; sleep 30"
  for _ in $(seq 1 100); do
    tmux -L pitrust capture-pane -p -t pi | grep -q "Trust project folder" && break
    sleep 0.2
  done
  for _ in $(seq 1 "$2"); do tmux -L pitrust send-keys -t pi Down; sleep 0.2; done
  tmux -L pitrust send-keys -t pi Enter
  for _ in $(seq 1 50); do
    [ -f "$root/home/.pi/agent/trust.json" ] && grep -q "$3" "$root/home/.pi/agent/trust.json" && break
    sleep 0.2
  done
  tmux -L pitrust kill-server
}

answer "$root/work/trusted" 0 "trusted"
answer "$root/work/parent/child" 1 "parent"
mkdir -p "$out"
sed "s#$root#@ROOT@#g" "$root/home/.pi/agent/trust.json" >"$out/trust.json"
cat "$out/trust.json"
