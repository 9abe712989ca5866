#!/usr/bin/env bash
# Several models in one report (issue 31): raw and guarded on the same committed instances for each
# embedded model and for sim:paper (SIMULATED), then one `stepguard bench report` over all of them
# (its models.png is the shape of the paper's 14-model figure). Resumable: each store is under
# benchmarks/stores/models/<model>/<mode> and a second run skips every finished row.
#
# The 1.5B model's raw side is benchmarks/stores/curve/raw (every length) and its 95-step guarded
# side benchmarks/stores/curve/digits; the shorter guarded lengths are run here. sim:paper runs 95 steps too.
#
# usage: bash benchmarks/models.sh [--report-only] [OUT]     (OUT: the report folder, default runs/models-report)
# env:   CONFIGS (default 5x2,5x7,14x2,14x7,23x2,23x7), LIMIT (instances a configuration, default 2),
#        MODELS (default "smollm2-135m qwen2.5-coder-0.5b qwen2.5-coder-1.5b", fastest first),
#        MAX_WALL_S (default 90, as the committed stores were run: the guarded runs of the models other than the 1.5B stop an instance
#        after this many seconds, its row then failed: a model wrong at nearly every step sends the
#        ladder's digit rungs to work on each one, hours an instance on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
only_report=0
if [ "${1:-}" = --report-only ]; then only_report=1; shift; fi
out=${1:-runs/models-report}
inst=benchmarks/stores/curve/instances.jsonl
configs=${CONFIGS:-5x2,5x7,14x2,14x7,23x2,23x7}
limit=${LIMIT:-2}
models=${MODELS:-smollm2-135m qwen2.5-coder-0.5b qwen2.5-coder-1.5b}
wall=${MAX_WALL_S:-90}
stores=(benchmarks/stores/curve/raw benchmarks/stores/curve/digits)

run() {  # model mode store configs [bench run flags...]
  local model=$1 mode=$2 store=$3 cells=$4
  shift 4
  if [ "$only_report" = 0 ]; then
    "$py" -m stepguard bench run --instances "$inst" --configs "$cells" --limit "$limit" --concurrency 1 \
      --no-progress --model "$model" --mode "$mode" --out "$store" "$@"
  fi
  stores+=("$store")
}

run sim:paper raw benchmarks/stores/models/sim-paper/raw "$configs,95x2,95x7"  # seconds: every length
run sim:paper guarded benchmarks/stores/models/sim-paper/guarded "$configs,95x2,95x7"
for m in $models; do
  dir=benchmarks/stores/models/$m
  if [ "$m" = qwen2.5-coder-1.5b ]; then
    run "local:$m" guarded "$dir/guarded" "$configs"
  else
    run "local:$m" raw "$dir/raw" "$configs"
    run "local:$m" guarded "$dir/guarded" "$configs" --max-wall-s "$wall"
  fi
done
for extra in benchmarks/stores/models/qwen2.5-coder-1.5b/guarded benchmarks/stores/models/qwen2.5-coder-1.5b/reask; do
  # the 1.5B's shorter guarded lengths and Instructor's re-ask loop, where run (by this script, or by
  # `bench run --mode reask ... --out benchmarks/stores/models/qwen2.5-coder-1.5b/reask`)
  if [ -s "$extra/results.jsonl" ] && [[ ! " ${stores[*]} " == *" $extra "* ]]; then stores+=("$extra"); fi
done
"$py" -m stepguard bench report "${stores[@]}" --out "$out"
echo "report: $out/report.html (figure: $out/models.png)"
