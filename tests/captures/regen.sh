#!/usr/bin/env bash
# Regenerate one capture fixture (or all): make its own venv from requirements.txt and run capture.py.
#   tests/captures/regen.sh <name>      e.g. openai_agents_openinference
#   tests/captures/regen.sh all
# Venvs live in ${CAPVENV:-/tmp/capvenv}/<name>; they are never the project's .venv.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
VENVS="${CAPVENV:-/tmp/capvenv}"
PY="${PYTHON:-python3.11}"

regen() {
  local name="$1" dir="$HERE/$1"
  [ -f "$dir/capture.py" ] || [ -f "$dir/capture.mjs" ] || { echo "no such capture: $name" >&2; return 1; }
  if [ -f "$dir/package.json" ]; then          # Node.js capture
    (cd "$dir" && npm ci --no-audit --no-fund --silent && node capture.mjs)
  else
    if [ ! -x "$VENVS/$name/bin/python" ]; then
      "$PY" -m venv "$VENVS/$name"
    fi
    "$VENVS/$name/bin/pip" install -q -r "$dir/requirements.txt"
    (cd "$dir" && "$VENVS/$name/bin/python" capture.py)
  fi
  echo "== $name"
  local py; py="$(ls -d "$VENVS"/*/bin/python 2>/dev/null | head -n1)"
  [ -n "$py" ] && "$py" "$HERE/dump.py" "$dir/spans.otlp.pb" | tail -n 1 || true
}

if [ "${1:-}" = "all" ]; then
  for d in "$HERE"/*/; do
    if [ -f "$d/capture.py" ] || [ -f "$d/capture.mjs" ]; then regen "$(basename "$d")"; fi
  done
else
  regen "${1:?usage: regen.sh <name>|all}"
fi
