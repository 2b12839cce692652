# Sourced by the bench_ccl peer scripts (ccl_vs_*.sh): both programs under mpirun, one after the
# other, ROUNDS times (so both see the same machine state), then the table of their times and
# ratio (ratio_table.py). Run from the repository's root.
#   compare_rounds RANKS ROUNDS PEER_LABEL OURS_LABEL PEER_FORMAT BENCH_CCL_FLAGS... -- PEER_COMMAND...
# With the array `reference` (a command) and `reference_label` set, each round also runs that
# command after the peer, and the table shows its median beside (context, not compared).
compare_rounds() {
  local ranks=$1 rounds=$2 peer_label=$3 ours_label=$4 format=$5
  shift 5
  local ours=() launch=(mpirun -np "$ranks" --oversubscribe)
  while [ "$1" != -- ]; do ours+=("$1"); shift; done
  shift
  [ "$(id -u)" -eq 0 ] && launch+=(--allow-run-as-root)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  for r in $(seq "$rounds"); do
    "${launch[@]}" build/collectives/bench_ccl "${ours[@]}" --placement out_of_place \
      --report-csv-path "$tmp/ours_$r.csv" --report-dir-path "$tmp/raw_$r" --quiet \
      >/dev/null 2>"$tmp/ours_$r.log" ||
      { echo "error: bench_ccl failed in round $r: $(grep -m1 '^error' "$tmp/ours_$r.log")" >&2; exit 1; }
    "${launch[@]}" "$@" > "$tmp/peer_$r.txt"
    if [ -n "${reference_label:-}" ]; then "${launch[@]}" "${reference[@]}" > "$tmp/ref_$r.txt"; fi
  done
  /usr/bin/python3 bench/peers/ratio_table.py "$tmp" "$rounds" "$peer_label" "$ours_label" "$format" \
    ${reference_label:+"$reference_label"}
}
