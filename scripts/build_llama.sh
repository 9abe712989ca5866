#!/usr/bin/env bash
# Build the embedded model runtime (llama-cpp-python, pinned) once into a wheel cache and print
# the cache folder, for `pip install --find-links`.
#
# Why not pip's own build: llama-cpp-python compiles llama.cpp with -march=native, which faults on
# these machines (scripts/_cpu_flags.sh; pip also caches that wheel and reuses it). Here llama.cpp
# is built with _cpu_flags.sh's flags, and the wheel is cached under a key of those flags.
#
#   STEPGUARD_LLAMA_CMAKE_ARGS  replaces the CMake flags below
#   STEPGUARD_WHEEL_CACHE       the cache (default: ${XDG_CACHE_HOME:-~/.cache}/stepguard/wheels)
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=0.3.36
source scripts/_cpu_flags.sh
tag=$llama_cpu_tag
args=${STEPGUARD_LLAMA_CMAKE_ARGS:-$llama_cmake_args}
key=$(printf '%s %s' "$VERSION" "$args" | sha256sum | cut -c1-12)
dir="${STEPGUARD_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stepguard/wheels}/llama-$tag-$key"
if ! ls "$dir"/llama_cpp_python-"$VERSION"-*.whl >/dev/null 2>&1; then
  echo "build_llama: compiling llama-cpp-python $VERSION once ($args; 5 to 10 minutes on 2 cores)" >&2
  mkdir -p "$dir"
  CMAKE_ARGS="$args" .venv/bin/python -m pip wheel -q --no-deps --no-cache-dir -w "$dir" "llama-cpp-python==$VERSION" >&2
fi
echo "$dir"
