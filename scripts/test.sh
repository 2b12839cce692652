#!/usr/bin/env bash
# Sets everything up, builds, and runs every test:
#  1. the suite (unit and integration tests, ctest) on the normal build;
#  2. the same suite on an AddressSanitizer + UndefinedBehaviorSanitizer build (scripts/test_sanitizers.sh);
#  3. every fuzz target for FUZZ_SECONDS (default 30) each (scripts/fuzz.sh).
# OPBENCH_TESTS=suite runs only the first (a quick local check).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
# The complete cuDNN surveys of A100, H200 and B200 (label survey_full) are sampled in this run;
# `cd build && ctest -L survey_full` runs them whole.
(cd build && ctest --output-on-failure -j "$(nproc)" --timeout 900 -LE survey_full)
if [ "${OPBENCH_TESTS:-all}" = all ]; then
  echo "== sanitizers: the suite again under ASan + UBSan" >&2
  bash scripts/test_sanitizers.sh
  echo "== fuzzing: every input parser" >&2
  bash scripts/fuzz.sh
fi
