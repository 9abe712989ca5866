#!/usr/bin/env bash
# Set up (scripts/setup.sh), start what the tests need, and run the whole test suite: every test,
# the slow and real-model ones too (`-m ""` clears pyproject's default `-m "not slow and not real_model"`;
# a later -m given here wins).
# The tests start the embedded llama.cpp server themselves (SmolLM2, the small model).
set -euo pipefail
cd "$(dirname "$0")/.."
since=$(date +%s)
bash scripts/setup.sh
status=0
.venv/bin/python -m pytest -q -p no:cacheprovider -m "" "$@" || status=$?
# A process the tests left running with their output open would keep CI waiting after the summary
# (scripts/leftovers.py names and stops it); a hang of pytest's own exit is ended by tests/_exit_watch.py.
.venv/bin/python scripts/leftovers.py "$since"
exit "$status"
