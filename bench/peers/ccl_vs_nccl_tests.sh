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
/usr/bin/python3 bench/peers/ratio_table.py "$tmp" "$rounds" "nccl-tests" "bench_ccl nccl" nccl-tests
