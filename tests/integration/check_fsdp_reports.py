#!/usr/bin/env python3
"""Runs bench_fsdp under mpirun and reads its per-collective CSVs back: row counts, the per-rank
counts the plan predicts (given here, worked out by hand in the test's CMake), and bench_ccl's
size and bandwidth arithmetic on every row (check_ccl_reports.check_rows).

Usage: check_fsdp_reports.py BENCH OUT_DIR --np N --mpiexec PATH --rows FILE:N ... --count UNIT:OP:COUNT ...
                             [--placement OP:PLACEMENT ...] -- ARGS
"""
import os
import sys

from check_ccl_reports import check_rows
from report_check import exit_problem, expected_files, check_parser, parse, read_csv, run, verdict


def main() -> int:
    parser = check_parser()
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--mpiexec", default="mpirun")
    parser.add_argument("--rows", action="append", default=[], help="FILE:N")
    parser.add_argument("--count", action="append", default=[], help="UNIT:OP:PER_RANK_COUNT")
    parser.add_argument("--placement", action="append", default=[],
                        help="OP:PLACEMENT that every row of OP must have")
    a, extra = parse(parser)
    a.requested_size = 0
    cmd = [a.mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", str(a.np), a.bench,
           "--report-dir-path", a.out_dir, "--quiet"] + extra
    proc = run(cmd, a.out_dir)
    problems = exit_problem(proc, tail=20000)
    if "Estimated communication per training step" not in proc.stdout:
        problems.append("no per-step estimate on stdout")
    counts = {}
    placements = dict(spec.split(":") for spec in a.placement)
    for path, n, _ in expected_files(a.out_dir, a.rows, problems):
        rows = read_csv(path)
        name = os.path.basename(path)
        if len(rows) != n:
            problems.append(f"{name}: {len(rows)} rows, expected {n}")
        for r in rows:
            if r["status"] != "ok" or r["wrong"] != "0":
                problems.append(f"{name}: {r['unit']} {r['phase']}: status {r['status']}, wrong {r['wrong']}: {r['note']}")
            if not r["calls_per_step"]:
                problems.append(f"{name}: {r['unit']} has no calls_per_step")
            counts[(r["unit"], r["op"])] = int(r["count"])
            if r["op"] in placements and r["placement"] != placements[r["op"]]:
                problems.append(f"{name}: {r['unit']} {r['phase']} {r['op']}: placement "
                                f"{r['placement']}, expected {placements[r['op']]}")
        problems += check_rows(rows, a)
    for spec in a.count:
        unit, op, n = spec.split(":")
        if counts.get((unit, op)) != int(n):
            problems.append(f"{unit} {op}: per-rank count {counts.get((unit, op))}, expected {n}")
    return verdict(problems, cmd, "ok: " + " ".join(a.rows))


if __name__ == "__main__":
    sys.exit(main())
