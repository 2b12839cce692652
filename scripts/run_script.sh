#!/usr/bin/env bash
# Collective sweeps through mpirun: every op x world size, one CSV per op and world size.
# Relative paths (--out, --hostfile, BENCH_CCL) are taken from the directory it is run in.
set -euo pipefail

usage() {
  cat <<'EOF'
Collective sweeps through mpirun: every op x world size, one CSV per op and world size.

  scripts/run_script.sh                                   # defaults below, on this host
  scripts/run_script.sh --np "8 16" --hostfile hosts --ranks-per-node 8 --iface eth0 --backend nccl
  scripts/run_script.sh --hostfile hosts --launch-agent "ssh -p 2222" --mpirun-arg --bind-to --mpirun-arg none
  NP_LIST="2 4" OPS="all_reduce all_gather" MAX_BYTES=1G scripts/run_script.sh

Flags (or the environment variable in brackets):
  --np LIST            world sizes to run [NP_LIST, default "2"]
  --ops LIST           collectives [OPS, default: all seven]
  --dtypes LIST        comma-separated dtypes [DTYPES, default fp32]
  -b / -e / -f         smallest size, largest size, factor [MIN_BYTES 8, MAX_BYTES 128M, STEP_FACTOR 2]
  --hosts H1,H2        hosts to run on [HOSTS] (mpirun --host, with --ranks-per-node slots each)
  --hostfile FILE      an mpirun hostfile [HOSTFILE]
  --ranks-per-node N   ranks per node [RANKS_PER_NODE] (mpirun --map-by ppr:N:node)
  --iface NAME         network interface [NET_IFACE]: MPI's data and out-of-band traffic
                       (--mca btl_tcp_if_include, --mca oob_tcp_if_include) and, with the nccl or
                       auto backend, NCCL's (NCCL_SOCKET_IFNAME)
  --launch-agent CMD   how mpirun starts its daemons on other hosts [LAUNCH_AGENT]
                       (--mca plm_rsh_agent CMD, e.g. "ssh -p 2222")
  --mpirun-arg ARG     one more mpirun argument, passed as one word (repeat the flag for more);
                       MPIRUN_ARGS adds more, split at spaces
  --backend NAME       auto, nccl or mpi [BACKEND, default auto]
  --out DIR            report directory [REPORT_DIR, default reports/ccl-sweep-<date>-<time>]
  --job-timeout S      end each mpirun job after S seconds (mpirun --timeout) [JOB_TIMEOUT];
                       default 300 + the run's cases x 3 x bench_ccl's --timeout (300 unless
                       given after --), counted by bench_ccl --dry-run; 0: no limit. A launcher
                       waiting on a lost node's daemon then ends too.
  -- ARGS              passed to bench_ccl as they are (e.g. -- -c 0 -n 50)

Each run writes OUT/<op>_np<N>.csv, and its output and errors to OUT/<op>_np<N>.txt.
Exit status: 0 when every run passed, 1 when any failed, 2 on bad arguments.
NCCL_* variables in the environment are exported to every rank. No master address or port is
needed: MPI bootstraps NCCL (rank 0 broadcasts the ncclUniqueId).

bench_ccl is, in this order: $BENCH_CCL; the installed one (<prefix>/bin/bench_ccl beside
<prefix>/share/opbench/scripts/run_script.sh); build/collectives/bench_ccl in the source tree
holding this script; bench_ccl on PATH. MPIRUN names mpirun (default mpirun).
EOF
}

die() { echo "error: run_script.sh: $*" >&2; exit 2; }

# This script's own folder, absolute, to find bench_ccl beside it; the working directory stays
# the caller's, so every path the user gives means what it means in their shell.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

np_list=${NP_LIST:-2}
ops=${OPS:-"all_reduce all_gather reduce_scatter all_to_all broadcast reduce send_recv"}
dtypes=${DTYPES:-fp32}
min_bytes=${MIN_BYTES:-8}
max_bytes=${MAX_BYTES:-128M}
factor=${STEP_FACTOR:-2}
hosts=${HOSTS:-}
hostfile=${HOSTFILE:-}
ppn=${RANKS_PER_NODE:-}
iface=${NET_IFACE:-}
launch_agent=${LAUNCH_AGENT:-}
backend=${BACKEND:-auto}
out=${REPORT_DIR:-reports/ccl-sweep-$(date +%Y%m%d-%H%M%S)}
mpirun_bin=${MPIRUN:-mpirun}
mpirun_args=()
job_timeout=${JOB_TIMEOUT:-}
extra=()

