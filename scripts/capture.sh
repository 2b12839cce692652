#!/usr/bin/env bash
# Runs a command with libopbench_capture.so preloaded, then prints a summary of what it captured.
# Relative paths (--out, OPBENCH_CAPTURE_LIB) are taken from the directory it is run in.
set -uo pipefail

usage() {
  cat <<'EOF2'
Runs a command with libopbench_capture.so preloaded: every BLAS GEMM, MPI call (and, on a GPU,
cuBLAS, cuBLASLt and NCCL call) it makes is counted and timed per shape, and a summary is printed
when it ends.

  scripts/capture.sh -- python3 train.py --steps 10
  scripts/capture.sh --out cap --interval 5 -- mpirun -np 8 ./train       # ranks on this node
  scripts/capture.sh --top 20 -- build/gemm/bench_gemm --model tiny

Flags:
  --out DIR        folder of the capture files [default: capture-<date>-<time>]; created
  --interval S     also write the tables every S seconds (0: at exit only) [default 10]
  --port P         serve /metrics on port P + the local rank (needs a build with cpp-httplib)
  --top N          shapes in the summary [default 10]
  -- COMMAND ...   the command, as it is

Every process that makes an intercepted call writes DIR/capture-<host>-rank<r>.csv, .jsonl and
.prom (the pid instead of the rank when no launcher variable names one). The command's children
inherit the library on this node; for other nodes pass it through the launcher (README.md).
Exit status: the command's, or 2 when the arguments are bad.

The library is, in this order: $OPBENCH_CAPTURE_LIB; the installed one (<prefix>/lib/
libopbench_capture.so beside <prefix>/share/opbench/scripts/capture.sh); build/capture/ in the
source tree holding this script.
EOF2
}

die() { echo "error: capture.sh: $*" >&2; exit 2; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out="" interval=10 port="" top=10
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || die "--out needs a folder"; out=$2; shift 2 ;;
    --interval) [ $# -ge 2 ] || die "--interval needs seconds"; interval=$2; shift 2 ;;
    --port) [ $# -ge 2 ] || die "--port needs a number"; port=$2; shift 2 ;;
    --top) [ $# -ge 2 ] || die "--top needs a number"; top=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) die "unknown argument '$1' (the command goes after --; see --help)" ;;
  esac
done
[ $# -gt 0 ] || die "no command (scripts/capture.sh [flags] -- COMMAND [ARGS...])"
[[ "$interval" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--interval '$interval': expected seconds >= 0"
[[ "$top" =~ ^[1-9][0-9]*$ ]] || die "--top '$top': expected a whole number >= 1"
if [ -n "$port" ]; then
  [[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65535 ] ||
    die "--port '$port': expected a port number 1..65535"
fi

lib=${OPBENCH_CAPTURE_LIB:-}
if [ -z "$lib" ]; then
  for candidate in "$here/../../../lib/libopbench_capture.so" "$here/../build/capture/libopbench_capture.so"; do
    if [ -f "$candidate" ]; then lib=$candidate; break; fi
  done
fi
[ -n "$lib" ] || die "libopbench_capture.so not found (build it: cmake --build build --target opbench_capture, or set OPBENCH_CAPTURE_LIB)"
[ -f "$lib" ] || die "OPBENCH_CAPTURE_LIB '$lib' is not a file"
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")

[ -n "$out" ] || out="capture-$(date +%Y%m%d-%H%M%S)"
mkdir -p -- "$out" 2>/dev/null || die "--out '$out': cannot create the folder"
[ -d "$out" ] && [ -w "$out" ] || die "--out '$out': not a writable folder"
out=$(cd "$out" && pwd)
# The folder holds only captures (a file of anything else is refused, untouched: a run never
# moves, overwrites or deletes a file opbench did not write); an earlier capture's tables move
# into earlier-<date>-<time>/ so this job's files are its own.
shopt -s nullglob
for f in "$out"/* "$out"/.[!.]*; do
  case $(basename "$f") in
    capture-*.csv | capture-*.jsonl | capture-*.prom | capture-*.tmp | earlier-*) ;;
    *) die "--out '$out': holds $(basename "$f"), which is not a capture file; name a new or capture-only folder" ;;
  esac
done
earlier=("$out"/capture-*)
if [ ${#earlier[@]} -gt 0 ]; then
  aside="$out/earlier-$(date +%Y%m%d-%H%M%S)"
  mkdir -p "$aside" && mv -- "${earlier[@]}" "$aside/" || die "--out '$out': cannot move the earlier capture aside"
  echo "capture.sh: the earlier capture's tables moved to $aside" >&2
fi
shopt -u nullglob

export OPBENCH_CAPTURE_DIR="$out" OPBENCH_CAPTURE_INTERVAL="$interval"
if [ -n "$port" ]; then export OPBENCH_CAPTURE_PORT="$port"; fi
LD_PRELOAD="$lib${LD_PRELOAD:+:$LD_PRELOAD}" "$@"
status=$?

# A command that failed before any intercepted call leaves no tables: its own error says why, and
# the summary's "no capture files" would point at the capture instead.
shopt -s nullglob
tables=("$out"/capture-*)
shopt -u nullglob
if [ "$status" -ne 0 ] && [ ${#tables[@]} -eq 0 ]; then
  echo "capture.sh: the command exited with status $status before any intercepted call; no tables in $out" >&2
  exit $status
fi
python=/usr/bin/python3
[ -x "$python" ] || python=python3
"$python" "$here/capture_summary.py" --top "$top" "$out" >&2 || true
exit $status
