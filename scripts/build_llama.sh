#!/usr/bin/env bash
# Build the embedded model runtime (llama-cpp-python, pinned) once into a wheel cache and print
# the cache folder, for `pip install --find-links`.
#
# Why not pip's own build: llama-cpp-python compiles llama.cpp with -march=native, which on these
# machines enables AMX tile instructions that the virtual machine does not permit; the server then
# dies with a general protection fault at its first completion (seen 2026-11-30; pip also caches
# that wheel and reuses it). Here llama.cpp is built without GGML_NATIVE, with the vector
# extensions this CPU has (AVX2/FMA/F16C, and AVX-512 where present), so the wheel runs wherever
# those are, and it is cached under a key of those flags.
#
#   STEPGUARD_LLAMA_CMAKE_ARGS  replaces the CMake flags below
#   STEPGUARD_WHEEL_CACHE       the cache (default: ${XDG_CACHE_HOME:-~/.cache}/stepguard/wheels)
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=0.3.36
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
args="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
tag=avx2
if [[ " $flags " == *" avx512f "* ]]; then
  args="$args -DGGML_AVX512=ON"
  tag=avx512
fi
args=${STEPGUARD_LLAMA_CMAKE_ARGS:-$args}
key=$(printf '%s %s' "$VERSION" "$args" | sha256sum | cut -c1-12)
dir="${STEPGUARD_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stepguard/wheels}/llama-$tag-$key"
if ! ls "$dir"/llama_cpp_python-"$VERSION"-*.whl >/dev/null 2>&1; then
  echo "build_llama: compiling llama-cpp-python $VERSION once ($args; 5 to 10 minutes on 2 cores)" >&2
  mkdir -p "$dir"
  CMAKE_ARGS="$args" .venv/bin/python -m pip wheel -q --no-deps --no-cache-dir -w "$dir" "llama-cpp-python==$VERSION" >&2
fi
echo "$dir"
