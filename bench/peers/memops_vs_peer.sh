#!/usr/bin/env bash
# bench_memops's CPU provider against a peer on the same sweep case — SIZE elements, rows of COLS
# (rows = SIZE / COLS; adamw steps SIZE parameters) — each case run by both back to back, ROUNDS
# times (medians), as one Markdown table; both GB/s use bench_memops's io_bytes (the operator's
# bytes, whichever implementation moves them):
#   numpy  add, copy, cast_to_fp32 (bench_memops bf16 -> fp32; numpy fp16 -> fp32, and bf16 bits
#          widened and shifted) in fp32, bench/peers/numpy_memops.py
#   torch  layernorm and softmax fwd and bwd, swiglu fwd, cross_entropy, adamw in fp32 through
#          PyTorch on the CPU, bench/peers/torch_memops.py (PYTHON=: a Python with torch)
# Both peers use every core, as bench_memops's CPU provider does. A case whose bench_memops row is
# not ok shows its status and makes the script exit 1 after the table; a missing binary, peer
# script or module exits 2 with one error: line.
# Usage: [ROUNDS=3] bench/peers/memops_vs_peer.sh numpy|torch [SIZE=16M] [COLS=4096]
#
# GPU mode: bench/peers/memops_vs_peer.sh torch-cuda [MODELS=llama3.1-8b] [DTYPES=bf16,fp32]
# runs bench_memops --backend cuda once over the models' operators (with pct_of_copy, against the
# run's own device copy), then bench/peers/memops_vs_torch.py times PyTorch's own kernel for every
# row it has one for (F.rms_norm, softmax, cross_entropy, embedding backward, silu, fused AdamW,
# ...), as bench_memops times a GPU operator, in one process: one table with the ratio (PYTHON=:
# the Python with CUDA torch, default python3; the binaries from OPBENCH_BUILD_DIR, default build/).
set -euo pipefail
# (a relative OPBENCH_BUILD_DIR is the caller's, taken before the change into the repository)
[ -z "${OPBENCH_BUILD_DIR:-}" ] || OPBENCH_BUILD_DIR=$(realpath -m -- "$OPBENCH_BUILD_DIR")
cd "$(dirname "$0")/../.."
peer=${1:?usage: $0 numpy|torch|torch-cuda [SIZE|MODELS] [COLS|DTYPES]}
if [ "$peer" = torch-cuda ]; then
  bench=${OPBENCH_BUILD_DIR:-build}/memops/bench_memops
  [ -x "$bench" ] || { echo "error: $bench not built (bash scripts/build.sh)" >&2; exit 2; }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  "$bench" --backend cuda --model "${2:-llama3.1-8b}" --dtype "${3:-bf16,fp32}" --max-time 0.2 \
    --quiet --report-dir-path "$tmp/memops" >"$tmp/memops.log" 2>&1 ||
    { echo "error: bench_memops failed:" >&2; tail -n 5 "$tmp/memops.log" >&2; exit 1; }
  "${PYTHON:-python3}" bench/peers/memops_vs_torch.py "$tmp/memops" --device cuda
  exit
fi
size=${2:-16M}
cols=${3:-4096}
rounds=${ROUNDS:-3}
# Each case: label, op, pass, bench_memops's dtype, the peer's extra flags.
case "$peer" in
  numpy) python=/usr/bin/python3
         cases=("add add fwd fp32 -" "copy copy fwd fp32 -"
                "cast_to_fp32[fp16] cast_to_fp32 fwd bf16 --cast=fp16"
                "cast_to_fp32[bf16] cast_to_fp32 fwd bf16 --cast=bf16") ;;
  torch) python=${PYTHON:-/usr/bin/python3}
         cases=("layernorm layernorm fwd fp32 -" "layernorm layernorm bwd fp32 -"
                "softmax softmax fwd fp32 -" "softmax softmax bwd fp32 -" "swiglu swiglu fwd fp32 -"
                "cross_entropy cross_entropy fwd fp32 -" "adamw adamw fwd fp32 -") ;;
  *) echo "error: unknown peer '$peer' (numpy or torch)" >&2; exit 2 ;;
esac
script=bench/peers/${peer}_memops.py
[ -f "$script" ] || { echo "error: $script missing" >&2; exit 2; }
"$python" -c "import $peer" 2>/dev/null ||
  { echo "error: $python cannot import $peer (set PYTHON=... for torch)" >&2; exit 2; }
