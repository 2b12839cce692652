#!/usr/bin/env bash
# Issue 41's GPU checks in one command, on one H100 or H200, in under 8 minutes: every table the
# issue asks for (items 2, 3 and 4) and the trace of issue 43 item 8, each step with its own log
# and time budget, a failing step never stopping the others, one verdict table at the end, and
# everything in one folder (tables.md holds every table; --export copies the few files a device
# session gets back).
#
#   scripts/gpu_validate.sh [--out DIR] [--export DIR] [--quick] [--cpu]
#
#   --out DIR     the folder (default reports/validate-<date>-<time>): DIR/<step>.log (stderr),
#                 DIR/<step>.md (the step's tables), the reports under DIR/<step>/, tables.md,
#                 verdict.md; an earlier run's files there move into DIR/earlier-<date>-<time>/,
#                 a folder of anything else is refused
#   --export DIR  at the end, copy tables.md, verdict.md, the trimmed trace fixture and
#                 validate.tar.gz (DIR without its traces and captures) into DIR: four files, for
#                 a device session's $OUT (which returns at most 8); refused where DIR already
#                 holds one of the four, or is in the --out folder
#   --quick       Llama 3.1 8B's operators only, one vocabulary, one model and one AdamW in the
#                 step check, fewer steps: about half the time
#   --cpu         the same steps on the CPU providers and Debian's PyTorch, tiny shapes (the
#                 trace step replays tests/data/trace's GPU step): how CI checks this script
#
# Steps (GPU; --cpu in brackets):
#   environment       nvidia-smi, PyTorch and its CUDA, the bundle's revision
#   memops_8b         item 2: bench_memops on Llama 3.1 8B's operators (tp 1), bf16 and fp32, with
#                     pct_of_copy against the same run's device copy [tiny]
#   memops_70b        the same for Llama 3.1 70B at tp 8 [tiny at tp 2]; not with --quick
#   memops_vocab      cross-entropy and embedding at vocabularies 50,257, 128,256 and 256,000,
#                     8192 tokens (--quick: 128,256), and LayerNorm (GPT's norm, which no Llama
#                     has) at 8192 x 4096, forward and backward [8 tokens]
#   memops_check      every kernel path of item 2's tables (the same row lengths: 4096 to
#                     40,960, the three vocabularies and 70B's tp-8 shard of one, AdamW with an
#                     odd tail) at fewer rows, each result against the fp64 reference (--check);
#                     the table names the kernel and plan that ran (impl); right after the
#                     tables it vouches for, before the longer steps can spend the budget
#                     [a few rows]
#   memops_vs_torch   every row beside PyTorch's own kernel (bench/peers/memops_vs_torch.py)
#   step_vs_torch     item 3: bench/peers/step_vs_torch.py --device cuda: llama3.2-1b at 4096
#                     tokens, llama3.2-3b and llama3.1-8b at 2048, AdamW foreach and fused,
#                     bf16; the real step, the matched plan, the calibrated one and memory,
#                     against issue 41's targets [the CPU path, tiny at 32 tokens]
#   capture_cost      item 4: bench/peers/capture_cost.py: the step with and without the capture
#                     (its default sampling, and every GPU call timed),
#                     calls per step, in-job against isolated GEMMs [tiny]
#   kernel_times      the operators of item 2 still under 85% on the H200 (embedding backward,
#                     cross-entropy, RMSNorm backward, LayerNorm), each kernel timed alone by
#                     Nsight Compute (scripts/kernel_times.py): its share of the operator [not run]
#   trace_*           issue 43 item 8: the profiled step's Kineto trace (CPU and CUDA activities,
#                     record_shapes, SDPA, bf16; step_vs_torch's first case, or recorded here)
#                     converted by trace_convert, replayed by bench_gemm and bench_attention
#                     --trace-path, summarised with the in-job against isolated table, and
#                     trimmed to a fixture (scripts/trim_trace.py) [tests/data/trace's GPU
#                     step beside the execution trace of a tiny CPU step]
# Exit 0 when every step passed; 1 when one failed or missed its targets; 2 for bad arguments,
# no GPU (without --cpu) or missing binaries.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="" export_dir="" quick=0 cpu=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out|--export) [ $# -ge 2 ] || { echo "error: gpu_validate.sh: $1 needs a folder" >&2; exit 2; } ;;
  esac
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --export) export_dir="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    --cpu) cpu=1; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: gpu_validate.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
bin="${OPBENCH_BUILD_DIR:-$root/build}"
for b in gemm/bench_gemm attention/bench_attention memops/bench_memops step/bench_step \
         collectives/bench_ccl trace/trace_convert capture/libopbench_capture.so; do
  [ -e "$bin/$b" ] || { echo "error: gpu_validate.sh: $bin/$b is missing: build first (scripts/build.sh), or run under the bundle (.gpu/run)" >&2; exit 2; }
