#!/usr/bin/env python3
"""Kills a real run mid-sweep and checks that nothing finished is lost:
the process exits with 128 + the signal, the CSV holds only whole rows (every row has every
column and status ok), and a second run with --resume adds exactly the missing cases, and every
output of the continued run covers the whole run: the JSON lines and the .prom series, the
summary's count and the closing lines on stderr.

Usage: check_kill_resume.py SIGNAL EXPECTED_ROWS OUT_DIR CSV_NAME -- COMMAND...
"""
import csv
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from report_check import verdict


def rows_of(path):
    with open(path, newline="") as f:
        header = next(csv.reader(f), None)
        f.seek(0)
        return header, list(csv.DictReader(f))


def main() -> int:
    sig = getattr(signal, sys.argv[1])
    expected, out, name = int(sys.argv[2]), sys.argv[3], sys.argv[4]
    cmd = sys.argv[sys.argv.index("--") + 1:] + ["--report-dir-path", out, "--format", "csv,jsonl,prom",
                                                 "--summary-path", os.path.join(out, "summary.md")]
    shutil.rmtree(out, ignore_errors=True)
    path = os.path.join(out, name)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:  # wait for the first finished row, then strike
        if os.path.exists(path) and len(rows_of(path)[1]) >= 1:
            break
        time.sleep(0.05)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    problems = []
    if proc.returncode != 128 + sig:
        problems.append(f"exit code {proc.returncode}, expected {128 + sig}: {err}")
    header, rows = rows_of(path)
    if not (0 < len(rows) < expected):
        problems.append(f"{len(rows)} rows after the signal: expected some, not all {expected}")
    if any(None in r or len(r) != len(header) or r["status"] != "ok" for r in rows):
        problems.append("a row is cut or not ok")
    resumed = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, timeout=300)
    header, rows = rows_of(path)
    keys = {tuple(v for k, v in r.items() if k not in ("time_us", "median_us", "min_us", "max_us", "stddev_us",
                                                         "p99_us", "cv", "samples", "tflops", "mem_bw_gbps",
                                                         "pct_peak_flops", "pct_peak_bw", "max_abs_err", "note",
                                                         "check_residual", "working_set_bytes")) for r in rows}
    if resumed.returncode != 0:
        problems.append(f"--resume exit {resumed.returncode}: {resumed.stderr}")
    if len(rows) != expected or len(keys) != expected:
        problems.append(f"after --resume: {len(rows)} rows, {len(keys)} distinct cases, expected {expected}")
    base = path[:-len(".csv")]
    with open(base + ".jsonl") as f:
        jsonl_rows = sum(1 for line in f if line.strip())
    if jsonl_rows != expected:
        problems.append(f"after --resume: {jsonl_rows} JSON lines, expected {expected}")
    with open(base + ".prom") as f:
        series = [line for line in f if re.match(r"opbench_\w+_time_seconds\{.*stat=\"mean\"", line)]
    if len(series) != expected:
        problems.append(f"after --resume: the .prom has {len(series)} time_seconds{{stat=\"mean\"}} series, expected {expected}")
    with open(os.path.join(out, "summary.md")) as f:
        summary = f.read()
    if f"{expected} of {expected} cases:" not in summary:
        problems.append(f"after --resume: summary.md does not count {expected} of {expected} cases")
    if f"({expected} rows)" not in resumed.stderr or "from the run continued (--resume)" not in resumed.stderr:
        problems.append(f"after --resume: stderr does not list {expected} rows and the continued ones: {resumed.stderr}")
    if f"of {expected} cases; every finished case is in the reports" not in err:
        problems.append(f"the interrupted run does not say how many of {expected} cases finished: {err}")
    return verdict(problems, None, f"ok: stopped by {sys.argv[1]} with whole rows, --resume completed {expected} cases")


if __name__ == "__main__":
    sys.exit(main())
