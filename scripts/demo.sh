#!/usr/bin/env bash
# The main job: set up (scripts/setup.sh), then run the benchmark raw and guarded on the same
# instances with the embedded local model, build the report, and print where it is.
# Pass options through, e.g. `bash scripts/demo.sh --model sim:paper` for a fast simulated run;
# with a model other than `local`/`local:...` the embedded model runtime is not installed
# (only the bench extra: the report's statistics and plots).
set -euo pipefail
cd "$(dirname "$0")/.."
model=local
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    --model) model=${args[$((i + 1))]:-local} ;;
    --model=*) model=${args[$i]#--model=} ;;
  esac
done
case "$model" in
  local | local:*) extras=local,bench ;;
  *) extras=bench ;;
esac
STEPGUARD_EXTRAS=${STEPGUARD_EXTRAS-$extras} bash scripts/setup.sh
if [ -n "${STEPGUARD_DRY_RUN:-}" ]; then
  exit 0
fi
exec .venv/bin/stepguard bench demo "$@"