# Flags that take a value: fail with a message, not "unbound variable", when it is missing.
value() { [ $# -ge 2 ] || die "$1 needs a value (see --help)"; }
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    --np|--ops|--dtypes|-b|-e|-f|--hosts|--hostfile|--ranks-per-node|--iface|--launch-agent|--mpirun-arg|\
    --backend|--out|--job-timeout)
      value "$@" ;;&  # then on to the flag's own case below
    --np) np_list=$2; shift 2 ;;
    --ops) ops=$2; shift 2 ;;
    --dtypes) dtypes=$2; shift 2 ;;
    -b) min_bytes=$2; shift 2 ;;
    -e) max_bytes=$2; shift 2 ;;
    -f) factor=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --hostfile) hostfile=$2; shift 2 ;;
    --ranks-per-node) ppn=$2; shift 2 ;;
    --iface) iface=$2; shift 2 ;;
    --launch-agent) launch_agent=$2; shift 2 ;;
    --mpirun-arg) mpirun_args+=("$2"); shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --job-timeout) job_timeout=$2; shift 2 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

# bench_ccl: $BENCH_CCL, else the one beside this script, else bench_ccl on PATH. An installed
# script sits in <prefix>/share/opbench/scripts and its bench_ccl in <prefix>/bin; a source
# tree's script in scripts/ and its bench_ccl in build/collectives/.
if [[ $here == */share/opbench/scripts ]]; then
  beside=$(cd "$here/../../.." && pwd)/bin/bench_ccl
else
  beside=$(dirname "$here")/build/collectives/bench_ccl
