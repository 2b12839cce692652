#!/usr/bin/env bash
# bench_gemm's CPU provider against numpy's matmul (same OpenBLAS), fp32, on square shapes and on
# a model's GEMMs (layouts included), each shape run by both back to back so both see the same
# machine state, ROUNDS times (medians). Prints a Markdown table of the two means and their ratio.
#   [ROUNDS=1] bench/peers/gemm_vs_numpy.sh [MODEL=llama3.1-8b|none] [SEQ_LEN=512] [SQUARES="1024 2048 4096"]
set -euo pipefail
cd "$(dirname "$0")/../.."
model=${1:-llama3.1-8b}
seq_len=${2:-512}
squares=${3:-1024 2048 4096}
rounds=${ROUNDS:-1}
bench=build/gemm/bench_gemm
[ -x "$bench" ] || { echo "error: $bench not built (bash scripts/build.sh)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

shapes=()
for s in $squares; do shapes+=("square $s $s $s NN"); done
# The model's GEMMs, from bench_gemm's own dry run (model gemm pass m n k layout ...).
while read -r _ gemm pass m n k layout _; do
  shapes+=("$gemm/$pass $m $n $k $layout")
done < <([ "$model" = none ] || "$bench" --backend cpu --model "$model" --seq-len "$seq_len" --dtype fp32 --dry-run | awk 'NR > 2 && NF >= 9')

printf '| shape | m | n | k | layout | bench_gemm (us) | numpy (us) | ratio |\n|---|---:|---:|---:|---|---:|---:|---:|\n'
i=0
for shape in "${shapes[@]}"; do
  read -r name m n k layout <<<"$shape"
  ours_list=() peer_list=()
  for _ in $(seq "$rounds"); do
    i=$((i + 1))
    "$bench" --backend cpu --m "$m" --n "$n" --k "$k" --layout "$layout" --dtype fp32 \
      --report-dir-path "$tmp/ours_$i" --quiet >/dev/null 2>&1
    ours_list+=("$(/usr/bin/python3 -c 'import csv,sys; print(next(csv.DictReader(open(sys.argv[1])))["time_us"])' "$tmp/ours_$i/gemm_sweep.csv")")
    peer_list+=("$(/usr/bin/python3 bench/peers/numpy_gemm.py "$m" "$n" "$k" --layout "$layout" | sed -E 's/.*mean_us=([0-9.]+).*/\1/')")
  done
  median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
  ours=$(median "${ours_list[@]}")
  peer=$(median "${peer_list[@]}")
  /usr/bin/python3 -c 'import sys; o, p = float(sys.argv[6]), float(sys.argv[7]); print(f"| {sys.argv[1]} | {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {sys.argv[5]} | {o:.1f} | {p:.1f} | {o / p:.3f} |")' \
    "$name" "$m" "$n" "$k" "$layout" "$ours" "$peer"
done
echo "(ratio = bench_gemm time / numpy time, medians of $rounds alternating runs: under 1 means bench_gemm measured less time)"