done
if [ "$cpu" = 0 ] && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "error: gpu_validate.sh: no NVIDIA GPU (nvidia-smi lists none); --cpu runs the same steps on the CPU" >&2
  exit 2
fi
out="${out:-reports/validate-$(date +%Y%m%d-%H%M%S)}"
# --export writes four names into a folder the user gave: refused, before anything runs, where one
# of them is already there (a file this run did not write is never overwritten), or where the
# folder is --out or in it (validate.tar.gz would pack itself, and a rerun move the export aside).
if [ -n "$export_dir" ]; then
  for f in tables.md verdict.md trace_fixture.pt.trace.json.gz validate.tar.gz; do
    [ -e "$export_dir/$f" ] && { echo "error: gpu_validate.sh: --export $export_dir already holds $f; name a new or empty folder" >&2; exit 2; }
  done
  case "$(realpath -m -- "$export_dir")/" in
    "$(realpath -m -- "$out")/"*)
      echo "error: gpu_validate.sh: --export $export_dir is in the --out folder, which validate.tar.gz packs; name a folder outside it" >&2
      exit 2 ;;
  esac
fi
# shellcheck source=scripts/own_out_dir.sh
. "$root/scripts/own_out_dir.sh"
own_out_dir gpu_validate.sh "$out" .gpu_validate
out="$(cd "$out" && pwd)"
if [ "$cpu" = 1 ]; then
  py=/usr/bin/python3 backend=cpu device=cpu
else
  py="${PYTHON:-python3}" backend=cuda device=cuda
fi
start=$(date +%s)
total_budget="${OPBENCH_VALIDATE_BUDGET:-470}"  # seconds for every step together
steps=()
mode=$([ "$cpu" = 1 ] && echo cpu || echo gpu)
# A Python step that `timeout` ends would lose the output still in its buffer: unbuffered.
export PYTHONUNBUFFERED=1

# The tables and the verdict so far, copied to --export after every step: a device call that
# ends before the last step (its own time limit) still returns what finished.
export_progress() {
  [ -n "$export_dir" ] || return 0
  mkdir -p "$export_dir" &&
    "$py" "$root/scripts/gpu_validate_tables.py" "$out" "$mode" "$quick" "${steps[@]}" > /dev/null 2>&1
  cp "$out/tables.md" "$out/verdict.md" "$export_dir/" 2>/dev/null
  return 0
}

# step NAME BUDGET_S -- COMMAND...: stdout to NAME.md, stderr to NAME.log, the exit code and the
# seconds to NAME.rc and NAME.time. Ended by `timeout` at its budget, or at what is left of the
# whole; not started with under a third of its budget left.
step() {
  local name="$1" budget="$2"; shift 3
  local left=$(( total_budget - ($(date +%s) - start) ))
  steps+=("$name")
  if [ "$left" -lt $(( budget / 3 )) ]; then
    echo "skipped: ${left} s left of the ${total_budget} s budget, this step needs up to ${budget} s" > "$out/$name.log"
    echo skipped > "$out/$name.rc"
    echo 0 > "$out/$name.time"
    echo "== $name: skipped (time budget spent)" >&2
    export_progress
    return
  fi
  [ "$budget" -le "$left" ] || budget=$left
  echo "== $name (up to ${budget} s): $*" >&2
  local t0
  t0=$(date +%s)
  timeout -k 10 "$budget" "$@" > "$out/$name.md" 2> "$out/$name.log" < /dev/null
  echo "$?" > "$out/$name.rc"
  echo $(( $(date +%s) - t0 )) > "$out/$name.time"
  export_progress
}
mem_quick=(--max-time 0.1 --quiet)
[ "$cpu" = 1 ] && mem_quick=(--max-time 0.02 --peak-bw 20 --quiet)

step environment 30 -- "$py" "$root/scripts/gpu_validate_tables.py" --environment "$bin"

