#!/usr/bin/env bash
# bench_ccl's mpi backend against the plain MPI loop where the host allocator matters:
# reduce_scatter, all_gather and all_reduce fp32 from MIN to MAX bytes (1..64 MiB), doubling,
# out of place, by ccl_vs_mpi_loop.sh's method. The loop's allocator keeps its pages as bench_ccl's
# processes do (common/host_allocator.hpp); beside it, for context, the same loop under glibc's
# defaults, where Open MPI's MPI_Reduce_scatter_block maps a temporary buffer the size of its
# input every call and pays its page faults (what bench_ccl measured before it kept its pages).
#   bench/peers/ccl_vs_mpi_loop_large.sh [RANKS=2] [ROUNDS=3] [ITERS=20] [MIN=1048576] [MAX=67108864]
set -euo pipefail
cd "$(dirname "$0")/../.."
ranks=${1:-2}
rounds=${2:-3}
iters=${3:-20}
min=${4:-1048576}
max=${5:-67108864}
ops=reduce_scatter,all_gather,all_reduce
mkdir -p build/peers
mpicc -O2 -o build/peers/mpi_collective_loop bench/peers/mpi_collective_loop.c
source bench/peers/ccl_peer_lib.sh
reference=(build/peers/mpi_collective_loop "$ops" "$min" "$max" 2 "$iters" 5 0)
reference_label="plain loop, glibc defaults"
compare_rounds "$ranks" "$rounds" "plain loop keeping pages" "bench_ccl mpi" plain \
  --backend mpi --op "$ops" -b "$min" -e "$max" -f 2 -n "$iters" -w 5 -c 0 --min-samples 5 --max-samples 5 \
  -- build/peers/mpi_collective_loop "$ops" "$min" "$max" 2 "$iters" 5 1
