#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, with AddressSanitizer and UndefinedBehaviorSanitizer, in
# the sanitizer tree build-asan/ that scripts/sanitizer_build.sh makes) and runs each for
# FUZZ_SECONDS (default 30) from the seeds the repo keeps: the shipped configs, the test
# fixtures and tests/fuzz/corpus. A crash, leak or sanitizer report fails the script, and the
# input that caused it is left in build-asan/fuzz/findings/.
#   scripts/fuzz.sh [TARGET...]        (default: every target)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-30}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(models attention_shapes gemm_shapes memop_shapes cli nccl_log)

bash scripts/sanitizer_build.sh $(printf 'fuzz_%s ' "${targets[@]}")
out=build-asan/fuzz

seeds() {  # comma-separated seed files of a target
  case "$1" in
    models) ls configs/models.json tests/data/bad_models_*.json ;;
    attention_shapes) ls configs/attention_shapes.json tests/data/attention_small.json tests/data/bad_attention_*.json ;;
    gemm_shapes) ls configs/gemm_shapes.json tests/data/gemm_shapes_small.json tests/data/bad_gemm_shapes.json ;;
    memop_shapes) ls configs/memop_shapes.json tests/data/memop_shapes_small.json tests/data/bad/memop_*.json ;;
    cli) ls tests/fuzz/corpus/cli/* ;;
    nccl_log) ls tests/data/nccl_log_llama3_70b.txt ;;
  esac | paste -sd, -
}

mkdir -p $out/findings
fuzz_one() {  # fuzz_one TARGET: runs it, writes its verdict to $out/verdict_TARGET, exit 0 or 1
  local t=$1 corpus=$out/corpus/$1 log=$out/fuzz_$1.log runs
  mkdir -p "$corpus"
  if ASAN_OPTIONS=detect_leaks=1 build-asan/tests/fuzz/fuzz_$t "$corpus" -seed_inputs="$(seeds "$t")" \
       -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=20 \
       -artifact_prefix=$out/findings/"$t"- -print_final_stats=1 > "$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
    echo "fuzz_$t: ok, $runs executions in ${seconds} s" > "$out/verdict_$t"
  else
    { echo "fuzz_$t: FAILED (see $log):"
      grep -E "ERROR|SUMMARY|runtime error|terminate called|what\(\)" "$log" | head -8; } > "$out/verdict_$t"
    return 1
  fi
}

# One fuzzer per core at a time (a libFuzzer process uses one): on 2 cores the six targets take
# three rounds of FUZZ_SECONDS, not six, and each still gets its whole time on a core of its own.
jobs=$(nproc)
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  rm -f "$out/verdict_$t"
  fuzz_one "$t" &
done
wait
status=0 passed=0 failed=0
for t in "${targets[@]}"; do
  [ -f "$out/verdict_$t" ] || echo "fuzz_$t: FAILED (no verdict; see $out/fuzz_$t.log)" > "$out/verdict_$t"
  cat "$out/verdict_$t"
  if grep -q ': ok,' "$out/verdict_$t"; then passed=$((passed + 1)); else status=1 failed=$((failed + 1)); fi
done
echo "fuzz: $passed passed, $failed failed"
exit $status
