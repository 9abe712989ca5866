# Sourced by build_llama.sh and build_llama_server.sh: llama.cpp's CMake flags for this CPU, and a tag.
#
# Not -march=native (GGML_NATIVE): on these machines it enables AMX tile instructions that the
# virtual machine does not permit, and the server dies with a general protection fault at its
# first completion (seen 2026-11-30). Instead: the vector extensions this CPU has (AVX2/FMA/F16C,
# and AVX-512 where present), so a build runs wherever those are.
cpu_flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
llama_cmake_args="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
llama_cpu_tag=avx2
if [[ " $cpu_flags " == *" avx512f "* ]]; then
  llama_cmake_args="$llama_cmake_args -DGGML_AVX512=ON"
  llama_cpu_tag=avx512
fi
