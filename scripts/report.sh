#!/usr/bin/env bash
# One report of the whole suite on the hardware present, in one dated folder:
# GEMM for chosen models, attention shapes, the memory-bound operators of those models, a
# collectives sweep with the ranks available, the FSDP plan and its replay, and last the training
# step those measured operators make (bench_step --from-reports); CSVs, PNGs
# (scripts/plot_report.py) and summary.md (every binary's summary).
set -euo pipefail

usage() {
  cat <<'EOF'
One report of the whole suite on the hardware present, in one dated folder: GEMM for chosen
models, attention shapes, the models' memory-bound operators, a collectives sweep with the ranks
available, the FSDP plan and its replay, and last the training step of the first model projected
from those reports (bench_step --from-reports); CSVs, PNGs (scripts/plot_report.py) and
summary.md (every binary's summary, the step's last).

  scripts/report.sh [OUT_DIR]        (default reports/suite-<date>-<time>, in the current directory)

Environment: MODELS (GEMM; default llama3.1-8b on a GPU — plus llama3.1-70b at tp 8 — and
tiny,llama3.1-8b at seq 256 on the CPU), RANKS (collectives and FSDP; default the GPUs present,
or 2 on the CPU with the mpi backend), FSDP_MODEL (default llama3.1-8b), QUICK=1 (tiny sizes
everywhere, for a smoke test), BUILD (the build directory; default build/ in the source tree
holding this script). Relative paths are taken from the current directory.
EOF
}

case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  -*) echo "error: report.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "error: report.sh: one OUT_DIR at most, got also '$2' (see --help)" >&2; exit 2; }
# No cd: OUT_DIR and BUILD mean what they mean in the caller's shell; the script's own folder,
# made absolute, finds plot_report.py and the source tree's build/.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:-reports/suite-$(date +%Y%m%d-%H%M%S)}
build=${BUILD:-$(dirname "$here")/build}
# Every binary the suite runs, before it starts (scripts/run_main.sh builds bench_gemm alone).
for b in gemm/bench_gemm attention/bench_attention memops/bench_memops collectives/bench_ccl \
         fsdp/bench_fsdp step/bench_step; do
  [ -x "$build/$b" ] || {
    echo "error: report.sh: $build/$b not found: run scripts/build.sh, or set BUILD to the build directory" >&2
    exit 2
  }
done
build=$(cd "$build" && pwd)  # absolute: mpirun and the ranks get the binaries' full paths
# OUT_DIR is new, empty, or a folder report.sh made before (it holds .opbench-suite): report.sh
# never moves, overwrites or deletes a file it did not write. An earlier suite's own files (its
# plots, console logs and summary.md) move into earlier-<date>-<time>/; each binary sets aside its
# own earlier reports in its subfolder.
if [ -d "$out" ] && [ -n "$(ls -A "$out")" ] && [ ! -e "$out/.opbench-suite" ]; then
  echo "error: report.sh: $out holds files report.sh did not write; name a new folder" >&2
  exit 2
fi
mkdir -p "$out"
if [ -e "$out/.opbench-suite" ]; then
  earlier="$out/earlier-$(date +%Y%m%d-%H%M%S)"
  for f in plots summary.md gemm.txt attention.txt memops.txt ccl.txt fsdp.txt fsdp_plan.txt step.txt; do
    if [ -e "$out/$f" ]; then mkdir -p "$earlier" && mv "$out/$f" "$earlier/"; fi
  done
  [ -d "$earlier" ] && echo "report.sh: the earlier suite's plots and summary moved to $earlier" >&2
fi
touch "$out/.opbench-suite"

gpus=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then gpus=$(nvidia-smi -L | wc -l); fi
ranks=${RANKS:-$([ "$gpus" -gt 0 ] && echo "$gpus" || echo 2)}
ccl_backend=$([ "$gpus" -gt 0 ] && echo nccl || echo mpi)
launch=(mpirun -np "$ranks")
[ "$(id -u)" -eq 0 ] && launch+=(--allow-run-as-root)
[ "$gpus" -eq 0 ] && launch+=(--oversubscribe)
common=(--quiet --format csv,jsonl,prom)
sampled=()   # every binary samples adaptively; QUICK shortens the sampling budget ...
counted=()   # ... and bench_ccl/bench_fsdp's samples of -n calls after -w warm-ups
# The step (last) is the first model's, at the GEMMs' parallelism and sequence length, so that
# every operator it needs is in the reports before it (the attention and memops runs include it).
if [ "${QUICK:-0}" = 1 ]; then
  models=tiny; shape=(--seq-len 128)
  gemm_args=(--model tiny --pass fprop,dgrad,wgrad); attention_args=(--model tiny --seq-len 128); ccl_sizes=(-b 1K -e 64K -f 8)
  fsdp_model=tiny; sampled=(--min-time 0.01 --max-time 0.2); counted=(-n 5 -w 1 --max-time 0.2)
