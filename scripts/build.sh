#!/usr/bin/env bash
# Configures and builds opbench into build/ (Release): every target, or only those named with
# --target (and what they need). The other arguments go to cmake's configure step, e.g.
#   scripts/build.sh -DCMAKE_CUDA_ARCHITECTURES=90
#   scripts/build.sh --target bench_gemm      # what scripts/run_main.sh builds
set -euo pipefail
cd "$(dirname "$0")/.."
targets=() configure=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --target)
      [ $# -ge 2 ] || { echo "error: scripts/build.sh: --target needs a target name" >&2; exit 2; }
      targets+=(--target "$2")
      shift 2 ;;
    *) configure+=("$1"); shift ;;
  esac
done
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ -f build/CMakeCache.txt ]; then generator=(); fi  # keep the generator the tree was made with
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${configure[@]}" >/dev/null
cmake --build build -j "$(nproc)" "${targets[@]}"