# Item 2: every operator of the models' steps, against the same run's copy.
if [ "$cpu" = 1 ]; then
  step memops_8b 60 -- "$bin/memops/bench_memops" --backend cpu --model tiny --seq-len 64 \
    --dtype fp32 "${mem_quick[@]}" --report-dir-path "$out/memops_8b"
  [ "$quick" = 0 ] && step memops_70b 60 -- "$bin/memops/bench_memops" --backend cpu --model tiny \
    --seq-len 64 --tp 2 --dtype fp32 "${mem_quick[@]}" --report-dir-path "$out/memops_70b"
  tokens=8 cols=64 dtypes=fp32
else
  step memops_8b 60 -- "$bin/memops/bench_memops" --backend cuda --model llama3.1-8b \
    --dtype bf16,fp32 "${mem_quick[@]}" --report-dir-path "$out/memops_8b"
  [ "$quick" = 0 ] && step memops_70b 50 -- "$bin/memops/bench_memops" --backend cuda \
    --model llama3.1-70b --tp 8 --dtype bf16,fp32 "${mem_quick[@]}" --report-dir-path "$out/memops_70b"
  tokens=8192 cols=4096 dtypes=bf16,fp32
fi
vocabs="50257 128256 256000"
[ "$quick" = 1 ] && vocabs=128256
{
  echo "["
  sep=""
  for v in $vocabs; do
    printf '%s  {"name": "vocab-%s", "op": "cross_entropy", "rows": %s, "cols": %s},\n' "$sep" "$v" "$tokens" "$v"
    printf '  {"name": "vocab-%s", "op": "embedding", "rows": %s, "cols": %s, "vocab": %s}' "$v" "$tokens" "$cols" "$v"
    sep=$',\n'
  done
  printf ',\n  {"name": "gpt-layernorm", "op": "layernorm", "rows": %s, "cols": %s}' "$tokens" "$cols"
  printf '\n]\n'
} > "$out/vocab_shapes.json"
step memops_vocab 30 -- "$bin/memops/bench_memops" --backend "$backend" \
  --shapes-json-path "$out/vocab_shapes.json" --dtype "$dtypes" "${mem_quick[@]}" \
  --report-dir-path "$out/memops_vocab"
# Every kernel path of item 2's tables, its results checked: the same row lengths (they pick
# the kernel and its plan: registers, a cluster, a split, the unaligned head and tail) at fewer
# rows, each output compared with the fp64 reference (--check); 600 rows a norm keep the norms'
# backward persistent blocks at two rows or more (LayerNorm's at 4096; 12,288 takes its
# block-per-row kernel). The norms also where their forward takes a cluster on sm_90 (16,384;
# LayerNorm 32,768) and its two-pass kernel (40,960: longer than a block holds; 4098: rows not
# 16-byte aligned).
if [ "$cpu" = 1 ]; then
  nrows=8 crows=4 vocab_list="512" evocab=512
else
  # 400 cross-entropy rows: more than two per cluster of the streamed kernel's persistent wave
  # (about 50 clusters at 128,256 bf16 on 132 SMs, 132 at 50,257), so its next-row copies and
  # buffer swap are checked, not only its first row
  nrows=600 crows=400 vocab_list="50257 128256 256000" evocab=16032
