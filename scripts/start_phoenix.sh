#!/usr/bin/env bash
# Start Arize Phoenix (a trace backend that takes OTLP over HTTP) on loopback, for the tracing tests.
#
# Usage:
#   bash scripts/start_phoenix.sh            # install if needed, start, print the port, return
#   bash scripts/start_phoenix.sh --install  # only create the Phoenix venv (no server)
#
# Phoenix is large and pins its own dependencies, so it lives in its own virtual environment,
# never in the project's .venv:
#   STEPGUARD_PHOENIX_VENV   the venv (default: ${XDG_CACHE_HOME:-~/.cache}/stepguard/phoenix-venv)
#   STEPGUARD_PHOENIX_SPEC   what pip installs there (default: arize-phoenix==20.26.1)
#
# On success it prints one line, the HTTP port (the UI, the REST API and OTLP/HTTP at /v1/traces
# share it), and leaves the server running in the background. Its pid is in
# $PHOENIX_WORKING_DIR/phoenix.pid and its log in $PHOENIX_WORKING_DIR/phoenix.log; the working
# dir (a fresh temp dir, or $PHOENIX_WORKING_DIR if set) holds its SQLite database.
# Typical use from CI:
#   port=$(bash scripts/start_phoenix.sh) && export STEPGUARD_PHOENIX_URL=http://127.0.0.1:$port
# Exit codes: 0 started; 2 the venv could not be created (pip failed: no registry?); 3 the
# server did not come up within STEPGUARD_PHOENIX_WAIT_S seconds (default 180).
set -euo pipefail

VENV="${STEPGUARD_PHOENIX_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/stepguard/phoenix-venv}"
SPEC="${STEPGUARD_PHOENIX_SPEC:-arize-phoenix==20.26.1}"
WAIT_S="${STEPGUARD_PHOENIX_WAIT_S:-180}"
PY="${STEPGUARD_PHOENIX_PYTHON:-python3}"

log() { echo "start_phoenix: $*" >&2; }

install_phoenix() {
    if [[ -x "$VENV/bin/phoenix" ]] && [[ -f "$VENV/.stepguard-spec" ]] && [[ "$(cat "$VENV/.stepguard-spec")" == "$SPEC" ]]; then
        return 0
    fi
    log "creating $VENV with $SPEC (once; a few minutes)"
    mkdir -p "$(dirname "$VENV")"
    local lock="$VENV.lock"
    # One installer at a time (parallel test workers may call this together).
    exec 9>"$lock"
    flock 9
    if [[ -x "$VENV/bin/phoenix" ]] && [[ "$(cat "$VENV/.stepguard-spec" 2>/dev/null)" == "$SPEC" ]]; then
        return 0
    fi
    rm -rf "$VENV"
    if ! "$PY" -m venv "$VENV" >&2; then
        log "cannot create a venv with $PY"; exit 2
    fi
    if ! "$VENV/bin/python" -m pip install -q "$SPEC" >&2; then
        log "pip install $SPEC failed"; rm -rf "$VENV"; exit 2
    fi
    echo "$SPEC" >"$VENV/.stepguard-spec"
}

free_port() {
    "$PY" - <<'EOF'
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
EOF
}

install_phoenix
if [[ "${1:-}" == "--install" ]]; then
    log "installed in $VENV"; exit 0
fi

WORK="${PHOENIX_WORKING_DIR:-$(mktemp -d -t stepguard-phoenix.XXXXXX)}"
mkdir -p "$WORK"
PORT="$(free_port)"
GRPC_PORT="$(free_port)"
# Loopback only; no phone-home; SQLite in the working dir; gRPC on a free port so that two
# instances (or a system Collector on 4317) do not collide.
env PHOENIX_WORKING_DIR="$WORK" PHOENIX_HOST=127.0.0.1 PHOENIX_PORT="$PORT" \
    PHOENIX_GRPC_PORT="$GRPC_PORT" PHOENIX_TELEMETRY_ENABLED=false \
    PHOENIX_ALLOW_EXTERNAL_RESOURCES=false \
    nohup "$VENV/bin/phoenix" serve >"$WORK/phoenix.log" 2>&1 </dev/null &
echo $! >"$WORK/phoenix.pid"
log "pid $(cat "$WORK/phoenix.pid"), port $PORT, working dir $WORK"

deadline=$(( $(date +%s) + WAIT_S ))
until "$PY" - "$PORT" <<'EOF' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/healthz", timeout=2).read()
EOF
do
    if ! kill -0 "$(cat "$WORK/phoenix.pid")" 2>/dev/null; then
        log "phoenix exited; last log lines:"; tail -20 "$WORK/phoenix.log" >&2; exit 3
    fi
    if (( $(date +%s) > deadline )); then
        log "phoenix did not answer within ${WAIT_S}s"; tail -20 "$WORK/phoenix.log" >&2
        kill "$(cat "$WORK/phoenix.pid")" 2>/dev/null || true; exit 3
    fi
    sleep 1
done
echo "$PORT"
