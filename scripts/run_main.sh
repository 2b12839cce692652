#!/usr/bin/env bash
# The main job: sets everything up, builds bench_gemm (only it: the tests and the other binaries
# follow with scripts/test.sh or scripts/build.sh, in the same tree), and runs it.
#   scripts/run_main.sh                 # defaults for the hardware present (below)
#   scripts/run_main.sh ARGS...         # bench_gemm with your arguments
# Defaults: on a GPU, Llama-3.1 8B and 70B (tp 8) in bf16 with --check; without one, the tiny
# model and Llama-3.1 8B at sequence length 256 in fp32 on OpenBLAS (a few minutes on 2 cores).
set -euo pipefail
# Run where the caller is, as bench_gemm is: a relative path among ARGS (--gemm-shapes-path,
# --report-dir-path, ...) is the caller's, and the reports land in the caller's reports/.
root="$(cd "$(dirname "$0")/.." && pwd)"
bench="$root/build/gemm/bench_gemm"
# --help answers at once: it installed packages and built bench_gemm (minutes) first
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,7s/^# \{0,1\}//p' "$0"
  if [ -x "$bench" ]; then
    echo
    exec "$bench" --help
  fi
  echo "bench_gemm's own flags: $bench --help, once built (scripts/build.sh --target bench_gemm)"
  exit 0
fi
bash "$root/scripts/setup.sh"
bash "$root/scripts/build.sh" --target bench_gemm
if [ $# -gt 0 ]; then
  exec "$bench" "$@"
fi
models="$root/configs/models.json"
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  "$bench" --model-config-path "$models" --model llama3.1-8b --check
  exec "$bench" --model-config-path "$models" --model llama3.1-70b --tp 8 --check
fi
exec "$bench" --model-config-path "$models" --model tiny,llama3.1-8b --seq-len 256 --check
