#!/usr/bin/env bash
# bench_gemm against a peer on the same shapes — square ones and a model's GEMMs, layouts
# included — each shape run by both back to back, ROUNDS times (medians), as a Markdown table:
#   numpy  the CPU provider against numpy's matmul on the same OpenBLAS, fp32
#   torch  the cuBLASLt provider against torch.matmul, bf16 (PYTHON=: a Python with CUDA torch)
# Usage: [ROUNDS=1] [LIST=1] bench/peers/gemm_vs_peer.sh numpy|torch [MODEL|none] [MODEL_FLAGS] [SQUARES]
#   LIST=1 prints the shapes it would compare (name m n k layout) and runs nothing
#   numpy defaults: llama3.1-8b "--seq-len 512" "1024 2048 4096"
#   torch defaults: llama3.1-70b "--tp 8" "4096 8192"
set -euo pipefail
cd "$(dirname "$0")/../.."
peer=${1:?usage: $0 numpy|torch [MODEL|none] [MODEL_FLAGS] [SQUARES]}
case "$peer" in
  numpy) backend=cpu dtype=fp32 python=/usr/bin/python3 defaults=(llama3.1-8b "--seq-len 512" "1024 2048 4096") ;;
  torch) backend=cuda dtype=bf16 python=${PYTHON:-python3} defaults=(llama3.1-70b "--tp 8" "4096 8192")
         "$python" -c 'import torch; assert torch.cuda.is_available()' ||
           { echo "error: $python has no torch with CUDA (set PYTHON=...)" >&2; exit 2; } ;;
  *) echo "error: unknown peer '$peer' (numpy or torch)" >&2; exit 2 ;;
esac
model=${2:-${defaults[0]}}
read -r -a model_flags <<<"${3:-${defaults[1]}}"
squares=${4:-${defaults[2]}}
rounds=${ROUNDS:-1}
bench=build/gemm/bench_gemm
[ -x "$bench" ] || { echo "error: $bench not built (bash scripts/build.sh)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

shapes=() left_out_note=""
for s in $squares; do shapes+=("square $s $s $s NN"); done
# The model's GEMMs, from bench_gemm's own dry run. Its table is read by column name, the
# columns being the runs of dashes under the header (a cell may be empty: impl); the peers
# multiply single matrices, so grouped (impl) and batched rows are left out, and said so.
dry_run_gemms() {
  /usr/bin/python3 -c '
import sys
lines = sys.stdin.read().splitlines()
rule = next(i for i, l in enumerate(lines) if l.startswith("---"))
spans, i, r = [], 0, lines[rule]
while i < len(r):
    if r[i] == "-":
        j = r.find(" ", i)
        j = len(r) if j < 0 else j
        spans.append((i, j))
        i = j
    else:
        i += 1
spans[-1] = (spans[-1][0], None)
names = [lines[rule - 1][a:b].strip() for a, b in spans]
left_out = 0
for l in lines[rule + 1:]:
    c = dict(zip(names, (l[a:b].strip() for a, b in spans)))
    if not c["m"].isdigit():  # the table ends (a blank line, the summary)
        break
    if c["impl"] or c["batch"] != "1":
        left_out += 1
        continue
    print(c["gemm"] + "/" + c["pass"], c["m"], c["n"], c["k"], c["layout"])
if left_out:
    print(f"note: {left_out} grouped or batched GEMMs of the model left out (the peer multiplies single matrices)")
'
}
if [ "$model" != none ]; then
  dry=$("$bench" --backend "$backend" --model "$model" "${model_flags[@]}" --dtype "$dtype" --dry-run) ||
    { echo "error: bench_gemm --dry-run failed for --model $model" >&2; exit 2; }
  while read -r line; do
    case "$line" in note:*) left_out_note=$line ;; *) shapes+=("$line") ;; esac
  done < <(dry_run_gemms <<<"$dry")
  [ "${#shapes[@]}" -gt "$(wc -w <<<"$squares")" ] ||
    { echo "error: no GEMM of --model $model read from bench_gemm --dry-run" >&2; exit 2; }
fi

if [ -n "${LIST:-}" ]; then printf '%s\n' "${shapes[@]}"; [ -z "$left_out_note" ] || echo "$left_out_note" >&2; exit 0; fi

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# One run of each on the current shape (name m n k layout, run i), appended to the lists.
run_ours() {
  "$bench" --backend "$backend" --m "$m" --n "$n" --k "$k" --layout "$layout" --dtype "$dtype" \
    --report-dir-path "$tmp/ours_$i" --quiet >"$tmp/ours_$i.log" 2>&1 ||
    { echo "error: bench_gemm failed on $name ($m x $n x $k $layout): $(grep -m1 '^error' "$tmp/ours_$i.log")" >&2; exit 1; }
  local row
  row=$(/usr/bin/python3 -c 'import csv,sys; r = next(csv.DictReader(open(sys.argv[1]))); print(r["time_us"], r["sm_clock_before_mhz"] or "-", r["sm_clock_after_mhz"] or "-")' "$tmp/ours_$i/gemm_sweep.csv")
  read -r time before after <<<"$row"
  ours_list+=("$time")
  # the GPU's SM clock around the samples (a hot, power-limited GPU runs slower: docs/outputs.md)
  clock=$([ "$before" = - ] && echo - || printf '%.0f-%.0f' "$before" "$after")
}
run_peer() {
  peer_list+=("$("$python" "bench/peers/${peer}_gemm.py" "$m" "$n" "$k" --layout "$layout" --dtype "$dtype" | sed -E 's/.*mean_us=([0-9.]+).*/\1/')")
}
printf '| shape | m | n | k | layout | bench_gemm (us) | %s (us) | ratio | bench_gemm SM MHz |\n|---|---:|---:|---:|---|---:|---:|---:|---:|\n' "$peer"
i=0
for shape in "${shapes[@]}"; do
  read -r name m n k layout <<<"$shape"
  ours_list=() peer_list=()
  for _ in $(seq "$rounds"); do
    i=$((i + 1))
    # Who runs first alternates: the one after the other finds a hotter, slower-clocked GPU.
    if [ $((i % 2)) -eq 1 ]; then run_ours; run_peer; else run_peer; run_ours; fi
  done
  ours=$(median "${ours_list[@]}")
  theirs=$(median "${peer_list[@]}")
  /usr/bin/python3 -c 'import sys; o, p = float(sys.argv[6]), float(sys.argv[7]); print(f"| {sys.argv[1]} | {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {sys.argv[5]} | {o:.2f} | {p:.2f} | {o / p:.3f} | {sys.argv[8]} |")' \
    "$name" "$m" "$n" "$k" "$layout" "$ours" "$theirs" "$clock"
done
echo "(ratio = bench_gemm time / $peer time, medians of $rounds alternating runs; under 1: bench_gemm measured less time)"
[ -z "$left_out_note" ] || echo "$left_out_note"
