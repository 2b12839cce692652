#!/usr/bin/env bash
# bench_ccl's NCCL backend against an nccl-tests build (MPI=1) the user made, same sizes, same
# iteration counts, out of place, alternating runs. Prints nccl-tests' time, ours and the ratio.
#   bench/peers/ccl_vs_nccl_tests.sh NCCL_TESTS_BUILD_DIR [RANKS=1] [OP=all_reduce] [ROUNDS=3]
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:?usage: $0 NCCL_TESTS_BUILD_DIR [RANKS] [OP] [ROUNDS]}
ranks=${2:-1}
op=${3:-all_reduce}
rounds=${4:-3}
peer="$dir/${op}_perf"
[ -x "$peer" ] || { echo "error: $peer not found (build nccl-tests with MPI=1 first)" >&2; exit 2; }
launch=(mpirun -np "$ranks" --oversubscribe)
[ "$(id -u)" -eq 0 ] && launch+=(--allow-run-as-root)
args=(-b 8 -e 128M -f 4 -n 20 -w 5 -c 0)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$rounds"); do
  "${launch[@]}" build/collectives/bench_ccl --backend nccl --op "$op" "${args[@]}" \
    --placement out_of_place --report-csv-path "$tmp/ours_$r.csv" --report-dir-path "$tmp/raw_$r" --quiet >/dev/null
  "${launch[@]}" "$peer" "${args[@]}" -g 1 > "$tmp/peer_$r.txt"
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
        # data rows: size count type redop root time algbw busbw #wrong (out of place) ...
        if len(f) >= 9 and f[0].isdigit():
            peer.setdefault(int(f[0]), []).append(float(f[5]))
print("| size | nccl-tests (us) | bench_ccl nccl (us) | ratio |")
print("|---:|---:|---:|---:|")
for size in sorted(set(ours) & set(peer)):
    o, p = statistics.median(ours[size]), statistics.median(peer[size])
    print(f"| {size} | {p:.2f} | {o:.2f} | {o / p:.3f} |")
print(f"(medians of {rounds} alternating runs; ratio = ours / nccl-tests, out of place)")
PY
