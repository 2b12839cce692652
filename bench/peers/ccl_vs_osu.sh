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
launch=(mpirun -np "$ranks" --oversubscribe)
[ "$(id -u)" -eq 0 ] && launch+=(--allow-run-as-root)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$rounds"); do
  "${launch[@]}" build/collectives/bench_ccl --backend mpi --op all_reduce -b 4K -e 1M -f 2 -n "$iters" -w 20 -c 0 \
    --placement out_of_place --report-csv-path "$tmp/ours_$r.csv" --report-dir-path "$tmp/raw_$r" --quiet >/dev/null
  "${launch[@]}" "$peer" -m 4096:1048576 -i "$iters" -x 20 > "$tmp/peer_$r.txt"
done
/usr/bin/python3 bench/peers/ratio_table.py "$tmp" "$rounds" "osu_allreduce" "bench_ccl mpi" osu
