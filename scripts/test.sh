#!/usr/bin/env bash
# Sets everything up, builds, and runs every test:
#  1. the suite (unit and integration tests, ctest) on the normal build;
#  2. the same suite on an AddressSanitizer + UndefinedBehaviorSanitizer build (scripts/test_sanitizers.sh);
#  3. every fuzz target for FUZZ_SECONDS (default 30) each (scripts/fuzz.sh), built in that same
#     sanitizer tree.
# OPBENCH_TESTS=suite runs only the first (a quick local check).
# Each phase prints how long it took, and the last line sums them: CI has a time budget.
set -euo pipefail
cd "$(dirname "$0")/.."
# The CPU cases of the tests defeat a 4 MiB cache rather than the CPU's own (or 64 MiB where sysfs
# names none): their operand sets rotate over 16 MiB, not 256 MiB, which halves the time of the
# CPU-heavy tests (138 s to 70 s for the memops, gemm, step, user-file and self-test ones) and
# runs the same code. The unit test of cpu_cache_bytes_to_evict checks the default; the tests of
# time (label timing) keep the real cache, since they compare with real programs.
export OPBENCH_CPU_CACHE_BYTES=${OPBENCH_CPU_CACHE_BYTES:-4M}
start=$SECONDS
timings=()
phase() {  # phase NAME COMMAND...: runs it, then says how long it took
  local name=$1 t0=$SECONDS
  shift
  echo "== $name" >&2
  "$@"
  timings+=("$name $((SECONDS - t0)) s")
  echo "== $name: $((SECONDS - t0)) s" >&2
}
phase setup bash scripts/setup.sh
phase build bash scripts/build.sh
# The complete cuDNN surveys of A100, H200 and B200 (label survey_full) are sampled in this run;
# `cd build && ctest -L survey_full` runs them whole.
suite() { bash scripts/ctest_cores.sh build --output-on-failure --timeout 900 -LE survey_full; }
phase suite suite
if [ "${OPBENCH_TESTS:-all}" = all ]; then
  phase "sanitizers (build and suite under ASan + UBSan)" bash scripts/test_sanitizers.sh
  phase "fuzzing (every input parser)" bash scripts/fuzz.sh
fi
summary=$(printf '%s, ' "${timings[@]}")
echo "test.sh: every phase passed in $((SECONDS - start)) s (${summary%, })" >&2
