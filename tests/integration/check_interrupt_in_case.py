#!/usr/bin/env python3
"""An interrupt ends a case at its next run, not after the case (issue 30 item 8), and a run
interrupted in its first case leaves reports that hold at least their header (issue 42 item 4).

bench_gemm sweeps a small case (8x2048x2048: its 1000 samples take a second or two) and then one
bound to take over 30 s (--min-samples 1000 of a 2048^3 GEMM, about 0.1 s each on 2 cores): the
long case must say so as soon as its first run ends; SIGINT sent then must end the run within a
few seconds (one run is well under a second), with exit 130, the small case's row kept whole, no
row for the case cut short, and stderr saying that case is not recorded.

Then the long case alone, in csv, jsonl and prom, interrupted the same way in the run's first
case: gemm_sweep.csv holds exactly bench_gemm's header (no 0-byte file, which compare_reports.py
and spreadsheets refuse), no .jsonl or .prom file exists (they are made with their first row),
the closing lines list the CSV with 0 rows and nothing else, and compare_reports.py reads it: the
first run's case is missing from it (exit 1).

Usage: check_interrupt_in_case.py BENCH_GEMM OUT_DIR
"""
import csv
import os
import shutil
import signal
import subprocess
import sys
import time
from report_check import verdict

NOTICE = "will take at least"
LONG = " 2048x2048x2048 "  # the long case's label; on a loaded machine the small one may announce itself too
HERE = os.path.dirname(os.path.abspath(__file__))
COMPARE = os.path.join(HERE, "..", "..", "scripts", "compare_reports.py")


def interrupt_long_case(bench, m, out, extra, problems):
    """Runs bench_gemm over --m `m` and sends SIGINT once the long case announces itself; checks
    the run ends at once with exit 130. Returns its stderr."""
    cmd = [bench, "--backend", "cpu", "--m", m, "--n", "2048", "--k", "2048",
           "--min-samples", "1000", "--max-samples", "1000", "--max-time", "1000",
           "--max-noise", "0.0001", "--report-dir-path", out] + extra
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    deadline = time.time() + 120
    while time.time() < deadline:  # read progress until the long case announces itself
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if NOTICE in line and LONG in line:
            break
    if not any(NOTICE in line and LONG in line for line in lines):
        problems.append(f"--m {m}: no '{NOTICE}' note for the long case: {''.join(lines)[-500:]}")
    proc.send_signal(signal.SIGINT)
    sent = time.time()
    try:
        rest = proc.communicate(timeout=30)[1]
    except subprocess.TimeoutExpired:
        proc.kill()
        rest = proc.communicate()[1]
        problems.append(f"--m {m}: still running 30 s after SIGINT")
    took = time.time() - sent
    stderr = "".join(lines) + rest
    print(f"--m {m}: exit {proc.returncode} {took:.1f} s after SIGINT")
    if proc.returncode != 130:
        problems.append(f"--m {m}: exit {proc.returncode}, expected 130")
    if took > 5:
        problems.append(f"--m {m}: ended {took:.1f} s after SIGINT: the case ran on instead of stopping at its next run")
    if "interrupted during" not in stderr or "not recorded" not in stderr:
        problems.append(f"--m {m}: stderr does not say the case cut short is not recorded: {stderr[-400:]}")
    return stderr


def main() -> int:
    bench, out = sys.argv[1], sys.argv[2]
    shutil.rmtree(out, ignore_errors=True)
    problems = []
    first = os.path.join(out, "small_then_long")
    interrupt_long_case(bench, "8,2048", first, [], problems)
    with open(os.path.join(first, "gemm_sweep.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    print(f"{len(rows)} row(s): " + ", ".join(f"m={r['m']} {r['status']}" for r in rows))
    if [r["m"] for r in rows] != ["8"] or rows[0]["status"] != "ok":
        problems.append("expected exactly the small case's row, ok")

    alone = os.path.join(out, "long_alone")
    stderr = interrupt_long_case(bench, "2048", alone, ["--format", "csv,jsonl,prom"], problems)
    report = os.path.join(alone, "gemm_sweep")
    with open(report + ".csv", newline="") as f:
        lines = f.read().splitlines()
    print(f"gemm_sweep.csv: {len(lines)} line(s): {lines[0][:60] if lines else ''}...")
    with open(os.path.join(first, "gemm_sweep.csv"), newline="") as f:
        header = f.readline().rstrip("\r\n")  # bench_gemm's columns, from the first run
    if lines != [header]:
        problems.append(f"gemm_sweep.csv holds {lines[:3]}, expected only the header {header[:60]}...")
    for ext in (".jsonl", ".prom"):
        if os.path.exists(report + ext):
            problems.append(f"gemm_sweep{ext} exists ({os.path.getsize(report + ext)} bytes) with no row written")
    listed = [line.strip() for line in stderr.splitlines() if line.startswith("  " + alone)]
    if listed != [f"{report}.csv (0 rows)"]:
        problems.append(f"the closing lines list {listed}, expected only the CSV with 0 rows")
    cmp = subprocess.run([sys.executable, COMPARE, os.path.join(first, "gemm_sweep.csv"), report + ".csv"],
                         capture_output=True, text=True)
    print(f"compare_reports.py first run vs the interrupted one: exit {cmp.returncode}")
    if cmp.returncode != 1 or "| missing |" not in cmp.stdout:
        problems.append(f"compare_reports.py: exit {cmp.returncode} (expected 1, the case missing): "
                        f"{cmp.stdout[-300:]} {cmp.stderr[-300:]}")
    return verdict(problems, None, "ok")


if __name__ == "__main__":
    sys.exit(main())