bench=build/memops/bench_memops
[ -x "$bench" ] || { echo "error: $bench not built (bash scripts/build.sh)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One field of the first row of a bench_memops CSV.
field() {
  /usr/bin/python3 -c 'import csv,sys; print(next(csv.DictReader(open(sys.argv[1])))[sys.argv[2]])' "$1" "$2"
}
printf '| op | pass | rows | cols | bench_memops (us) | %s (us) | ratio | bench_memops GB/s | %s GB/s |\n' \
  "$peer" "$peer"
printf '|---|---|---:|---:|---:|---:|---:|---:|---:|\n'
notes=()
failed=0
i=0
for c in "${cases[@]}"; do
  read -r label op pass dtype flags <<<"$c"
  [ "$flags" = - ] && flags=
  ours_list=() peer_list=() rows='' status=ok
  for _ in $(seq "$rounds"); do
    i=$((i + 1))
    out=$tmp/ours_$i
    # --peak-bw: the table shows no share of a roof, and measuring the CPU's takes seconds a run
    "$bench" --backend cpu --op "$op" --pass "$pass" --size "$size" --cols "$cols" \
      --dtype "$dtype" --peak-bw 1 --report-dir-path "$out" --quiet >"$tmp/ours_$i.log" 2>&1 || true
    if [ ! -s "$out/memops_sweep.csv" ]; then
      echo "error: bench_memops wrote no memops_sweep.csv for $op $pass; it said:" >&2
      tail -n 5 "$tmp/ours_$i.log" >&2
      exit 1
    fi
    if [ -z "$rows" ]; then
      rows=$(field "$out/memops_sweep.csv" rows) row_cols=$(field "$out/memops_sweep.csv" cols)
      io_bytes=$(field "$out/memops_sweep.csv" io_bytes)
    fi
    status=$(field "$out/memops_sweep.csv" status)
    [ "$status" = ok ] || break
    ours_list+=("$(field "$out/memops_sweep.csv" time_us)")
    # shellcheck disable=SC2086  # flags: zero or one word
    line=$("$python" "$script" "$op" "$rows" "$row_cols" --pass "$pass" $flags \
      2>"$tmp/peer_$i.log") || {
      echo "error: $script $op $rows $row_cols --pass $pass $flags failed:" >&2
      tail -n 5 "$tmp/peer_$i.log" >&2
      exit 1
    }
    peer_list+=("$(sed -E 's/.*mean_us=([0-9.]+).*/\1/' <<<"$line")")
    peer_bytes=$(sed -E 's/.*bytes=([0-9]+).*/\1/' <<<"$line")
  done
  if [ "$status" != ok ]; then
    printf '| %s | %s | %s | %s | %s | | | | |\n' "$label" "$pass" "$rows" "$row_cols" "$status"
    failed=1
    notes+=("$label $pass: bench_memops says $status: $(field "$out/memops_sweep.csv" note)")
    continue
  fi
  [ "$peer_bytes" = "$io_bytes" ] ||
    notes+=("$label $pass: $peer counts $peer_bytes bytes, bench_memops $io_bytes (GB/s use the latter)")
  /usr/bin/python3 - "$label" "$pass" "$rows" "$row_cols" "$io_bytes" "${ours_list[*]}" \
    "${peer_list[*]}" <<'EOF'
import statistics, sys
label, pas, rows, cols, io_bytes = sys.argv[1:6]
o = statistics.median(float(v) for v in sys.argv[6].split())
p = statistics.median(float(v) for v in sys.argv[7].split())
b = int(io_bytes)
print(f"| {label} | {pas} | {rows} | {cols} | {o:.1f} | {p:.1f} | {o / p:.3f} "
      f"| {b / o / 1e3:.2f} | {b / p / 1e3:.2f} |")
EOF
done
echo "(ratio = bench_memops time / $peer time, means per run, medians of $rounds alternating runs;"
echo " under 1: bench_memops measured less time. GB/s = bench_memops's io_bytes / time for both)"
if [ "$peer" = numpy ]; then
  echo "(cast_to_fp32: bench_memops bf16 -> fp32; numpy [fp16] its fp16 -> fp32 cast,"
  echo " [bf16] bf16 bits as uint16 widened and shifted into fp32: the same bytes)"
fi
for n in "${notes[@]}"; do echo "note: $n"; done
exit "$failed"