fi
if [ -n "${BENCH_CCL:-}" ]; then
  bench=$BENCH_CCL
  [ -x "$bench" ] || die "BENCH_CCL=$bench is not an executable file"
  [[ $bench == /* ]] || bench=$PWD/$bench  # the same file for mpirun's daemons, whatever their cwd
elif [ -x "$beside" ]; then
  bench=$beside
else
  bench=$(command -v bench_ccl || true)
  [ -n "$bench" ] || die "bench_ccl not found: looked at \$BENCH_CCL (unset), $beside and bench_ccl on PATH;" \
    "build it (scripts/build.sh) or set BENCH_CCL"
fi
command -v "$mpirun_bin" >/dev/null || die "$mpirun_bin not found (set MPIRUN)"
[ -z "$hostfile" ] || [ -r "$hostfile" ] || die "hostfile $hostfile cannot be read (from $PWD)"

launch=("$mpirun_bin")
[ "$(id -u)" -eq 0 ] && launch+=(--allow-run-as-root)
if [ -n "$hostfile" ]; then
  launch+=(--hostfile "$hostfile")
elif [ -n "$hosts" ]; then
  host_slots=""
  for h in ${hosts//,/ }; do host_slots+="${host_slots:+,}$h:${ppn:-1}"; done
  launch+=(--host "$host_slots")
else
  launch+=(--oversubscribe)  # one host: allow more ranks than cores (the mpi backend in CI)
fi
[ -n "$ppn" ] && launch+=(--map-by "ppr:$ppn:node")
if [ -n "$iface" ]; then
  # btl: the ranks' messages; oob: mpirun's own wire-up between the nodes' daemons.
  launch+=(--mca btl_tcp_if_include "$iface" --mca oob_tcp_if_include "$iface")
  # NCCL's sockets only where NCCL may run: the mpi backend never reads it.
  [ "$backend" = mpi ] || export NCCL_SOCKET_IFNAME=$iface
fi
[ -n "$launch_agent" ] && launch+=(--mca plm_rsh_agent "$launch_agent")
for var in $(compgen -e | grep '^NCCL_' || true); do launch+=(-x "$var"); done
# MPIRUN_ARGS is split at spaces (it always was); --mpirun-arg keeps each value whole.
# shellcheck disable=SC2206
launch+=(${MPIRUN_ARGS:-})
launch+=(${mpirun_args[@]+"${mpirun_args[@]}"})

# The most useful line of a failed run's log: the last `error:` line (bench_ccl's own message,
# which mpirun's banner follows), else the last non-empty line.
reason() {
  local line
  line=$(grep '^error:' "$1" | tail -n 1 || true)
  [ -n "$line" ] || line=$(grep -v '^[[:space:]-]*$' "$1" | tail -n 1 || true)
  echo "${line:-no output}"
}

[[ -z $job_timeout || $job_timeout =~ ^[0-9]+$ ]] || die "--job-timeout: '$job_timeout' is not a number of seconds"
# bench_ccl's own --timeout (per phase of a case) when given after --, else its default.
case_timeout=300
for ((i = 0; i < ${#extra[@]}; i++)); do
  [ "${extra[i]}" = --timeout ] && [ $((i + 1)) -lt ${#extra[@]} ] && case_timeout=${extra[i + 1]%.*}
done
[[ $case_timeout =~ ^[0-9]+$ ]] || die "-- --timeout: '$case_timeout' is not a number of seconds (bench_ccl's per-phase limit)"
# The job's limit: what it is told, or derived from how many cases the run holds.
job_limit() {  # NP OP
  if [ -n "$job_timeout" ]; then echo "$job_timeout"; return; fi
  local cases
  cases=$("$bench" --dry-run --world-size "$1" --op "$2" -b "$min_bytes" -e "$max_bytes" -f "$factor" \
    -d "$dtypes" ${extra[@]+"${extra[@]}"} 2>/dev/null | awk '/ cases on / {print $1}')
  echo $((300 + ${cases:-100} * 3 * ${case_timeout:-300}))
}

mkdir -p "$out" || die "--out $out: cannot create the directory"

# The logs are this script's: written only where no file is, or over one an earlier run of it
# wrote (the folder's .opbench-manifest lists it, as the binaries list theirs); a file of the
# user's by a log's name is refused before anything runs, and left as it is.
manifest="$out/.opbench-manifest"
for np in $np_list; do
  for op in $ops; do
    name="${op}_np${np}.txt"
    if [ -e "$out/$name" ] && ! grep -qF "\"file\": \"$name\"" "$manifest" 2>/dev/null; then
      die "--out $out: $name exists and no opbench run wrote it: left as it is; name another --out"
    fi
  done
done

failed=0
runs=0
for np in $np_list; do
  for op in $ops; do
    csv="$out/${op}_np${np}.csv"
    log="$out/${op}_np${np}.txt"
    grep -qF "\"file\": \"${op}_np${np}.txt\"" "$manifest" 2>/dev/null ||
      printf '{"file": "%s", "binary": "run_script.sh"}\n' "${op}_np${np}.txt" >> "$manifest"
    runs=$((runs + 1))
    limit=$(job_limit "$np" "$op")
    timeout_args=()
    [ "$limit" -gt 0 ] && timeout_args=(--timeout "$limit")
    echo "run_script.sh: $op on $np ranks -> $csv (job limit ${limit:-none} s)" >&2
    rc=0
    "${launch[@]}" ${timeout_args[@]+"${timeout_args[@]}"} -np "$np" "$bench" --backend "$backend" --op "$op" \
      -b "$min_bytes" -e "$max_bytes" -f "$factor" -d "$dtypes" --report-csv-path "$csv" \
      --report-dir-path "$out/raw/${op}_np${np}" --quiet ${extra[@]+"${extra[@]}"} > "$log" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ]; then
      echo "run_script.sh: $op on $np ranks failed (exit $rc; log $log): $(reason "$log")" >&2
      failed=$((failed + 1))
    fi
  done
done

echo "run_script.sh: $((runs - failed)) of $runs runs passed; reports in $out:" >&2
shopt -s nullglob
reports=("$out"/*.csv)
if [ ${#reports[@]} -gt 0 ]; then printf '%s\n' "${reports[@]}" >&2; else echo "  (none)" >&2; fi
# A failed run is a result, not bad input: 1, as bench_ccl itself exits for a failed case.
[ "$failed" -eq 0 ] || exit 1
