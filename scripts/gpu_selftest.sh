#!/usr/bin/env bash
# The first thing to run on a GPU node: the smallest useful case of every GPU path, each with
# its check, and one verdict table (path, status, figure, reason). Exit 0 when every path passed,
# 1 when one failed, 2 when there is nothing to test (no GPU) or the arguments are wrong.
#
#   scripts/gpu_selftest.sh [--out DIR] [--ranks N] [--cpu] [--list-gpus]
#
#   --out DIR    where the reports go (default reports/selftest-<date>-<time>); the verdict is
#                DIR/verdict.md, and every step's output is DIR/<step>.log
#   --ranks N    ranks for the NCCL and FSDP steps (default: every GPU the ranks can see)
#   --cpu        the same steps on the CPU providers (OpenBLAS, CPU attention, MPI): how CI checks
#                this script on machines without a GPU
#   --list-gpus  print how many GPUs the ranks will see (nvidia-smi's, as CUDA_VISIBLE_DEVICES
#                narrows them) and exit
#
# Paths: cuBLASLt in every dtype and pass (tiny model, --check); a launch-bound GEMM (the CUDA
# graph path); --cold (L2 flushed); cuDNN SDPA forward and backward — causal, non-causal, GQA,
# Dqk 192 / Dv 128 — against the CUDA reference; NCCL every op in and out of place, -c 1, on the
# local GPUs; the FSDP replay; every memory-bound operator and copy (our kernels, cuDNN norms,
# host/device and peer copies, --check), with the norms' and the cross-entropy's achieved GB/s at
# Llama 3's vocabulary side by side; a measured training step (bench_step --measure --check);
# bench_gemm under the capture library (counts and shape). When a step fails, send back DIR
# (the logs, CSVs and environment.json in it): README.md, "First run on a GPU node".
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="" ranks="" cpu=0 list_gpus=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out|--ranks) [ $# -ge 2 ] || { echo "error: gpu_selftest.sh: $1 needs a value" >&2; exit 2; } ;;
  esac
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --ranks) ranks="$2"; shift 2 ;;
    --cpu) cpu=1; shift ;;
    --list-gpus) list_gpus=1; shift ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: gpu_selftest.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

# The GPUs the ranks will see: nvidia-smi lists every GPU of the node, CUDA only those
# CUDA_VISIBLE_DEVICES names — indices or UUIDs (GPU-..., MIG-...), up to the first entry that
# names none (CUDA hides the rest: CUDA C++ Programming Guide, "CUDA Environment Variables").
visible_gpus() {
  local listing count n=0 entry
  listing="$(nvidia-smi -L 2>/dev/null)"
  count=$(printf '%s\n' "$listing" | grep -c '^GPU ' || true)
  if [ -z "${CUDA_VISIBLE_DEVICES+set}" ]; then echo "$count"; return; fi
  local IFS=,
  for entry in $CUDA_VISIBLE_DEVICES; do
    entry="${entry// /}"
    if [[ "$entry" =~ ^[0-9]+$ ]]; then
      [ "$entry" -lt "$count" ] || break
    elif [[ "$entry" == GPU-* || "$entry" == MIG-* ]]; then
      printf '%s\n' "$listing" | grep -q "UUID: $entry" || break
    else
      break
    fi
    n=$((n + 1))
  done
  echo "$n"
}
gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then gpus=$(visible_gpus); fi
if [ "$list_gpus" = 1 ]; then
  echo "$gpus GPUs visible to the ranks (CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-<unset>})"
  exit 0
fi
if [ "$cpu" = 0 ] && [ "$gpus" -eq 0 ]; then
  echo "error: gpu_selftest.sh: no NVIDIA GPU found (nvidia-smi lists none, or CUDA_VISIBLE_DEVICES hides them all); --cpu runs the same steps on the CPU" >&2
  exit 2
fi
out="${out:-reports/selftest-$(date +%Y%m%d-%H%M%S)}"
# shellcheck source=scripts/own_out_dir.sh
. "$root/scripts/own_out_dir.sh"
own_out_dir gpu_selftest.sh "$out" .gpu_selftest
out="$(cd "$out" && pwd)"
bin="${OPBENCH_BUILD_DIR:-$root/build}"
for b in gemm/bench_gemm attention/bench_attention collectives/bench_ccl fsdp/bench_fsdp \
         memops/bench_memops step/bench_step; do
  if [ ! -x "$bin/$b" ]; then
    echo "error: gpu_selftest.sh: $bin/$b is missing: build first (scripts/build.sh)" >&2
    exit 2
  fi
done
if [ "$cpu" = 1 ]; then
  ranks="${ranks:-2}"
  backend=(--backend cpu) ccl_backend=(--backend mpi)
  gemm_dtypes=fp32,fp64 attention_dtype=fp32
  ce_rows=16 norm_rows=256  # enough to run the path on a CPU in CI
