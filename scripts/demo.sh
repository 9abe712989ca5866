#!/usr/bin/env bash
# The main job: set up (scripts/setup.sh), then run the benchmark raw and guarded on the same
# instances with the embedded local model, build the report, and print where it is.
# Pass options through, e.g. `bash scripts/demo.sh --model sim:paper` for a fast simulated run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/stepguard bench demo "$@"
