#!/usr/bin/env bash
# Builds the CPU code with AddressSanitizer and UndefinedBehaviorSanitizer (no CUDA) into
# build-asan/ and runs the whole test suite there. Any sanitizer report fails a test, hence the run.
set -euo pipefail
cd "$(dirname "$0")/.."
# -Wno-maybe-uninitialized: under sanitizer instrumentation GCC 12 reports false positives inside
# libstdc++ (std::regex, std::function).
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1 -Wno-maybe-uninitialized"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPBENCH_WITH_CUDA=OFF \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" > /dev/null
cmake --build build-asan -j "$(nproc)" > build-asan.log 2>&1 || { tail -30 build-asan.log; exit 1; }
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
cd build-asan
# The tests that start MPI (bench_ccl, bench_fsdp, and the suites, corpus and self-test that run them) keep
# AddressSanitizer's memory checks and UBSan but not LeakSanitizer: Open MPI dlopen()s its
# components and unloads them before the leak report, so their allocations cannot be told apart
# (or suppressed). Every other test runs with leak checking.
mpi_tests='ccl|fsdp|install|report|corpus|selftest|run_script|collectives|mpirun|docs'
# The multi-node (namespaces) and Slurm tests check launch and fault handling, not memory, and
# take minutes: they run once, on the normal build. The capture tests that preload
# libopbench_capture.so into other programs (label preload) cannot run here: an instrumented
# library needs the sanitizer runtime first in the program it enters. The capture's core runs
# here in its unit tests, and so do the replays (--capture-path).
launch_labels='multinode|slurm|preload|survey_full'
ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1" \
  ctest --output-on-failure -j "$(nproc)" --timeout 900 -E "$mpi_tests" -LE "$launch_labels"
ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_string_checks=1" \
  ctest --output-on-failure -j "$(nproc)" --timeout 900 -R "$mpi_tests" -LE "$launch_labels"
