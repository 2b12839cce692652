#!/usr/bin/env bash
# The trace reader's speed and memory on large traces: a Kineto GPU trace (the events of
# tests/data/trace's fixture step, repeated), the same gzip-compressed, and a torch 1.13
# execution trace of the tiny model's step (recorded here, repeated), each SIZE of JSON (default
# 1G), converted by build/trace/trace_convert under /usr/bin/time. Prints one row per trace:
# size, wall time, MB/s, peak resident memory.
#
#   bench/trace/convert_speed.sh [SIZE] [BUILD]     (SIZE: 1G, 200M, ...; BUILD: default build)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
size=${1:-1G}
build=${2:-$root/build}
convert="$build/trace/trace_convert"
[ -x "$convert" ] || { echo "error: convert_speed.sh: $convert not built (scripts/build.sh)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
py=/usr/bin/python3
make="$py $root/bench/trace/make_big_trace.py"
$make --from "$root/tests/data/trace/host-a_4242.1700000000000.pt.trace.json" --size "$size" --out "$work/kineto.json"
$make --from "$root/tests/data/trace/host-a_4242.1700000000000.pt.trace.json" --size "$size" --out "$work/kineto.json.gz" --gzip
$py "$root/bench/peers/torch_train_step.py" --model tiny --seq-len 32 --warmup 1 --steps 1 --threads 1 \
  --execution-trace "$work/et" >/dev/null
$make --from "$work/et/rank0.et.json" --size "$size" --out "$work/et.json"
printf '%-22s %10s %9s %9s %12s\n' trace "MiB (json)" "wall s" "MiB/s" "peak RSS MB"
for t in kineto.json kineto.json.gz et.json; do
  case $t in *.gz) mib=$($py -c "import gzip,sys; n=0
with gzip.open(sys.argv[1]) as f:
    while (b := f.read(1<<24)): n += len(b)
print(n >> 20)" "$work/$t") ;; *) mib=$(( $(stat -c %s "$work/$t") >> 20 )) ;; esac
  rm -rf "$work/out"
  /usr/bin/time -f "%e %M" -o "$work/time" "$convert" --trace-path "$work/$t" --out "$work/out" >/dev/null
  read -r wall rss_kb < "$work/time"
  printf '%-22s %10s %9.1f %9.0f %12.0f\n' "$t" "$mib" "$wall" "$(echo "$mib / $wall" | bc -l)" "$(echo "$rss_kb / 1024" | bc -l)"
done
