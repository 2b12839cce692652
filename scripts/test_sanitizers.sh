#!/usr/bin/env bash
# Builds the CPU code with AddressSanitizer and UndefinedBehaviorSanitizer (clang, no CUDA) into
# build-asan/ (scripts/sanitizer_build.sh) and runs the whole test suite there. Any sanitizer
# report fails a test, hence the run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/sanitizer_build.sh
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# LeakSanitizer is on (ASan's default) except in the binaries that start MPI, which turn it off
# themselves (collectives/mpi_leak_policy.cpp says why): so detect_leaks is not set here.
export ASAN_OPTIONS="abort_on_error=1:strict_string_checks=1"
# The multi-node (namespaces) and Slurm tests check launch and fault handling, not memory, and
# take minutes: they run once, on the normal build. The capture tests that preload
# libopbench_capture.so into other programs (label preload) cannot run here: an instrumented
# library needs the sanitizer runtime first in the program it enters. The capture's core runs
# here in its unit tests, and so do the replays (--capture-path). The tests of time rather than
# memory (label timing: the peers' comparisons, --timeout's bound) run on the normal build only,
# and so do the tests of the shell scripts' own behaviour (label scripts: report.sh, run_script.sh),
# which run binaries whose paths the other tests cover here, and the tests of which files a run
# touches (label files: its refusals run here in the unit tests, --resume in the kill tests), and
# the checks of the documentation against the code (label docs).
bash scripts/ctest_cores.sh build-asan --output-on-failure --timeout 900 \
  -LE 'multinode|slurm|preload|survey_full|timing|scripts|files|docs'