else
  ranks="${ranks:-$gpus}"
  backend=(--backend cuda) ccl_backend=(--backend nccl)
  gemm_dtypes=bf16,fp16,fp32,tf32,fp8,fp64 attention_dtype=bf16,fp16
  # 1024 x 128256 bf16 = 263 MB, rows in flight beyond an H100's 50 MB L2; norms 16384 x 4096
  ce_rows=1024 norm_rows=16384
fi
mpirun=()
if [ "$ranks" -gt 1 ]; then
  command -v mpirun >/dev/null || { echo "error: gpu_selftest.sh: mpirun is missing (--ranks 1 runs without it)" >&2; exit 2; }
  mpirun=(mpirun -np "$ranks")
  [ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
  [ "$ranks" -gt "$(nproc)" ] && mpirun+=(--oversubscribe --mca mpi_yield_when_idle 1)
fi

# The attention shapes of the check: causal MHA, non-causal, GQA (Hq 8, Hkv 2) with Sq < Skv,
# and DeepSeek's Dqk 192 / Dv 128.
cat > "$out/attention_shapes.json" <<EOF
[
  {"model": "causal", "batch_size": 1, "seqlen_q": 256, "seqlen_kv": 256, "num_head_q": 4, "num_head_kv": 4, "head_dim_qk": 128, "head_dim_v": 128, "causal": true, "dtype": "bf16"},
  {"model": "non-causal", "batch_size": 2, "seqlen_q": 256, "seqlen_kv": 256, "num_head_q": 4, "num_head_kv": 4, "head_dim_qk": 64, "head_dim_v": 64, "causal": false, "dtype": "bf16"},
  {"model": "gqa", "batch_size": 1, "seqlen_q": 128, "seqlen_kv": 256, "num_head_q": 8, "num_head_kv": 2, "head_dim_qk": 128, "head_dim_v": 128, "causal": true, "dtype": "bf16"},
  {"model": "mla-192-128", "batch_size": 1, "seqlen_q": 256, "seqlen_kv": 256, "num_head_q": 4, "num_head_kv": 4, "head_dim_qk": 192, "head_dim_v": 128, "causal": true, "dtype": "bf16"}
]
EOF

# The memory-bound rows read side by side (formulas.md, "Cross-entropy"): norms at 4096 columns
# against cross-entropy at Llama 3's 128256, which reads each row twice and counts the second
# read as a cache hit — whether it is shows in its GB/s against the norms'.
cat > "$out/memop_l2_shapes.json" <<EOF
[
  {"name": "norm", "op": "rmsnorm", "rows": $norm_rows, "cols": 4096},
  {"name": "norm", "op": "layernorm", "rows": $norm_rows, "cols": 4096},
  {"name": "llama3-vocab", "op": "cross_entropy", "rows": $ce_rows, "cols": 128256}
]
EOF

quick=(--max-time 0.2 --quiet)
steps=()
# step NAME FIGURE_COLUMN REPORT_GLOB -- COMMAND...: runs it, keeps its log, notes its exit code.
# FIGURE_COLUMN may end in >=N: the best value must reach N, or the path failed.
step() {
  local name="$1" figure="$2" glob="$3"; shift 4
  echo "== $name: $*" >&2
  "$@" > "$out/$name.log" 2>&1
  echo "$?" > "$out/$name.rc"
  steps+=("$name|$figure|$glob||$name")
}
# view NAME FIGURE_COLUMN REPORT_GLOB COLUMN=V1/V2 OF_STEP: a verdict row over some of an earlier
# step's rows (those whose COLUMN is one of the values), with that step's exit code.
view() {
  steps+=("$1|$2|$3|$4|$5")
}
step gemm_dtypes_passes tflops "gemm_dtypes/*.csv" -- \
  "$bin/gemm/bench_gemm" "${backend[@]}" --model tiny --dtype "$gemm_dtypes" --check "${quick[@]}" \
  --report-dir-path "$out/gemm_dtypes"
graph_figure=launches_per_sample
[ "$cpu" = 0 ] && graph_figure="launches_per_sample>=2"  # the CUDA graph path was taken
step gemm_launch_bound_graph "$graph_figure" "gemm_graph/*.csv" -- \
  "$bin/gemm/bench_gemm" "${backend[@]}" --m 64 --n 64 --k 64 --dtype "${gemm_dtypes%%,*}" --check \
  "${quick[@]}" --report-dir-path "$out/gemm_graph"
step gemm_cold tflops "gemm_cold/*.csv" -- \
  "$bin/gemm/bench_gemm" "${backend[@]}" --m 1024 --n 1024 --k 1024 --dtype "${gemm_dtypes%%,*}" \
  --cold --check "${quick[@]}" --report-dir-path "$out/gemm_cold"
step attention_fwd_bwd tflops "attention/*.csv" -- \
  "$bin/attention/bench_attention" "${backend[@]}" --shapes-json-path "$out/attention_shapes.json" \
  --dtype "$attention_dtype" --pass fwd,bwd --check "${quick[@]}" --report-dir-path "$out/attention"
step nccl_every_op busbw_gbps "ccl/*.csv" -- \
  "${mpirun[@]}" "$bin/collectives/bench_ccl" "${ccl_backend[@]}" --op all -b 8 -e 1M -f 32 -c 1 \
  --quiet --report-dir-path "$out/ccl"
step fsdp_replay busbw_gbps "fsdp/fsdp_*.csv" -- \
  "${mpirun[@]}" "$bin/fsdp/bench_fsdp" "${ccl_backend[@]}" --model tiny --quiet \
  --report-dir-path "$out/fsdp"
# Every memory-bound operator and copy, smallest sizes: our kernels and (GPU) cuDNN's norms, the
# host/device copies, and the peer copies where there are two GPUs (skipped rows otherwise).
step memops_every_op mem_bw_gbps "memops/*.csv" -- \
  "$bin/memops/bench_memops" "${backend[@]}" --size 64K --cols 256 --vocab 512 --check \
  "${quick[@]}" --report-dir-path "$out/memops"
step memops_l2 mem_bw_gbps "memops_l2/*.csv" -- \
  "$bin/memops/bench_memops" "${backend[@]}" --shapes-json-path "$out/memop_l2_shapes.json" \
  --check "${quick[@]}" --report-dir-path "$out/memops_l2"
view memops_norms_4096 mem_bw_gbps "memops_l2/*.csv" "op=rmsnorm/layernorm" memops_l2
view memops_cross_entropy_128256 mem_bw_gbps "memops_l2/*.csv" "op=cross_entropy" memops_l2
# A training step measured through every family's provider, every result checked.
step step_measured tokens_per_s "step/step.csv" -- \
  "$bin/step/bench_step" --model tiny --seq-len 64 "${backend[@]}" --measure --check \
  --max-samples 3 "${quick[@]}" --report-dir-path "$out/step"
# The capture library around a bench_gemm run: the captured shape is the GEMM bench_gemm ran,
# in its own convention, read back from cuBLASLt's descriptors on the GPU and timed with CUDA
# events from the capture's pool (on the CPU: exactly as many calls as bench_gemm made).
if [ -f "$bin/capture/libopbench_capture.so" ]; then
  step capture_bench_gemm captured_calls "capture/check.csv" -- \
    /usr/bin/python3 "$root/tests/integration/check_capture.py" bench-gemm --out "$out/capture" \
    --bench-gemm "$bin/gemm/bench_gemm" --lib "$bin/capture/libopbench_capture.so" \
    --backend "${backend[1]}" --dtype "${gemm_dtypes%%,*}"
fi

/usr/bin/python3 - "$out" "${steps[@]}" <<'PY'
import csv, glob, os, sys
out, steps = sys.argv[1], sys.argv[2:]
rows, failed = [], 0
for s in steps:
    name, figure, pattern, keep, of_step = s.split("|")
    figure, _, minimum = figure.partition(">=")
    rc = int(open(os.path.join(out, of_step + ".rc")).read())
    column, _, values = keep.partition("=")
    values = set(values.split("/")) if keep else None
    counts = {"ok": 0, "skipped": 0, "failed": 0}
    best, reasons = None, []
    for path in sorted(glob.glob(os.path.join(out, pattern))):
        if path.endswith("_plan.csv"):
            continue
        for r in csv.DictReader(open(path, newline="")):
            if values is not None and r.get(column) not in values:
                continue
            st = r.get("status", "")
            counts[st] = counts.get(st, 0) + 1
            if st != "ok" and r.get("note"):
                reasons.append(f"{st}: {r['note']}")
            try:
                v = float(r.get(figure) or "nan")
                if v == v and (best is None or v > best):
                    best = v
            except ValueError:
                pass
    ran = sum(counts.values())
    if minimum and (best is None or best < float(minimum)):
        reasons.insert(0, f"{figure} is {best}, expected at least {minimum}")
        counts["failed"] += 1
    if rc != 0 or counts["failed"] or ran == 0:
        status = "FAILED"
    elif counts["ok"] == 0:
        status = "SKIPPED"
    else:
        status = "passed"
    failed += status != "passed"
    if not reasons and rc != 0:
        log = open(os.path.join(out, of_step + ".log"), errors="replace").read().strip().splitlines()
        errors = [l for l in log if l.startswith("error:")] or log[-1:]
        reasons = [f"exit {rc}: " + (errors[0] if errors else "no output")]
    fig = f"best {figure} {best:.4g}" if best is not None else ""
    rows.append((name, status, f"{counts['ok']} ok, {counts['skipped']} skipped, {counts['failed']} failed", fig,
                 reasons[0][:160] if reasons else ""))
head = ("path", "status", "rows", "figure", "reason")
table = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
table += ["| " + " | ".join(r) + " |" for r in rows]
text = "\n".join(table)
open(os.path.join(out, "verdict.md"), "w").write("# gpu_selftest verdict\n\n" + text + "\n")
print(text)
print(f"\n{len(rows) - failed} of {len(rows)} paths passed; reports, logs and verdict.md in {out}")
sys.exit(1 if failed else 0)
PY
