#!/usr/bin/env bash
# Configures and builds build-asan/: the CPU code (no CUDA) compiled by clang with
# AddressSanitizer and UndefinedBehaviorSanitizer, the libFuzzer targets included. One
# instrumented tree serves the sanitizer suite (scripts/test_sanitizers.sh) and the fuzzing
# (scripts/fuzz.sh), so the tests compile the project twice (normal and instrumented), not three
# times. The fuzzers' coverage instrumentation (fuzzer-no-link) is in every object of this tree;
# outside a fuzz target its callbacks are the sanitizer runtime's no-ops.
#   scripts/sanitizer_build.sh [TARGET...]   (default: everything)
# The build log is build-asan.log; its last lines are shown when the build fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# -O1 -gline-tables-only: sanitizer reports need file and line, not variables. The build type's
# flags are set as well, or RelWithDebInfo's -O2 -g would come after ours: they more than double
# the compile time of this tree (36 s against 16 s for gemm/bench_gemm.cpp).
flags="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
level="-O1 -gline-tables-only -DNDEBUG"
CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DOPBENCH_WITH_CUDA=OFF -DOPBENCH_FUZZ=ON -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$level" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$level" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" > /dev/null
targets=()
[ $# -gt 0 ] && targets=(--target "$@")
cmake --build build-asan -j "$(nproc)" "${targets[@]}" > build-asan.log 2>&1 \
  || { tail -30 build-asan.log; exit 1; }
