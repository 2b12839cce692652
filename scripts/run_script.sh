#!/usr/bin/env bash
# Collective sweeps through mpirun: every op x world size, one CSV per op and world size.
#
#   scripts/run_script.sh                                   # defaults below, on this host
#   scripts/run_script.sh --np "8 16" --hostfile hosts --ranks-per-node 8 --iface eth0 --backend nccl
#   NP_LIST="2 4" OPS="all_reduce all_gather" MAX_BYTES=1G scripts/run_script.sh
#
# Flags (or the environment variable in brackets):
#   --np LIST            world sizes to run [NP_LIST, default "2"]
#   --ops LIST           collectives [OPS, default: all seven]
#   --dtypes LIST        comma-separated dtypes [DTYPES, default fp32]
#   -b / -e / -f         smallest size, largest size, factor [MIN_BYTES 8, MAX_BYTES 128M, STEP_FACTOR 2]
#   --hosts H1,H2        hosts to run on [HOSTS] (mpirun --host, with --ranks-per-node slots each)
#   --hostfile FILE      an mpirun hostfile [HOSTFILE]
#   --ranks-per-node N   ranks per node [RANKS_PER_NODE] (mpirun --map-by ppr:N:node)
#   --iface NAME         network interface for MPI and NCCL [NET_IFACE] (btl_tcp_if_include, NCCL_SOCKET_IFNAME)
#   --backend NAME       auto, nccl or mpi [BACKEND, default auto]
#   --out DIR            report directory [REPORT_DIR, default reports/ccl-sweep-<date>-<time>]
#   -- ARGS              passed to bench_ccl as they are (e.g. -- -c 0 -n 50)
# NCCL_* variables in the environment are exported to every rank. No master address or port is
# needed: MPI bootstraps NCCL (rank 0 broadcasts the ncclUniqueId). BENCH_CCL and MPIRUN name
# the binaries (default build/collectives/bench_ccl and mpirun); MPIRUN_ARGS adds mpirun flags.
set -euo pipefail
cd "$(dirname "$0")/.."

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
backend=${BACKEND:-auto}
out=${REPORT_DIR:-reports/ccl-sweep-$(date +%Y%m%d-%H%M%S)}
bench=${BENCH_CCL:-build/collectives/bench_ccl}
mpirun_bin=${MPIRUN:-mpirun}
extra=()

die() { echo "error: run_script.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
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
    --backend) backend=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -x "$bench" ] || die "$bench not found: build first (scripts/build.sh) or set BENCH_CCL"
command -v "$mpirun_bin" >/dev/null || die "$mpirun_bin not found (set MPIRUN)"
[ -z "$hostfile" ] || [ -r "$hostfile" ] || die "hostfile $hostfile cannot be read"

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
  launch+=(--mca btl_tcp_if_include "$iface")
  export NCCL_SOCKET_IFNAME=$iface
fi
for var in $(compgen -e | grep '^NCCL_' || true); do launch+=(-x "$var"); done
# shellcheck disable=SC2206
launch+=(${MPIRUN_ARGS:-})

mkdir -p "$out"
status=0
for np in $np_list; do
  for op in $ops; do
    csv="$out/${op}_np${np}.csv"
    echo "run_script.sh: $op on $np ranks -> $csv" >&2
    if ! "${launch[@]}" -np "$np" "$bench" --backend "$backend" --op "$op" -b "$min_bytes" -e "$max_bytes" \
         -f "$factor" -d "$dtypes" --report-csv-path "$csv" --report-dir-path "$out/raw/${op}_np${np}" \
         --quiet "${extra[@]}" > "$out/${op}_np${np}.txt"; then
      echo "run_script.sh: $op on $np ranks failed (see $out/${op}_np${np}.txt)" >&2
      status=1
    fi
  done
done
echo "run_script.sh: reports in $out:" >&2
ls -1 "$out"/*.csv >&2
exit $status
