#!/usr/bin/env bash
# bench_gemm's cuBLASLt provider against torch.matmul on the GPU, bf16, on square shapes and a
# model's GEMMs, each shape run by both back to back. Needs a Python with torch (PYTHON=...).
#   bench/peers/gemm_vs_torch.sh [MODEL=llama3.1-70b] [TP=8] [SQUARES="4096 8192"]
set -euo pipefail
cd "$(dirname "$0")/../.."
model=${1:-llama3.1-70b}
tp=${2:-8}
squares=${3:-4096 8192}
python=${PYTHON:-python3}
bench=build/gemm/bench_gemm
"$python" -c 'import torch; assert torch.cuda.is_available()' ||
  { echo "error: $python has no torch with CUDA (set PYTHON=...)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shapes=()
for s in $squares; do shapes+=("square $s $s $s NN"); done
while read -r _ gemm pass m n k layout _; do
  shapes+=("$gemm/$pass $m $n $k $layout")
done < <("$bench" --backend cuda --model "$model" --tp "$tp" --dtype bf16 --dry-run | awk 'NR > 2 && NF >= 9')
printf '| shape | m | n | k | layout | bench_gemm (us) | torch.matmul (us) | ratio |\n|---|---:|---:|---:|---|---:|---:|---:|\n'
i=0
for shape in "${shapes[@]}"; do
  read -r name m n k layout <<<"$shape"
  i=$((i + 1))
  "$bench" --backend cuda --m "$m" --n "$n" --k "$k" --layout "$layout" --dtype bf16 \
    --report-dir-path "$tmp/ours_$i" --quiet >/dev/null 2>&1
  ours=$(/usr/bin/python3 -c 'import csv,sys; print(next(csv.DictReader(open(sys.argv[1])))["time_us"])' "$tmp/ours_$i/gemm_sweep.csv")
  peer=$("$python" bench/peers/torch_gemm.py "$m" "$n" "$k" --layout "$layout" | sed -E 's/.*mean_us=([0-9.]+).*/\1/')
  /usr/bin/python3 -c 'import sys; o, p = float(sys.argv[6]), float(sys.argv[7]); print(f"| {sys.argv[1]} | {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {sys.argv[5]} | {o:.2f} | {p:.2f} | {o / p:.3f} |")' \
    "$name" "$m" "$n" "$k" "$layout" "$ours" "$peer"
done
echo "(ratio = bench_gemm time / torch.matmul time; bench_gemm rotates inputs over 4x L2, torch reuses one set)"
