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
args=(-b 8 -e 128M -f 4 -n 20 -w 5 -c 0)
source bench/peers/ccl_peer_lib.sh
compare_rounds "$ranks" "$rounds" "nccl-tests" "bench_ccl nccl" nccl-tests \
  --backend nccl --op "$op" "${args[@]}" -- "$peer" "${args[@]}" -g 1
