#!/usr/bin/env python3
"""An interrupt ends a case at its next run, not after the case (issue 30 item 8).

bench_gemm sweeps a small case (8x2048x2048: its 1000 samples take a second or two) and then one
bound to take over 30 s (--min-samples 1000 of a 2048^3 GEMM, about 0.1 s each on 2 cores): the long case must say so as soon as its first run ends; SIGINT sent then must end
the run within a few seconds (one run is well under a second), with exit 130, the small case's
row kept whole, no row for the case cut short, and stderr saying that case is not recorded.

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


def main() -> int:
    bench, out = sys.argv[1], sys.argv[2]
    shutil.rmtree(out, ignore_errors=True)
    cmd = [bench, "--backend", "cpu", "--m", "8,2048", "--n", "2048", "--k", "2048",
           "--min-samples", "1000", "--max-samples", "1000", "--max-time", "1000",
           "--max-noise", "0.0001", "--report-dir-path", out]
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
    problems = []
    if not any(NOTICE in line and LONG in line for line in lines):
        problems.append(f"no '{NOTICE}' note for the long case: {''.join(lines)[-500:]}")
    proc.send_signal(signal.SIGINT)
    sent = time.time()
    try:
        rest = proc.communicate(timeout=30)[1]
    except subprocess.TimeoutExpired:
        proc.kill()
        rest = proc.communicate()[1]
        problems.append("still running 30 s after SIGINT")
    took = time.time() - sent
    stderr = "".join(lines) + rest
    print(f"exit {proc.returncode} {took:.1f} s after SIGINT")
    if proc.returncode != 130:
        problems.append(f"exit {proc.returncode}, expected 130")
    if took > 5:
        problems.append(f"ended {took:.1f} s after SIGINT: the case ran on instead of stopping at its next run")
    if "interrupted during" not in stderr or "not recorded" not in stderr:
        problems.append(f"stderr does not say the case cut short is not recorded: {stderr[-400:]}")
    with open(os.path.join(out, "gemm_sweep.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    print(f"{len(rows)} row(s): " + ", ".join(f"m={r['m']} {r['status']}" for r in rows))
    if [r["m"] for r in rows] != ["8"] or rows[0]["status"] != "ok":
        problems.append("expected exactly the small case's row, ok")
    return verdict(problems, None, "ok")


if __name__ == "__main__":
    sys.exit(main())
