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
for r in $(seq "$rounds"); do
  "${launch[@]}" build/collectives/bench_ccl --backend mpi --op all_reduce -b 4K -e 1M -f 4 -n "$iters" -w 5 -c 0 \
    --min-samples 5 --max-samples 5 \
    --placement out_of_place --report-csv-path "$tmp/ours_$r.csv" --report-dir-path "$tmp/raw_$r" --quiet >/dev/null 2>&1
  "${launch[@]}" build/peers/mpi_allreduce_loop "$iters" 5 >> "$tmp/plain.txt"
done
/usr/bin/python3 - "$tmp" "$rounds" <<'PY'
import csv, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
ours, plain = {}, {}
for r in range(1, rounds + 1):
    for row in csv.DictReader(open(f"{tmp}/ours_{r}.csv")):
        ours.setdefault(int(row["size_bytes"]), []).append(float(row["time_us"]))
for line in open(f"{tmp}/plain.txt"):
    _, size, us = line.split()
    plain.setdefault(int(size), []).append(float(us))
print(f"| size | bench_ccl mpi (us) | plain MPI_Allreduce loop (us) | ratio |")
print(f"|---:|---:|---:|---:|")
for size in sorted(ours):
    o, p = statistics.median(ours[size]), statistics.median(plain[size])
    print(f"| {size} | {o:.2f} | {p:.2f} | {o / p:.3f} |")
print(f"(medians of {rounds} alternating runs each)")
PY
rm -rf "$tmp"
