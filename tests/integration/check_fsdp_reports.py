#!/usr/bin/env python3
"""Runs bench_fsdp under mpirun and reads its per-collective CSVs back: row counts, the per-rank
counts the plan predicts (given here, worked out by hand in the test's CMake), and bench_ccl's
size and bandwidth arithmetic on every row (check_ccl_reports.check_rows).

Usage: check_fsdp_reports.py BENCH OUT_DIR --np N --mpiexec PATH --rows FILE:N ... --count UNIT:OP:COUNT ... -- ARGS
"""
import argparse
import csv
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_ccl_reports import check_rows  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("bench")
    parser.add_argument("out_dir")
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--mpiexec", default="mpirun")
    parser.add_argument("--rows", action="append", default=[], help="FILE:N")
    parser.add_argument("--count", action="append", default=[], help="UNIT:OP:PER_RANK_COUNT")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    a = parser.parse_args(argv[:split])
    a.requested_size = 0
    shutil.rmtree(a.out_dir, ignore_errors=True)
    cmd = [a.mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", str(a.np), a.bench,
           "--report-dir-path", a.out_dir, "--quiet"] + argv[split + 1:]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    problems = []
    if proc.returncode != 0:
        problems.append(f"exit code {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}")
    if "Estimated communication per training step" not in proc.stdout:
        problems.append("no per-step estimate on stdout")
    counts = {}
    for spec in a.rows:
        name, n = spec.rsplit(":", 1)
        path = os.path.join(a.out_dir, name)
        if not os.path.exists(path):
            problems.append(f"{path} was not written")
            continue
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        if len(rows) != int(n):
            problems.append(f"{name}: {len(rows)} rows, expected {n}")
        for r in rows:
            if r["status"] != "ok" or r["wrong"] != "0":
                problems.append(f"{name}: {r['unit']} {r['phase']}: status {r['status']}, wrong {r['wrong']}: {r['note']}")
            if not r["calls_per_step"]:
                problems.append(f"{name}: {r['unit']} has no calls_per_step")
            counts[(r["unit"], r["op"])] = int(r["count"])
        problems += check_rows(rows, a)
    for spec in a.count:
        unit, op, n = spec.split(":")
        if counts.get((unit, op)) != int(n):
            problems.append(f"{unit} {op}: per-rank count {counts.get((unit, op))}, expected {n}")
    if problems:
        print("command:", " ".join(cmd))
        print("\n".join(problems))
        return 1
    print("ok:", " ".join(a.rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
