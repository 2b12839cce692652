#!/usr/bin/env bash
# Configures and builds opbench into build/ (Release). Extra arguments go to cmake's configure
# step, e.g. scripts/build.sh -DCMAKE_CUDA_ARCHITECTURES=90
set -euo pipefail
cd "$(dirname "$0")/.."
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ -f build/CMakeCache.txt ]; then generator=(); fi  # keep the generator the tree was made with
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$(nproc)"
