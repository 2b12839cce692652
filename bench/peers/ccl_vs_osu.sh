#!/usr/bin/env bash
# bench_ccl's mpi backend against the OSU micro-benchmarks' osu_allreduce (a build the user made;
# Debian does not package it), 4 KiB..1 MiB, alternating runs. Prints both latencies and ratio.
#   bench/peers/ccl_vs_osu.sh OSU_COLLECTIVE_DIR [RANKS=2] [ROUNDS=3] [ITERS=200]
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:?usage: $0 OSU_COLLECTIVE_DIR [RANKS] [ROUNDS] [ITERS]}
ranks=${2:-2}
rounds=${3:-3}
iters=${4:-200}
peer="$dir/osu_allreduce"
[ -x "$peer" ] || { echo "error: $peer not found" >&2; exit 2; }
source bench/peers/ccl_peer_lib.sh
compare_rounds "$ranks" "$rounds" "osu_allreduce" "bench_ccl mpi" osu \
  --backend mpi --op all_reduce -b 4K -e 1M -f 2 -n "$iters" -w 20 -c 0 \
  -- "$peer" -m 4096:1048576 -i "$iters" -x 20
