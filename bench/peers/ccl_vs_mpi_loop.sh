#!/usr/bin/env bash
# bench_ccl's mpi backend against a plain MPI_Allreduce loop, all_reduce fp32 4 KiB..1 MiB,
# out of place, same method (5 warm-up calls, then 5 samples of ITERS calls: bench_ccl's adaptive
# stop is pinned to 5 samples so only the harness differs), alternating runs so both see the
# same machine state.
#   bench/peers/ccl_vs_mpi_loop.sh [RANKS=2] [ROUNDS=3] [ITERS=200]
set -euo pipefail
cd "$(dirname "$0")/../.."
ranks=${1:-2}
rounds=${2:-3}
iters=${3:-200}
mkdir -p build/peers
mpicc -O2 -o build/peers/mpi_allreduce_loop bench/peers/mpi_allreduce_loop.c
launch=(mpirun -np "$ranks" --oversubscribe)
[ "$(id -u)" -eq 0 ] && launch+=(--allow-run-as-root)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$rounds"); do
  "${launch[@]}" build/collectives/bench_ccl --backend mpi --op all_reduce -b 4K -e 1M -f 4 -n "$iters" -w 5 -c 0 \
    --min-samples 5 --max-samples 5 \
    --placement out_of_place --report-csv-path "$tmp/ours_$r.csv" --report-dir-path "$tmp/raw_$r" --quiet >/dev/null 2>&1
  "${launch[@]}" build/peers/mpi_allreduce_loop "$iters" 5 > "$tmp/peer_$r.txt"
done
/usr/bin/python3 bench/peers/ratio_table.py "$tmp" "$rounds" "plain MPI_Allreduce loop" "bench_ccl mpi" plain
