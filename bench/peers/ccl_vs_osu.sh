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
/usr/bin/python3 - "$tmp" "$rounds" <<'PY'
import csv, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
ours, peer = {}, {}
for r in range(1, rounds + 1):
    for row in csv.DictReader(open(f"{tmp}/ours_{r}.csv")):
        ours.setdefault(int(row["size_bytes"]), []).append(float(row["time_us"]))
    for line in open(f"{tmp}/peer_{r}.txt"):
        f = line.split()
        if len(f) >= 2 and f[0].isdigit():  # "size  avg latency(us)"
            peer.setdefault(int(f[0]), []).append(float(f[1]))
print("| size | osu_allreduce (us) | bench_ccl mpi (us) | ratio |")
print("|---:|---:|---:|---:|")
for size in sorted(set(ours) & set(peer)):
    o, p = statistics.median(ours[size]), statistics.median(peer[size])
    print(f"| {size} | {p:.2f} | {o:.2f} | {o / p:.3f} |")
print(f"(medians of {rounds} alternating runs; OSU reports the mean over ranks, as -a 1 does)")
PY
