#!/usr/bin/env python3
"""Runs bench_step --dry-run into DIR and checks the memory columns of the step.csv it writes.

Usage: check_step_memory.py BENCH_STEP DIR [--rows N] [--fits true|false|empty] -- ARGS...

For every row of DIR/step.csv (N rows): the seven memory columns are there; mem_weights_gib,
mem_grads_gib, mem_optimizer_gib, mem_activations_gib and mem_peak_gib are positive; the peak is
at least weights + optimizer state + the larger of gradients and activations (the optimizer step
holds the first three, the backward's start the activations beside the first two);
fits is `true` when mem_peak_gib <= mem_capacity_gib, `false` when above, empty (and the capacity
empty) when no capacity is known, and equals --fits; the times are empty and the note says it is a
dry run. The console must print each configuration's "memory per rank" line, and "DOES NOT FIT"
for each that does not. Exit 0 when everything holds, 1 with one line per problem.
"""
import csv
import os
import shutil
import subprocess
import sys

from check_step_reports import parse_step_check
from report_check import verdict

COLUMNS = ["mem_weights_gib", "mem_grads_gib", "mem_optimizer_gib", "mem_activations_gib",
           "mem_peak_gib", "mem_capacity_gib", "fits"]


def main() -> int:
    a, args = parse_step_check(
        sys.argv[1:], lambda ap: ap.add_argument("--fits", choices=["true", "false", "empty"], required=True))
    shutil.rmtree(a.dir, ignore_errors=True)
    run = subprocess.run([a.bench_step, *args, "--dry-run", "--report-dir-path", a.dir],
                         capture_output=True, text=True)
    problems = []
    if run.returncode != 0:
        print(run.stdout + run.stderr)
        print(f"bench_step exited {run.returncode}")
        return 1
    with open(os.path.join(a.dir, "step.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    if len(rows) != a.rows:
        problems.append(f"{len(rows)} rows, expected {a.rows}")
    for i, r in enumerate(rows, 2):
        where = f"step.csv line {i}"
        missing = [c for c in COLUMNS if c not in r]
        if missing:
            problems.append(f"{where}: no column {', '.join(missing)}")
            continue
        v = {c: float(r[c]) for c in COLUMNS[:5]}
        if not all(x > 0 for x in v.values()):
            problems.append(f"{where}: a memory column is not positive: {v}")
        floor = (v["mem_weights_gib"] + v["mem_optimizer_gib"]
                 + max(v["mem_grads_gib"], v["mem_activations_gib"]))
        if v["mem_peak_gib"] < floor * (1 - 1e-9):
            problems.append(f"{where}: mem_peak_gib {v['mem_peak_gib']} below weights + optimizer "
                            f"+ max(grads, activations) = {floor}")
        cap = r["mem_capacity_gib"]
        expect = "empty" if cap == "" else ("true" if v["mem_peak_gib"] <= float(cap) else "false")
        got = r["fits"] or "empty"
        if got != expect or got != a.fits:
            problems.append(f"{where}: fits {got}, capacity {cap!r} and peak say {expect}, "
                            f"expected {a.fits}")
        if r["step_time_ms"] != "" or r["note"] != "dry run: no times":
            problems.append(f"{where}: a dry run's row has step_time_ms {r['step_time_ms']!r}, "
                            f"note {r['note']!r}")
    lines = run.stdout.count("memory per rank (stage ")
    if lines != a.rows:
        problems.append(f"the console printed {lines} 'memory per rank' lines, expected {a.rows}")
    unfit = run.stdout.count("DOES NOT FIT")
    if unfit != (a.rows if a.fits == "false" else 0):
        problems.append(f"the console said DOES NOT FIT {unfit} times")
    return verdict(problems, None, f"{len(rows)} configurations, memory columns checked: ok")


if __name__ == "__main__":
    sys.exit(main())