fi
{
  echo "["
  for c in 4096 8192 16384; do echo "  {\"name\": \"check\", \"op\": \"rmsnorm\", \"rows\": $nrows, \"cols\": $c},"; done
  for c in 4096 8192 16384; do echo "  {\"name\": \"check\", \"op\": \"add_rmsnorm\", \"rows\": $nrows, \"cols\": $c},"; done
  for c in 4096 12288 32768; do echo "  {\"name\": \"check\", \"op\": \"layernorm\", \"rows\": $nrows, \"cols\": $c},"; done
  for c in 4098 40960; do echo "  {\"name\": \"check\", \"op\": \"rmsnorm\", \"rows\": 64, \"cols\": $c},"; done
  for c in 3584 14336; do echo "  {\"name\": \"check\", \"op\": \"swiglu\", \"rows\": 64, \"cols\": $c},"; done
  echo "  {\"name\": \"check\", \"op\": \"add\", \"rows\": 64, \"cols\": 4096},"
  echo "  {\"name\": \"check\", \"op\": \"fp8_quantize\", \"rows\": 64, \"cols\": 4096},"
  echo "  {\"name\": \"check\", \"op\": \"rope\", \"rows\": 64, \"cols\": 5120, \"heads\": 32, \"kv_heads\": 8, \"head_dim\": 128},"
  echo "  {\"name\": \"check\", \"op\": \"rope\", \"rows\": 64, \"cols\": 1152, \"heads\": 8, \"kv_heads\": 1, \"head_dim\": 128},"
  echo "  {\"name\": \"check\", \"op\": \"softmax\", \"rows\": 64, \"cols\": 8192},"
  for v in $vocab_list $evocab; do
    echo "  {\"name\": \"check\", \"op\": \"cross_entropy\", \"rows\": $crows, \"cols\": $v},"
    echo "  {\"name\": \"check\", \"op\": \"embedding\", \"rows\": 64, \"cols\": 256, \"vocab\": $v},"
  done
  echo "  {\"name\": \"check\", \"op\": \"embedding\", \"rows\": 64, \"cols\": 4096, \"vocab\": $evocab},"
  echo "  {\"name\": \"check\", \"op\": \"adamw\", \"rows\": 1, \"cols\": 1000003},"
  echo "  {\"name\": \"check\", \"op\": \"adamw_bf16\", \"rows\": 1, \"cols\": 1000003}"
  echo "]"
} > "$out/check_shapes.json"
step memops_check 90 -- "$bin/memops/bench_memops" --backend "$backend" \
  --shapes-json-path "$out/check_shapes.json" --dtype "$dtypes" --check --warmup 1 \
  --warmup-time 0 --min-samples 2 --min-time 0 --max-time 0.01 --quiet \
  --report-dir-path "$out/memops_check"
memops_reports=()
for d in memops_8b memops_70b memops_vocab; do [ -d "$out/$d" ] && memops_reports+=("$out/$d"); done
step memops_vs_torch 70 -- "$py" "$root/bench/peers/memops_vs_torch.py" "${memops_reports[@]}" \
  --device "$device" --repeats "$([ "$cpu" = 1 ] && echo 3 || echo 20)" --threads 1

# Item 3: the real step against the projection, the issue's targets checked.
if [ "$cpu" = 1 ]; then
  step step_vs_torch 120 -- "$py" "$root/bench/peers/step_vs_torch.py" --model-config-path \
    "$root/configs/models.json" --cases tiny:32 --warmup 1 --steps 2 --max-time 0.02 \
    --bench-step "$bin/step/bench_step" --bench-ccl "$bin/collectives/bench_ccl" \
    --capture-lib "$bin/capture/libopbench_capture.so" --work-dir "$out/step_vs_torch"
else
  # Llama 3.1 8B: a model beyond the two the projection was tuned on (about 50 s more; 2026-11-28
  # H200: calibrated -1.2%, fused AdamW)
  cases=llama3.2-1b:4096,llama3.2-3b:2048,llama3.1-8b:2048 impls=foreach,fused steps_n=5
  [ "$quick" = 1 ] && cases=llama3.2-1b:4096 impls=foreach steps_n=3
  # 240 s: each AdamW's run records and converts a trace of its own (its idle time by phase)
  step step_vs_torch 240 -- "$py" "$root/bench/peers/step_vs_torch.py" --device cuda \
    --cases "$cases" --optimizer-impl "$impls" --warmup 2 --steps "$steps_n" --max-time 0.05 \
    --check-targets --bench-step "$bin/step/bench_step" --bench-ccl "$bin/collectives/bench_ccl" \
    --capture-lib "$bin/capture/libopbench_capture.so" --work-dir "$out/step_vs_torch"
fi

# Item 4: the capture's cost on the same kind of step.
if [ "$cpu" = 1 ]; then
  step capture_cost 60 -- "$py" "$root/bench/peers/capture_cost.py" --device cpu --rounds 1 \
    --steps 2 --warmup 1 --max-time 0.02 --every-call --bench-gemm "$bin/gemm/bench_gemm" \
    --capture-lib "$bin/capture/libopbench_capture.so" --work-dir "$out/capture_cost"
else
  # Three rounds: the median then drops one slow process (the first H200 run, 2026-11-28, had
  # rounds at +0.3% and +4.5%). --every-call sets the default sampling beside every call timed.
  rounds=3 csteps=10
  [ "$quick" = 1 ] && rounds=1 csteps=5
  step capture_cost 150 -- "$py" "$root/bench/peers/capture_cost.py" --device cuda --every-call \
    --rounds "$rounds" --steps "$csteps" --max-time 0.05 --bench-gemm "$bin/gemm/bench_gemm" \
    --capture-lib "$bin/capture/libopbench_capture.so" --work-dir "$out/capture_cost"
