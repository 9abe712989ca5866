#!/usr/bin/env bash
# Set up (scripts/setup.sh), start what the tests need, and run the whole test suite: every test,
# the slow and real-model ones too (`-m ""` clears pyproject's default `-m "not slow and not real_model"`;
# a later -m given here wins).
# The tests start the embedded llama.cpp server themselves (SmolLM2, the small model).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -q -p no:cacheprovider -m "" "$@"
