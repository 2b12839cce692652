#!/usr/bin/env bash
# Runs ctest in BUILD_DIR with one CPU-bound test per core, and the tests labelled `waiting` on
# top of them: those spend their time waiting (Slurm's once-every-30-s time-limit check, ranks
# yielding while a fault's --timeout runs out), so running them in a core's slot left that core
# idle for minutes. Every other test takes one slot of the resource `cores`
# (tests/CMakeLists.txt); the spec written here holds one slot per core, and -j leaves room for
# two waiting tests beside them. A plain `ctest -jN` without the spec ignores the resource and
# runs as before.
#   scripts/ctest_cores.sh BUILD_DIR [CTEST_ARGS...]
set -euo pipefail
build=${1:?usage: scripts/ctest_cores.sh BUILD_DIR [CTEST_ARGS...]}
shift
cores=$(nproc)
spec=$build/ctest_cores.json
printf '{"version": {"major": 1, "minor": 0}, "local": [{"cores": [{"id": "0", "slots": %d}]}]}\n' \
  "$cores" > "$spec"
cd "$build"
ctest -j "$((cores + 2))" --resource-spec-file ctest_cores.json "$@"