elif [ "$gpus" -gt 0 ]; then
  models=${MODELS:-llama3.1-8b,llama3.1-70b}; shape=(--tp 8)
  gemm_args=(--model "$models" --tp 8 --check)
  attention_args=(--model "$models" --tp 8 --seq-len 4096,8192 --pass fwd,bwd --check)
  ccl_sizes=(-b 8 -e 8G -f 2)
  fsdp_model=${FSDP_MODEL:-llama3.1-8b}
else
  models=${MODELS:-tiny,llama3.1-8b}; shape=(--seq-len 256)
  gemm_args=(--model "$models" --seq-len 256 --check)
  attention_args=(--model "$models" --seq-len 256,1024); ccl_sizes=(-b 4K -e 16M -f 4); fsdp_model=${FSDP_MODEL:-llama3.1-8b}
fi
memops_args=(--model "$models" "${shape[@]}")
step_model=${models%%,*}

step() { echo "report.sh: $*" >&2; }
step "GEMM -> $out/gemm"
"$build/gemm/bench_gemm" "${gemm_args[@]}" "${common[@]}" "${sampled[@]}" --report-dir-path "$out/gemm" --summary-path "$out/gemm/summary.md" > "$out/gemm.txt"
step "attention -> $out/attention"
"$build/attention/bench_attention" "${attention_args[@]}" "${common[@]}" "${sampled[@]}" --report-dir-path "$out/attention" --summary-path "$out/attention/summary.md" > "$out/attention.txt"
step "memory-bound operators -> $out/memops"
"$build/memops/bench_memops" "${memops_args[@]}" "${common[@]}" "${sampled[@]}" --report-dir-path "$out/memops" --summary-path "$out/memops/summary.md" > "$out/memops.txt"
step "collectives on $ranks ranks ($ccl_backend) -> $out/ccl"
"${launch[@]}" "$build/collectives/bench_ccl" --backend "$ccl_backend" "${ccl_sizes[@]}" "${common[@]}" "${counted[@]}" --report-dir-path "$out/ccl" --report-csv-path "$out/ccl/ccl_all.csv" \
  --summary-path "$out/ccl/summary.md" > "$out/ccl.txt"
step "FSDP plan of $fsdp_model at $ranks ranks and its replay -> $out/fsdp"
# The replay first: a report folder used again has its earlier reports moved aside, the plan too.
"${launch[@]}" "$build/fsdp/bench_fsdp" --model "$fsdp_model" --backend "$ccl_backend" "${common[@]}" "${counted[@]}" --report-dir-path "$out/fsdp" --summary-path "$out/fsdp/summary.md" > "$out/fsdp.txt"
"$build/fsdp/bench_fsdp" --model "$fsdp_model" --world-size "$ranks" --dry-run --plan-csv-path "$out/fsdp/plan.csv" > "$out/fsdp_plan.txt"

step "training step of $step_model from the reports above -> $out/step"
# Every time is read from the reports (each row says which file and line); an operator none of
# them holds is listed as missing in the step's summary, not measured here.
# The CPU providers measure in fp32, so the step on the CPU is an fp32 step. A step that cannot be
# composed (an operator missing) still leaves its summary, and the suite's summary is written;
# report.sh then ends with the step's exit status.
step_dtype=()
[ "$gpus" -eq 0 ] && step_dtype=(--dtype fp32)
step_status=0
"$build/step/bench_step" --model "$step_model" "${shape[@]}" "${step_dtype[@]}" "${common[@]}" \
  --from-reports "$out/gemm,$out/attention,$out/memops,$out/ccl,$out/fsdp" \
  --report-dir-path "$out/step" --summary-path "$out/step/summary.md" > "$out/step.txt" || step_status=$?

step "plots -> $out/plots"
/usr/bin/python3 "$here/plot_report.py" "$out"/gemm/gemm_*.csv "$out"/attention/attention.csv "$out"/memops/memops_*.csv \
  "$out"/ccl/ccl_all.csv "$out"/fsdp/fsdp.csv "$out"/fsdp/plan.csv "$out"/step/step.csv "$out"/step/step_operators.csv \
  --out "$out/plots" > /dev/null
{
  echo "# opbench report, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  for part in gemm attention memops ccl fsdp step; do sed 's/^# /## /; s/^## \([A-Z]\)/### \1/' "$out/$part/summary.md"; echo; done
  echo "## Plots"
  echo
  for png in "$out"/plots/*.png; do echo "![$(basename "$png" .png)](plots/$(basename "$png"))"; done
} > "$out/summary.md"
step "done: $out/summary.md"
if [ "$step_status" -ne 0 ]; then
  echo "error: report.sh: bench_step ended with status $step_status: $out/step.txt says why" >&2
  exit "$step_status"
fi