fi

# Issue 43 item 8: a GPU step's trace through trace_convert and the replays.
traces="$out/trace/kineto"
mkdir -p "$traces"
if [ "$cpu" = 1 ]; then
  # Debian's PyTorch has no Kineto: the repository's GPU step (bf16, replayed by bench_attention
  # in fp32) as rank 1, beside rank 0's execution trace of a tiny fp32 CPU step (bench_gemm)
  cp "$root/tests/data/trace/host-a_4242.1700000000000.pt.trace.json" "$traces/rank1.pt.trace.json"
  step trace_record 60 -- "$py" "$root/bench/peers/torch_train_step.py" --model tiny --seq-len 32 \
    --warmup 0 --steps 1 --threads 1 --execution-trace "$traces"
else
  found=$(ls "$out"/step_vs_torch/trace-*/rank0.pt.trace.json.gz 2>/dev/null | head -1)
  if [ -n "$found" ]; then
    cp "$found" "$traces/"
  else
    step trace_record 60 -- "$py" "$root/bench/peers/torch_train_step.py" --device cuda \
      --model llama3.2-1b --seq-len 4096 --warmup 2 --steps 1 --kineto-trace "$traces"
  fi
fi
step trace_convert 20 -- "$bin/trace/trace_convert" --trace-path "$traces" --out "$out/trace/table"
step trace_gemm 30 -- "$bin/gemm/bench_gemm" --backend "$backend" --trace-path "$traces" \
  --max-time 0.1 --quiet --report-dir-path "$out/trace/gemm"
step trace_attention 30 -- "$bin/attention/bench_attention" --backend "$backend" \
  --trace-path "$traces" --max-time 0.1 --quiet --report-dir-path "$out/trace/attention"
step trace_summary 15 -- "$py" "$root/scripts/capture_summary.py" "$out/trace/table" \
  --replay "$out/trace/gemm" "$out/trace/attention"
trace_file=$(ls "$traces"/*.pt.trace.json* 2>/dev/null | head -1)
step trace_fixture 15 -- "$py" "$root/scripts/trim_trace.py" "${trace_file:-$traces/none}" \
  "$out/trace_fixture.pt.trace.json.gz" --steps 1 --max-events 3000

# Where the operators under the target spend their time, kernel by kernel (Nsight Compute, after
# the others: it only diagnoses; where ncu cannot read the GPU's counters it says so and passes).
# 90 s: five cases, each a process under ncu, which replays every kernel it times, and whose
# serialised launches hold each case's first stream-blocked sample to the blocker's 2 s timeout.
[ "$cpu" = 0 ] && step kernel_times 90 -- "$py" "$root/scripts/kernel_times.py" \
  --bench-memops "$bin/memops/bench_memops" --out "$out/kernel_times"

"$py" "$root/scripts/gpu_validate_tables.py" "$out" "$mode" "$quick" "${steps[@]}"
status=$?
if [ -n "$export_dir" ]; then
  mkdir -p "$export_dir"
  cp "$out/tables.md" "$out/verdict.md" "$export_dir/"
  [ -f "$out/trace_fixture.pt.trace.json.gz" ] && cp "$out/trace_fixture.pt.trace.json.gz" "$export_dir/"
  leave_out=(--exclude='*/trace/kineto' --exclude='*/trace-*' --exclude='*/step_vs_torch/capture-*'
             --exclude='*/capture_cost/capture-*' --exclude='*.pt.trace.json*' --exclude='*/earlier-*')
  tar -C "$(dirname "$out")" -czf "$export_dir/validate.tar.gz" "${leave_out[@]}" "$(basename "$out")"
  # a device session returns no file over 16 MiB: past 15, the logs stay behind
  if [ "$(stat -c %s "$export_dir/validate.tar.gz")" -gt $(( 15 << 20 )) ]; then
    tar -C "$(dirname "$out")" -czf "$export_dir/validate.tar.gz" "${leave_out[@]}" \
      --exclude='*.log' "$(basename "$out")"
    echo "gpu_validate.sh: validate.tar.gz without the logs (over 15 MiB with them)" >&2
  fi
  echo "gpu_validate.sh: exported tables.md, verdict.md, the trace fixture and validate.tar.gz to $export_dir" >&2
fi
exit "$status"
