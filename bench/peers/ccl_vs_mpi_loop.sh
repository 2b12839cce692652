#!/usr/bin/env bash
# bench_ccl's mpi backend against a plain MPI_Allreduce loop, all_reduce fp32 4 KiB..1 MiB,
# out of place, same method (5 warm-up calls, then 5 samples of ITERS calls: bench_ccl's adaptive
# stop is pinned to 5 samples so only the harness differs; the loop's allocator keeps its pages as
# bench_ccl's does), alternating runs so both see the same machine state.
#   bench/peers/ccl_vs_mpi_loop.sh [RANKS=2] [ROUNDS=3] [ITERS=200]
set -euo pipefail
cd "$(dirname "$0")/../.."
ranks=${1:-2}
rounds=${2:-3}
iters=${3:-200}
mkdir -p build/peers
mpicc -O2 -o build/peers/mpi_collective_loop bench/peers/mpi_collective_loop.c
source bench/peers/ccl_peer_lib.sh
compare_rounds "$ranks" "$rounds" "plain MPI_Allreduce loop" "bench_ccl mpi" plain \
  --backend mpi --op all_reduce -b 4K -e 1M -f 4 -n "$iters" -w 5 -c 0 --min-samples 5 --max-samples 5 \
  -- build/peers/mpi_collective_loop all_reduce 4096 1048576 4 "$iters" 5 1
